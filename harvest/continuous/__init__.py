"""Continuous crawling with adaptive revisiting.

Entry points (plain arguments, no Airflow): :func:`service.launch` (the hourly launcher),
:func:`service.crawl_for` (a chain of bounded crawl runs resuming from the URL state),
:func:`run.run_batch` (one run), :func:`report.crawl_stats` / :func:`report.host_report`.
The revisit policy (:mod:`policy`), change detection (:mod:`noise`, :mod:`urlstate`) and the
launcher's schedule rule (:func:`launcher.event_in_hour`) are pure functions taking ``now``.
"""
