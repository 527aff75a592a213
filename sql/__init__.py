"""The harvest database's versioned schema migrations (``NNN_description.sql``).

A package only so that the ``.sql`` files ship in the wheel and are found through
:mod:`importlib.resources` (:data:`harvestflow.db.SQL_DIR`); it holds no code.
"""
