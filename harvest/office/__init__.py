"""The back office: harvest definitions, schedules, domain configurations, aliases and crawl
templates changed by people (the curator pages and the ``harvestflow`` CLI), each change
checked as a selection record is and recorded with who made it and when."""
