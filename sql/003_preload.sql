-- harvestflow harvest database, version 003: broad-crawl preload.
-- Specific URLs a preload source brought for a domain (URL lists, curators' selections):
-- probed for redirects and added to the domain's seeds at transfer. Indexes for the per-run
-- queries of the preload (origins and DNS results of one run).

CREATE TABLE preload_seeds (
    run_id  text NOT NULL,
    domain  text NOT NULL,
    url     text NOT NULL,
    origin  text NOT NULL,
    PRIMARY KEY (run_id, domain, url)
);
CREATE INDEX domain_origins_run_idx ON domain_origins (run_id, domain);
CREATE INDEX dns_checks_class_idx ON dns_checks (run_id, class);
