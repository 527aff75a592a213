"""The ``harvestflow`` command: :mod:`app.cli.main` builds the parser; each other module adds the
subcommands named after it (``harvest`` adds the harvest database's: selection, traps, domain,
definitions, jobs)."""
