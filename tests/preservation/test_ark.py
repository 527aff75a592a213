"""ARK minting and checking: NOID's check character, uniqueness through the DB sequence."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from preservation import ark

# Published NCDA examples (NOID documentation, n2t.net, EZID demo values)
NCDA_EXAMPLES = [
    ("13030/xf93gt2", "q"),
    ("13030/tf5p30086", "k"),
    ("99999/fk4ck01k7", "7"),
    ("99999/fk44479c3", "d"),
]


@pytest.mark.parametrize(("zone", "expected"), NCDA_EXAMPLES)
def test_check_character_matches_published_noid_examples(zone: str, expected: str) -> None:
    assert ark.check_char(zone) == expected
    assert ark.verify(f"ark:/{zone}{expected}").valid
    assert ark.verify(f"ark:{zone}{expected}").valid  # the newer form without the slash


def test_minted_arks_have_naan_shoulder_and_valid_check_character() -> None:
    minted = [ark.make_ark("99999", "hf", n) for n in range(0, 30_000, 7)]
    assert len(set(minted)) == len(minted)
    for value in minted:
        assert value.startswith("ark:/99999/hf")
        assert ark.verify(value).valid, value


def test_single_substitutions_and_adjacent_transpositions_are_detected() -> None:
    value = ark.make_ark("12148", "hf", 123_456)
    prefix, name = value.rsplit("/", 1)
    for i, ch in enumerate(name):
        for sub in ark.XDIGITS:
            if sub != ch:
                changed = name[:i] + sub + name[i + 1 :]
                assert not ark.verify(f"{prefix}/{changed}").valid, changed
    for i in range(len(name) - 1):
        if name[i] != name[i + 1]:
            swapped = name[:i] + name[i + 1] + name[i] + name[i + 2 :]
            assert not ark.verify(f"{prefix}/{swapped}").valid, swapped


def test_verify_explains_what_is_wrong() -> None:
    assert "not an ARK" in ark.verify("doi:10.1000/xyz").reason
    bad = ark.verify("ark:/13030/xf93gt2b")
    assert not bad.valid and bad.expected == "q"
    assert "outside the NOID alphabet" in ark.verify("ark:/13030/xf93Gt2q").reason
    # qualifiers are not covered by the check character
    assert ark.verify("ark:/13030/xf93gt2q/page1.pdf").valid


def test_blade_encoding_is_base29_with_minimum_width() -> None:
    assert ark.encode(0) == "0000"
    assert ark.encode(28) == "000z"
    assert ark.encode(29) == "0010"
    assert ark.encode(29**5) == "100000"
    with pytest.raises(ValueError):
        ark.make_ark("99999", "HF", 1)


def test_get_or_mint_reuses_and_parallel_workers_never_collide(db_engine: sa.Engine) -> None:
    with db_engine.begin() as conn:
        first = ark.get_or_mint(conn, "file", "a.warc.gz", "99999", "hf")
        again = ark.get_or_mint(conn, "file", "a.warc.gz", "99999", "hf")
    assert first == again
    results: list[tuple[str, str]] = []
    lock = threading.Lock()

    def worker() -> None:
        for n in range(25):
            ref = f"f{n}.warc.gz"  # every worker asks for the same 25 refs
            with db_engine.begin() as conn:
                value = ark.get_or_mint(conn, "file", ref, "99999", "hf")
            with lock:
                results.append((ref, value))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_ref: dict[str, set[str]] = {}
    for ref, value in results:
        by_ref.setdefault(ref, set()).add(value)
    assert all(len(v) == 1 for v in by_ref.values()), by_ref
    assert len({next(iter(v)) for v in by_ref.values()}) == 25
    with db_engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM arks")).scalar_one() == 26


def test_cli_ark_verify_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from app.cli import ark as ark_cli

    parser = argparse.ArgumentParser()
    ark_cli.add_cli(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["ark", "verify", "ark:/13030/xf93gt2q"])
    assert args.func(args) == 0
    args = parser.parse_args(["ark", "verify", "ark:/13030/xf93gt2q", "ark:/13030/xf39gt2q"])
    assert args.func(args) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and "expected 'q'" not in out.splitlines()[0]
