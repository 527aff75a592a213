"""The top layer: the ``harvestflow`` command, the curator pages, the demo and the
processes that run the platform (``up``, workers, Airflow). Imports every stage; nothing imports it
but DAG files, plugins and tests."""
