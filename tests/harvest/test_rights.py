"""Rights per collection on a real harvest database: a collection nobody was given a role in
follows the global role; once someone has a role in it, only the users named there may write,
up to their role there (``*``: every collection); a global administrator always may; grants and
revokes are audited; the CLI gives, lists and takes roles, and its annotate is checked; a write
of no collection needs the role globally or in ``*``; a definition the transfer makes belongs to
its records' collections, whose curators (only) may switch it off."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from harvest import rights
from harvest.rights import Role
from harvest.selection import editing
from harvestflow.audit import audit_entries

pytestmark = pytest.mark.services


def _record(engine: sa.Engine, collection: str, url: str) -> int:
    fields = {"collection": collection, "seed_url": url, "budget": "small",
              "frequency": "weekly", "depth": "page", "active": "yes", "theme": "news"}  # fmt: skip
    saved = editing.save_record(fields, "setup", check_urls=False, engine=engine)
    assert saved.record_id is not None, saved.refused
    return saved.record_id


def test_a_collection_with_named_users_is_theirs_and_an_administrators(hdb: sa.Engine) -> None:
    with hdb.begin() as conn:
        rights.grant(conn, "A", "carol", Role.CURATOR, "root")
        rights.grant(conn, "*", "erin", Role.ENGINEER, "root")
        # nobody named in "Open": the global roles apply, as before rights existed
        assert rights.role_in(conn, "dave", "Open", Role.CURATOR) is Role.CURATOR
        assert rights.role_in(conn, "vic", "Open", Role.VIEWER) is Role.VIEWER
        assert rights.role_in(conn, "erin", "Open", Role.VIEWER) is Role.ENGINEER  # '*'
        # "A" names carol: a global curator who is not named there only views it
        assert rights.role_in(conn, "carol", "A", Role.VIEWER) is Role.CURATOR
        assert rights.role_in(conn, "dave", "A", Role.CURATOR) is Role.VIEWER
        assert rights.role_in(conn, "erin", "A", Role.VIEWER) is Role.ENGINEER
        assert rights.role_in(conn, "root", "A", Role.ADMIN) is Role.ADMIN
        assert rights.check(conn, "carol", ["A"], Role.CURATOR, Role.VIEWER) == "carol"
        with pytest.raises(rights.Forbidden, match=r"dave is a viewer in collection 'A'"):
            rights.check(conn, "dave", ["Open", "A"], Role.CURATOR, Role.CURATOR)
        with pytest.raises(rights.Forbidden, match="authenticated"):
            rights.check(conn, None, ["Open"], Role.VIEWER, Role.ADMIN)
        with pytest.raises(rights.RightsError, match="not a collection's name"):
            rights.check(conn, "carol", ["A\x00"], Role.CURATOR, Role.CURATOR)
        with pytest.raises(rights.RightsError, match="role 'boss'"):
            Role.parse("boss")
        rights.revoke(conn, "A", "carol", "root")
        with pytest.raises(rights.RightsError, match="no role"):
            rights.revoke(conn, "A", "carol", "root")
        # nobody left in "A": the global roles again
        assert rights.role_in(conn, "dave", "A", Role.CURATOR) is Role.CURATOR
        audit = audit_entries(conn, target="collection A")
    assert [(a["username"], a["action"], a["detail"]["user"], a["detail"]["after"])
            for a in audit] == [("root", "rights.revoke", "carol", None),
                                ("root", "rights.grant", "carol", "curator")]  # fmt: skip


def test_the_cli_gives_lists_and_takes_roles_and_checks_annotate(
    hdb: sa.Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli.main import main

    theirs = _record(hdb, "Theirs", "http://theirs.example/")
    assert main(["rights", "grant", "Theirs", "tina", "curator", "--user", "root"]) == 0
    assert main(["rights", "grant", "Theirs", "tina", "boss"]) == 1
    assert "role 'boss'" in capsys.readouterr().err
    assert main(["rights", "list", "--collection", "Theirs"]) == 0
    assert "Theirs\ttina\tcurator\tgiven by root" in capsys.readouterr().out
    refused = ["selection", "annotate", str(theirs), "--notes", "x", "--user", "dora"]
    assert main(refused) == 1
    assert "dora is a viewer in collection 'Theirs'" in capsys.readouterr().err
    assert main(["selection", "annotate", str(theirs), "--notes", "x", "--user", "tina"]) == 0
    assert main(["rights", "revoke", "Theirs", "tina", "--user", "root"]) == 0
    assert main(["rights", "list", "--json"]) == 0
    assert capsys.readouterr().out.strip().endswith("[]")


def test_a_transferred_definition_is_its_records_collections_and_domains_need_an_engineer(
    hdb: sa.Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from app.cli.main import main
    from harvest.office import office_rights
    from harvest.planning import generate_jobs
    from harvest.selection.transfer import transfer_selection_records

    _record(hdb, "Elections", "http://a.example/")
    _record(hdb, "Elections", "http://b.example/")
    result = transfer_selection_records("weekly", engine=hdb)
    (hid,) = result["definitions"].values()
    with hdb.begin() as conn:
        rights.grant(conn, "Elections", "carol", Role.CURATOR, "root")
        rights.grant(conn, "Sport", "bob", Role.CURATOR, "root")
        rights.grant(conn, "*", "erin", Role.ENGINEER, "root")
        switch = office_rights.definition_switch(conn, hid)
        assert switch.collections == ("Elections",)
        assert switch.check(conn, "carol", Role.VIEWER) == "carol"
        with pytest.raises(rights.Forbidden, match="bob is a viewer in collection 'Elections'"):
            switch.check(conn, "bob", Role.CURATOR)
        # of no collection: the global role, or the one given in every collection
        domains = office_rights.DOMAINS
        with pytest.raises(rights.Forbidden, match="carol is a curator: to change domains"):
            domains.check(conn, "carol", Role.CURATOR)
        assert domains.check(conn, "erin", Role.VIEWER) == "erin"
        assert domains.check(conn, "ian", Role.ENGINEER) == "ian"
        assert not rights.allows(conn, "carol", [], Role.ENGINEER, Role.CURATOR)
    # its jobs too: a QA comment and a patch harvest from the command line
    job = generate_jobs(hid, datetime(2026, 11, 23, tzinfo=UTC), hdb)[0]
    assert main(["jobs", "qa", str(job), "--comment", "broken", "--user", "bob"]) == 1
    assert "bob is a viewer in collection 'Elections'" in capsys.readouterr().err
    assert main(["jobs", "qa", str(job), "--comment", "fine", "--user", "carol"]) == 0
    assert main(["qc", "patch", str(job), "--no-trigger", "--user", "bob"]) == 1
    assert "bob is a viewer in collection 'Elections'" in capsys.readouterr().err
