"""harvestflow platform core: settings, embedded services, harvest database access, CLI.

The stage libraries (``harvest``, ``crawler``, ``indexing``, ``preservation``, ``qa``) depend on
this package for settings and database access only; nothing here imports Airflow.
"""

__version__ = "0.1.0"
