-- harvestflow harvest database, version 013: credentials for crawling behind a login.
-- Heritrix's credential store: HTTP Basic/Digest (a realm on a host) and form login (a login
-- page whose form is filled and posted; the session cookies are kept for the host). A
-- credential applies to the hosts of `domain` (a registrable domain or one host), in every
-- harvest definition (harvest_id NULL) or in one. The username and password are kept only as a
-- Fernet token (`secret`, harvestflow/credentials.py); the key is never in the database.
CREATE TABLE credentials (
    credential_id   serial PRIMARY KEY,
    domain          text NOT NULL,
    harvest_id      integer REFERENCES harvestdefinitions(harvest_id) ON DELETE CASCADE,
    secret_id       text UNIQUE,                -- the crawl feed's secretId naming this credential
    kind            text NOT NULL CHECK (kind IN ('basic', 'digest', 'form')),
    realm           text,                       -- basic/digest: only this realm (NULL: any)
    login_url       text,                       -- form: the page holding the login form
    logout_url      text,                       -- never fetched while the credential is in use
    username_field  text,                       -- form: input names (NULL: found in the form)
    password_field  text,
    secret          bytea NOT NULL,             -- Fernet token of {"username", "password"}
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'form' OR login_url IS NOT NULL)
);
CREATE UNIQUE INDEX credentials_scope ON credentials (domain, COALESCE(harvest_id, 0));

-- the crawl feed's login fields, as the curators' tool sent them
ALTER TABLE selection_records ADD COLUMN login_page_url text;
ALTER TABLE selection_records ADD COLUMN logout_url text;
ALTER TABLE selection_records ADD COLUMN secret_id text;
