"""``harvestflow templates list|show|check|add`` on a real harvest database with the
institution's folder in a temporary directory: a template with an unknown key or a value the
crawler refuses is refused with its name; a good one is added (by a crawl engineer only),
loaded and usable by a definition; a shipped name is refused; a template running jobs use cannot be changed under
them (neither by ``add`` nor by the DAGs' reload)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import main
from harvest import pipeline as p
from harvest.bootstrap import ensure_reference_data
from harvest.office.definition_edits import save_definition
from harvestflow.audit import audit_entries

pytestmark = pytest.mark.services


@pytest.fixture
def folder(hdb: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from harvest import rights
    from harvestflow.settings import get_settings

    path = tmp_path / "institution"
    monkeypatch.setitem(get_settings()["harvest"], "templates_dir", str(path))
    with hdb.begin() as conn:  # templates are a crawl engineer's
        rights.grant(conn, rights.EVERY, "ian", rights.Role.ENGINEER, "root")
    return path


def _file(tmp_path: Path, name: str, **spec: object) -> Path:
    lines = [f'name = "{name}"', 'description = "our news sites"', "[spec]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in spec.items()]
    path = tmp_path / f"{name}-upload.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _stored(engine: sa.Engine, name: str) -> dict | None:
    with engine.connect() as conn:
        spec = conn.execute(
            sa.text("SELECT spec FROM templates WHERE name = :n"), {"n": name}
        ).scalar()
    return None if spec is None else dict(spec)


def test_a_template_with_an_unknown_key_or_a_refused_value_is_refused_with_its_name(
    hdb, folder, tmp_path, capsys
):
    typo = _file(tmp_path, "news_sites", max_hop=3)
    assert main(["templates", "check", str(typo)]) == 1
    err = capsys.readouterr().err
    assert "template news_sites: unknown key(s) max_hop" in err and str(typo) in err
    assert main(["templates", "add", str(typo), "--user", "ian"]) == 1
    assert "template news_sites: unknown key(s) max_hop" in capsys.readouterr().err
    bad = _file(tmp_path, "news_sites", connections_per_host=0)
    assert main(["templates", "check", str(bad)]) == 1
    assert "template.connections_per_host must be at least 1" in capsys.readouterr().err
    render = _file(tmp_path, "news_sites", render="always")
    assert main(["templates", "check", str(render)]) == 1
    assert "template.render must be none, seeds or html" in capsys.readouterr().err
    assert not folder.exists() and _stored(hdb, "news_sites") is None


def test_a_good_template_is_added_listed_and_used_and_a_shipped_name_is_refused(
    hdb, folder, tmp_path, capsys
):
    good = _file(tmp_path, "news_sites", max_hops=3, scope="host")
    assert main(["templates", "check", str(good)]) == 0
    assert main(["templates", "add", str(good), "--user", "carol"]) == 1  # a curator
    assert "carol is a curator: to add crawl templates, this needs the crawl engineer role" in (
        capsys.readouterr().err
    )
    assert not folder.exists()
    assert main(["templates", "add", str(good), "--user", "ian"]) == 0
    assert (folder / "news_sites.toml").is_file()
    with hdb.connect() as conn:
        audit = audit_entries(conn, target="template news_sites")
    assert [(a["username"], a["action"]) for a in audit] == [("ian", "template.add")]
    assert _stored(hdb, "news_sites")["max_hops"] == 3  # type: ignore[index]
    capsys.readouterr()
    assert main(["templates", "list"]) == 0
    listed = [line.split()[:4] for line in capsys.readouterr().out.splitlines()]
    assert ["news_sites", "institution", "yes", "-"] in listed
    assert ["default_selective", "shipped", "yes", "-"] in listed
    assert main(["templates", "show", "news_sites"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["spec"]["scope"] == "host" and shown["spec"]["obey_robots"] is True
    form = {"name": "news", "seeds": "https://www.example.fr/", "template": "news_sites"}
    save_definition(form, "carol", engine=hdb)  # a definition may use it at once

    shipped = _file(tmp_path, "default_selective", max_hops=2)
    assert main(["templates", "add", str(shipped), "--user", "ian"]) == 1
    assert "'default_selective' is a shipped template" in capsys.readouterr().err
    ensure_reference_data(hdb)  # the DAGs' reload reads both folders
    assert _stored(hdb, "news_sites")["max_hops"] == 3  # type: ignore[index]


def test_a_template_running_jobs_use_cannot_be_changed_under_them(hdb, folder, tmp_path, capsys):
    assert (
        main(["templates", "add", str(_file(tmp_path, "news_sites", max_hops=3)), "--user", "ian"])
        == 0
    )
    form = {"name": "news", "seeds": "https://www.example.fr/", "template": "news_sites",
            "schedule": "none"}  # fmt: skip
    hid = save_definition(form, "carol", engine=hdb)
    job = p.generate_jobs(hid, datetime(2026, 11, 22, tzinfo=UTC), engine=hdb)[0]
    p.prepare_job(job, tmp_path / "jobs", engine=hdb)  # SUBMITTED: running

    changed = _file(tmp_path, "news_sites", max_hops=5)
    assert main(["templates", "add", str(changed), "--user", "ian"]) == 1
    err = capsys.readouterr().err
    assert f"template 'news_sites' is used by running job(s) {job}" in err
    assert "max_hops = 3" in (folder / "news_sites.toml").read_text()
    # changed by hand in the folder: the reload keeps the running jobs' version
    (folder / "news_sites.toml").write_text(changed.read_text())
    ensure_reference_data(hdb)
    assert _stored(hdb, "news_sites")["max_hops"] == 3  # type: ignore[index]
    # the same template again changes nothing: allowed
    assert (
        main(["templates", "add", str(_file(tmp_path, "news_sites", max_hops=3)), "--user", "ian"])
        == 0
    )
