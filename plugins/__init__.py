"""Airflow's plugins folder. A package only so that an installed harvestflow ships it and can
point Airflow at it (:mod:`app.runtime.airflow_config`); listed in .airflowignore, no code."""
