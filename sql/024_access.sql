-- harvestflow harvest database, version 024: access rules and guided tours.
--
-- Access rules (legal deposit): a SURT prefix, allow / block / exclude, an optional embargo
-- (the rule applies only to captures younger than embargo_days) and a reason. Versioned: a row
-- is never updated except to close it; a change is the old row closed (removed_by/at) and a
-- new row (created_by/at). The rules in force are the open rows; every state the rules ever
-- had can be read back from the timestamps. access/rules.py owns this table; pywb's ACL file
-- and the full-text search's filters are generated from it.
CREATE TABLE access_rules (
    rule_id       bigserial PRIMARY KEY,
    surt          text NOT NULL,                 -- SURT prefix ('org,example)/private'); '' all
    policy        text NOT NULL CHECK (policy IN ('allow', 'block', 'exclude')),
    embargo_days  integer CHECK (embargo_days IS NULL OR embargo_days > 0),
    reason        text NOT NULL DEFAULT '',
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    removed_by    text,
    removed_at    timestamptz,
    replaces      bigint REFERENCES access_rules(rule_id),
    CHECK (policy <> 'allow' OR embargo_days IS NULL),
    CHECK ((removed_by IS NULL) = (removed_at IS NULL))
);
-- one rule in force per prefix
CREATE UNIQUE INDEX access_rules_open ON access_rules (surt) WHERE removed_at IS NULL;

-- Guided tours: curated, described lists of entry points into the archive, shown on the access
-- home page; each site is a URL with the capture chosen for it (a 14-digit timestamp or a
-- prefix of one: pywb replays the nearest capture) and the collection it is replayed from.
CREATE TABLE access_tours (
    tour_id      serial PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9-]*$'),
    title        text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE access_tour_sites (
    tour_id      integer NOT NULL REFERENCES access_tours(tour_id) ON DELETE CASCADE,
    position     integer NOT NULL,
    url          text NOT NULL,
    capture      text NOT NULL CHECK (capture ~ '^[0-9]{4,14}$'),
    collection   text NOT NULL DEFAULT 'all',
    title        text NOT NULL DEFAULT '',
    description  text NOT NULL DEFAULT '',
    PRIMARY KEY (tour_id, position)
);
