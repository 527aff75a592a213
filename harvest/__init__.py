"""Harvest planning: selection records, harvest definitions, schedules, job generation, jobs.

The NetarchiveSuite role of harvestflow. Nothing here imports Airflow: the DAG tasks call the
plain functions re-exported by :mod:`harvest.pipeline`.
"""
