"""Reviewed, versioned configuration: default settings (``harvestflow.toml``), crawl templates
(``templates/``), the selection mapping, the global trap list (``traps/``) and the demo inputs.

A package only so that these files ship in the wheel and are found through
:mod:`importlib.resources` (:func:`harvestflow.package_data.data_path`); it holds no code.
"""
