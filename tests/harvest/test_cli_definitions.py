"""``harvestflow definitions create|edit|show|deactivate|reactivate`` on a real harvest
database: the same checks as the pages (a refusal names the field, exit 1), ``edit`` changes
only the options given, and every change is a version with its author; a ``--user`` without a
role in the definition's collection is refused."""

from __future__ import annotations

import json

import pytest

from app.cli.main import main

pytestmark = pytest.mark.services


def _shown(hid: int, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["definitions", "show", str(hid), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_definitions_made_and_changed_on_the_command_line(hdb, capsys, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("https://www.example.fr/\n\nhttps://news.example.org/today\n")
    base = ["definitions", "create", "--name", "Storm", "--seeds-file", str(seeds)]
    refused = [*base, "--schedule", "every", "--unit", "week", "--day", "3", "--user", "ian"]
    assert main(refused) == 1
    assert "refused: schedule: ondayofmonth: not a field of a schedule in weeks" in (
        capsys.readouterr().err
    )
    made = [*base, "--schedule", "every", "--unit", "week", "--weekday", "fri", "--at-hour", "6"]
    assert main([*made, "--start", "2026-11-20", "--user", "ian"]) == 0
    out = capsys.readouterr().out
    hid = int(out.split("definition ")[1].split()[0])
    assert "every 1 week(s) on friday at 06:00, from 2026-11-20 00:00" in out

    assert main(["definitions", "edit", str(hid), "--every", "2", "--user", "jo"]) == 0
    found = _shown(hid, capsys)
    assert found["schedule_text"] == "every 2 week(s) on friday at 06:00, from 2026-11-20 00:00"
    assert found["seeds"] == ["https://www.example.fr/", "https://news.example.org/today"]
    assert main(["definitions", "edit", str(hid), "--schedule", "none", "--user", "jo"]) == 0
    assert _shown(hid, capsys)["schedule_text"] == "one-off (harvested on request)"

    assert main(["definitions", "deactivate", str(hid), "--reason", "storm over"]) == 0
    assert main(["definitions", "deactivate", str(hid)]) == 1
    assert main(["definitions", "reactivate", str(hid), "--user", "jo"]) == 0
    history = _shown(hid, capsys)["history"]
    assert [(h["action"], h["changed_by"]) for h in history][::2] == [
        ("reactivate", "jo"),
        ("edit", "jo"),
        ("create", "ian"),
    ]
    assert main(["definitions", "show", "999999"]) == 1


def test_the_command_line_is_refused_a_definition_of_another_collection(hdb, capsys):
    from harvest import rights

    with hdb.begin() as conn:
        rights.grant(conn, "Theirs", "tina", rights.Role.CURATOR, "root")
    made = ["definitions", "create", "--name", "Theirs", "--seed", "https://www.example.fr/",
            "--collection", "Theirs"]  # fmt: skip
    assert main([*made, "--user", "dora"]) == 1
    assert "refused: dora is a viewer in collection 'Theirs'" in capsys.readouterr().err
    assert main([*made, "--user", "tina"]) == 0
    out = capsys.readouterr().out
    hid = int(out.split("definition ")[1].split()[0])
    assert "  collection(s): Theirs\n" in out
    for refused in (["edit", str(hid), "--comments", "mine"], ["deactivate", str(hid)],
                    ["edit", str(hid), "--collection", "Theirs"]):  # fmt: skip
        assert main(["definitions", *refused, "--user", "dora"]) == 1, refused
        assert "dora is a viewer in collection 'Theirs'" in capsys.readouterr().err
    assert main(["definitions", "edit", str(hid), "--comments", "ours", "--user", "tina"]) == 0
    found = _shown(hid, capsys)
    assert found["collections"] == ["Theirs"] and found["comments"] == "ours"
    # a definition of no collection: the command line's user is a curator
    assert main(["definitions", "edit", str(hid), "--collection", "", "--user", "tina"]) == 0
    assert main(["definitions", "deactivate", str(hid), "--user", "dora"]) == 0
