"""The ``harvestflow`` command: :mod:`app.cli.main` builds the parser; each top-level command
``harvestflow X`` lives in the module ``X`` of this package, which adds X and its subcommands."""
