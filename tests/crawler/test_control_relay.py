"""The partitioned job's action relay: how the children's answers make the job's answer, and
how the relay's files are read (only whole lines, so a line being written is read next time)."""

from __future__ import annotations

from crawler.partitioning.control_relay import append_line, combined_answer, read_lines


def test_the_job_refuses_an_action_any_process_refused_with_that_process_named():
    state, message = combined_answer(
        {0: ("applied", "filter trap rejects"), 1: ("refused", "refused: bad limits")}
    )
    assert (state, message) == ("refused", "refused: bad limits")
    state, message = combined_answer({0: ("refused", "a"), 1: ("refused", "b")})
    assert (state, message) == ("refused", "p0: a; p1: b")


def test_identical_answers_are_said_once_different_ones_per_process():
    assert combined_answer({0: ("applied", "resumed"), 1: ("applied", "resumed")}) == (
        "applied",
        "resumed",
    )
    assert combined_answer({1: ("applied", "paused: 3 queued"), 0: ("applied", "paused: 1")}) == (
        "applied",
        "p0: paused: 1; p1: paused: 3 queued",
    )


def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path):
    path = tmp_path / "answers-0.jsonl"
    assert read_lines(path, 0) == ([], 0)  # no file yet: nothing, same offset
    append_line(path, {"action_id": 1, "state": "applied"})
    with path.open("a") as fh:
        fh.write('{"action_id": 2, "sta')  # a writer caught in the middle of its line
    lines, offset = read_lines(path, 0)
    assert lines == [{"action_id": 1, "state": "applied"}]
    with path.open("a") as fh:
        fh.write('te": "refused"}\n')
    lines, offset = read_lines(path, offset)
    assert lines == [{"action_id": 2, "state": "refused"}]
    assert offset == path.stat().st_size
