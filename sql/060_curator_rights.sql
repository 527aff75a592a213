-- harvestflow harvest database, version 060: rights per collection, saved searches.
-- Owner: harvest.rights (collection_roles) and harvest.selection.saved_searches.

-- Who may do what in one collection of selection records (and the definitions made from them):
-- a role per (collection, user). A collection with no row follows the users' global roles
-- (Airflow's); once a collection has a row, only the users named may write in it (and global
-- administrators). collection '*' is every collection. Every grant and revoke is audited.
CREATE TABLE collection_roles (
    collection  text NOT NULL CHECK (length(collection) BETWEEN 1 AND 500),
    username    text NOT NULL CHECK (length(username) BETWEEN 1 AND 200),
    role        text NOT NULL
        CHECK (role IN ('viewer', 'curator', 'engineer', 'administrator')),
    granted_by  text NOT NULL,
    granted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection, username)
);
CREATE INDEX collection_roles_user ON collection_roles (username);

-- A curator's saved searches of the selection records list: a name and the list's query
-- (the filters only), per user.
CREATE TABLE saved_searches (
    username    text NOT NULL CHECK (length(username) BETWEEN 1 AND 200),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    query       text NOT NULL CHECK (length(query) <= 4000),
    saved_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (username, name)
);
