"""The demo in one place: the sample site, its loopback service, the demo definition and
``harvestflow demo``'s run."""
