"""The JSON-lines protocol: `swamp --jsonl`, per-command `--jsonl`, and bad lines that do not stop it."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import pytest
from helpers import job, run_swamp, sh

from swamp.protocol.jsonl import serve


@pytest.fixture(scope="module")
def jl_repo(shared_repo):
    shared_repo.write_workflow("jl", [job("main", sh("a", "echo one"), sh("b", "echo two"))])
    return shared_repo


def frames_by_id(stdout: str) -> tuple[list[dict], dict]:
    frames = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    grouped: dict = defaultdict(list)
    for frame in frames:
        grouped[frame.get("id")].append(frame)
    return frames, grouped


def lines(*items) -> str:
    return "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)


@pytest.mark.cli
def test_jsonl_session_answers_requests_and_survives_bad_lines(jl_repo):
    earlier = jl_repo.run("jl")["id"]
    stdin = lines(
        {"type": "workflow.list", "id": "l1"},
        "{not json",
        {"type": "workflow.run", "id": "r1", "payload": {"workflow": "jl"}},
        {"type": "no.such.type", "id": "u1"},
        {"type": "workflow.list"},
        {"type": "workflow.list", "id": "l1"},
        {"type": "workflow.history.get", "id": "h1", "payload": {"run": earlier[:12]}},
        {"type": "workflow.get", "id": "g1", "payload": {"workflow": "jl", "bogus": 1}},
    )
    code, out, err, _ = jl_repo.swamp("--jsonl", input=stdin)
    assert code == 0, err
    frames, by_id = frames_by_id(out)

    # every answered request ends with exactly one `done`, and it is that request's last frame
    for request_id in ("l1", "r1", "u1", "h1", "g1"):
        dones = [f for f in by_id[request_id] if f["type"] == "done"]
        assert len(dones) == 1, request_id
        assert by_id[request_id][-1]["type"] == "done"

    # l1 first time: the workflow list
    l1_results = [f for f in by_id["l1"] if f["type"] == "workflow.list"]
    assert len(l1_results) == 1
    assert "jl" in {w["name"] for w in l1_results[0]["payload"]["data"]["workflows"]}

    # run: events stream first, then the result, then done
    r1 = by_id["r1"]
    kinds = [f["type"] for f in r1]
    assert kinds[-2:] == ["workflow.run", "done"]
    assert set(kinds[:-2]) == {"event"} and len(kinds) > 2
    assert r1[-2]["payload"]["data"]["status"] == "succeeded"
    assert {f["event"]["event"] for f in r1[:-2]} >= {"step_started", "step_succeeded"}

    # history.get by prefix
    h1 = [f for f in by_id["h1"] if f["type"] == "workflow.history.get"]
    assert h1[0]["payload"]["data"]["id"] == earlier

    # errors: each an invalid_request frame, with the line number where the id could not be used
    def errors(request_id):
        return [f["error"] for f in by_id[request_id] if f["type"] == "error"]

    null_errors = errors(None)
    assert {e["code"] for e in null_errors} == {"invalid_request"}
    assert sorted(e["details"]["line"] for e in null_errors) == [2, 5, 6]  # bad JSON, no id, reused id
    [unknown] = errors("u1")
    assert unknown["code"] == "invalid_request"
    assert "no.such.type" in unknown["message"]
    [bogus] = errors("g1")
    assert bogus["code"] == "invalid_request"
    assert "bogus" in bogus["message"]
    assert all(f["type"] != "error" for f in by_id["h1"] + by_id["r1"])

    # the stream went on after the malformed line: requests from lines 3..8 were all answered
    assert len([f for f in frames if f["type"] == "done"]) == 8


@pytest.mark.cli
def test_per_command_jsonl_takes_payload_lines(jl_repo):
    stdin = lines({"workflow": "jl"}, "garbage", {"workflow": "missing-one"}, [1, 2])
    code, out, err, _ = jl_repo.swamp("workflow", "get", "--jsonl", input=stdin)
    assert code == 0, err
    _frames, by_id = frames_by_id(out)
    assert [f["type"] for f in by_id["1"]] == ["workflow.get", "done"]
    assert by_id["1"][0]["payload"]["data"]["name"] == "jl"
    assert by_id["2"][0]["error"]["code"] == "invalid_request"
    assert by_id["2"][0]["error"]["details"]["line"] == 2
    assert by_id["3"][0]["error"]["code"] == "workflow_not_found"
    assert by_id["4"][0]["error"]["code"] == "invalid_request"
    assert all(by_id[k][-1]["type"] == "done" for k in ("1", "2", "3", "4"))


@pytest.mark.cli
def test_per_command_jsonl_honours_the_command_repo_dir(jl_repo, tmp_path):
    code, out, _err, _ = run_swamp(
        "workflow",
        "get",
        "--repo-dir",
        str(jl_repo.root),
        "--jsonl",
        cwd=tmp_path,
        input=lines({"workflow": "jl"}),
    )
    _frames, by_id = frames_by_id(out)
    assert by_id["1"][0]["type"] == "workflow.get", by_id["1"][0]


# -- the protocol loop in process ----------------------------------------------------------------


def serve_lines(repo, *items, implied_type=None):
    output = io.StringIO()
    source = io.BytesIO(lines(*items).encode())
    code = serve(source, output, repo_dir=str(repo.root), implied_type=implied_type)
    assert code == 0
    return frames_by_id(output.getvalue())


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("[1, 2]", "not a JSON object"),
        ('{"type": "workflow.list", "id": ""}', "no 'id'"),
        ('{"type": "workflow.list", "id": 7}', "no 'id'"),
        ('{"type": "workflow.list", "id": "x", "payload": [1]}', "payload"),
        ('{"type": "workflow.list", "id": "x", "extra": 1}', "extra"),
        ('{"id": "x"}', "unknown request type"),
    ],
)
def test_bad_frames_get_invalid_request_and_the_stream_goes_on(jl_repo, line, fragment):
    frames, by_id = serve_lines(jl_repo, line, {"type": "workflow.list", "id": "after"})
    first_error = next(f for f in frames if f["type"] == "error")
    assert first_error["error"]["code"] == "invalid_request"
    assert fragment in first_error["error"]["message"]
    assert first_error["error"]["details"]["line"] == 1
    assert [f["type"] for f in by_id["after"]] == ["workflow.list", "done"]


def test_blank_lines_are_ignored_and_line_numbers_count_them(jl_repo):
    frames, _ = serve_lines(jl_repo, "", "   ", "nope")
    [error] = [f for f in frames if f["type"] == "error"]
    assert error["error"]["details"]["line"] == 3


def test_a_refused_request_does_not_stop_the_next(jl_repo):
    _frames, by_id = serve_lines(
        jl_repo,
        {"type": "workflow.run", "id": "bad", "payload": {"workflow": "does-not-exist"}},
        {"type": "workflow.get", "id": "good", "payload": {"workflow": "jl"}},
    )
    assert by_id["bad"][0]["error"]["code"] == "workflow_not_found"
    assert [f["type"] for f in by_id["good"]] == ["workflow.get", "done"]
