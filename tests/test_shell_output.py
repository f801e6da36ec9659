"""A command's output is kept as a bounded tail per stream (MODEL-020), every line of stdout and
stderr is still streamed (MODEL-022), and a line with no end is streamed in bounded pieces."""

from __future__ import annotations

from helpers import Repo, job, sh

from swamp.models.shell import TAIL_BYTES, _Tail


def test_a_character_cut_at_the_start_of_the_tail_is_left_out_with_what_came_before() -> None:
    tail = _Tail()
    tail.add(b"a" * 10 + "é".encode() * TAIL_BYTES)  # two bytes each
    tail.add(b"x")  # so the last TAIL_BYTES start with the second byte of an é
    fields = tail.fields("stdout")
    assert "\ufffd" not in fields["stdout"]
    assert len(fields["stdout"].encode()) + fields["stdoutDroppedBytes"] == 10 + 2 * TAIL_BYTES + 1
    assert fields["stdout"] == "é" * (TAIL_BYTES // 2 - 1) + "x"


def test_nothing_left_out_means_no_count_and_text_as_a_text_pipe_gives_it() -> None:
    tail = _Tail()
    tail.add(b"one\r\ntwo\rthree\n\xff")
    assert tail.fields("stderr") == {"stderr": "one\ntwo\nthree\n\ufffd"}


def test_a_line_with_no_end_is_streamed_in_pieces_and_kept_as_a_tail(repo: Repo) -> None:
    repo.write_workflow("endless", [job("main", sh("line", "head -c 300000 /dev/zero | tr '\\0' y"))])
    result = repo.swamp("workflow", "run", "endless")  # log mode: every step_output line printed
    assert result.code == 0, result.err
    streamed = [line for line in result.out.splitlines() if "yyyy" in line]
    assert 4 <= len(streamed) <= 6 and all(len(line) <= 65536 + 200 for line in streamed)
    run_id = repo.swamp("workflow", "history", "--json").json["runs"][0]["runId"]
    record = repo.swamp("workflow", "history", "get", run_id, "--json").json
    outputs = record["jobs"][0]["steps"][0]["outputs"]
    assert outputs["stdout"] == "y" * TAIL_BYTES and outputs["stdoutDroppedBytes"] == 300000 - TAIL_BYTES


def test_stderr_is_streamed_in_bounded_pieces_and_kept_as_a_tail_like_stdout(repo: Repo) -> None:
    repo.write_workflow("loud-err", [job("main", sh("line", "head -c 300000 /dev/zero | tr '\\0' e >&2"))])
    result = repo.swamp("workflow", "run", "loud-err")
    assert result.code == 0, result.err
    streamed = [line for line in result.out.splitlines() if "eeee" in line]
    assert 4 <= len(streamed) <= 6 and all(
        " line ! " in line and len(line) <= 65536 + 200 for line in streamed
    )
    run_id = repo.swamp("workflow", "history", "--json").json["runs"][0]["runId"]
    record = repo.swamp("workflow", "history", "get", run_id, "--json").json
    outputs = record["jobs"][0]["steps"][0]["outputs"]
    assert outputs["stderr"] == "e" * TAIL_BYTES and outputs["stderrDroppedBytes"] == 300000 - TAIL_BYTES
