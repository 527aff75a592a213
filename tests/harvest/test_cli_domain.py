"""``harvestflow domain configure|alias|unalias`` on a real harvest database: the page's checks
(a refusal says why, exit 1), a crawl engineer's only (a curator is refused), the alias shown by
``domain show`` with who set it."""

from __future__ import annotations

import pytest

from app.cli.main import main

pytestmark = pytest.mark.services


def test_domains_configured_and_aliased_on_the_command_line(hdb, capsys):
    from harvest import rights
    from harvest.domains import ensure_config

    with hdb.begin() as conn:
        ensure_config(conn, "example.fr")
        ensure_config(conn, "example.com")
        rights.grant(conn, rights.EVERY, "ian", rights.Role.ENGINEER, "root")
    configure = ["domain", "configure", "example.fr", "--template", "host_only",
                 "--max-objects", "500", "--seed", "https://www.example.fr/a"]  # fmt: skip
    assert main([*configure, "--user", "carol"]) == 1
    assert "refused: carol is a curator: to change domains" in capsys.readouterr().err
    assert main([*configure, "--user", "ian"]) == 0
    assert main(["domain", "configure", "example.fr", "--seed", "https://www.example.com/",
                 "--user", "ian"]) == 1  # fmt: skip
    assert "is not in domain example.fr" in capsys.readouterr().err
    assert main(["domain", "unalias", "example.com", "--user", "carol"]) == 1
    assert "needs the crawl engineer role" in capsys.readouterr().err
    assert main(["domain", "alias", "example.com", "--of", "example.fr", "--user", "ian"]) == 0
    assert "example.com is an alias of example.fr until " in capsys.readouterr().out
    assert main(["domain", "alias", "example.fr", "--of", "example.com", "--user", "ian"]) == 1
    assert "example.com is itself an alias of example.fr" in capsys.readouterr().err
    assert main(["domain", "show", "example.com"]) == 0
    assert ", by ian)" in capsys.readouterr().out
    assert main(["domain", "show", "example.fr"]) == 0
    shown = capsys.readouterr().out
    assert "template host_only, max objects 500" in shown and "https://www.example.fr/a" in shown
    assert main(["domain", "unalias", "example.com", "--user", "ian"]) == 0
    assert main(["domain", "unalias", "example.com", "--user", "ian"]) == 1
    assert "example.com is not an alias" in capsys.readouterr().err
