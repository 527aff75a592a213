"""Curator views: the file readers and HTML pages behind the Airflow plugin (the harvest database's
views are harvest.views).

Why a library: the pages are plain FastAPI + Jinja2 over the harvest database and the job,
QA and preload folders, so they can be tested and reused without Airflow. The Airflow plugin
(``plugins/harvestflow_curator.py``) only supplies authentication (Airflow's auth manager) and
the links to Airflow task logs. This package never imports Airflow.
"""
