-- harvestflow harvest database, version 038: host leases granted in turn between crawlers.
--
-- host_lease_waiters: the crawlers waiting for a host's lease, each with a ticket taken from
-- host_lease_tickets when it starts waiting (kept while it waits). A crawler takes the lease
-- only when no other live waiter of that host has an older ticket, and drops its row when it
-- takes it, so its next request waits behind the others: two jobs on one host alternate
-- instead of one taking lease after lease while the other waits.
-- expires_at bounds the row of a crawler that died waiting (a few seconds after its next poll).
CREATE SEQUENCE host_lease_tickets;

CREATE TABLE host_lease_waiters (
    host        text NOT NULL,
    holder      text NOT NULL,
    ticket      bigint NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (host, holder)
);
