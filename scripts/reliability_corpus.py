"""The bad-input corpus (tests/corpus/*.yaml): load the cases, send them to a real swamp, judge.

Most cases travel in one `swamp --jsonl` session per repository (one process for dozens of
requests); raw-byte payloads and shell-hostile wait IDs go through the command line. Every case
gets a CaseResult: the code it got, whether that is what it expects, and what else went wrong
(a traceback, a changed record, a created file). Used by tests/corpus/test_bad_input_corpus.py and
by scripts/reliability.
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reliability_kit as kit
import yaml

CORPUS = kit.ROOT / "tests" / "corpus"
A26 = "a" * 26
SCHEMAS: dict[str, Any] = {
    "any": {},
    "verdict": {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict"],
        "properties": {"verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]}},
    },
    "number": {"type": "number", "minimum": 0, "maximum": 10},
    "strict": {
        "type": "object",
        "additionalProperties": False,
        "required": ["a"],
        "properties": {"a": {"type": "integer"}},
    },
}
WAIT_TEMPLATE = (
    "id: ID\nname: NAME\njobs:\n  - name: main\n    steps:\n      - name: s\n        task: {task}\n"
)


@dataclass
class Case:
    kind: str  # payload | wait_id | frame | workflow
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.spec['id']}"

    @property
    def bug(self) -> str | None:
        return self.spec.get("bug")


@dataclass
class CaseResult:
    case: Case
    got: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def load_cases() -> list[Case]:
    cases = []
    for kind, name in (
        ("payload", "payloads"),
        ("wait_id", "wait_ids"),
        ("frame", "frames"),
        ("workflow", "workflows"),
    ):
        doc = yaml.safe_load((CORPUS / f"{name}.yaml").read_text(encoding="utf-8"))
        cases += [Case(kind, spec) for spec in doc["cases"]]
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"corpus case ids used twice: {duplicates}"
    return cases


# -- generated inputs --------------------------------------------------------------------------------


def generate(gen: dict[str, Any]) -> str:
    if "nest" in gen:
        n, leaf = gen["nest"], gen.get("leaf", "0")
        if gen.get("kind") == "object":
            return '{"a":' * n + leaf + "}" * n
        return "[" * n + leaf + "]" * n
    if "pad" in gen:
        return '"' + "a" * (gen["pad"] - 2) + '"'
    if "spaces" in gen:
        return "{}" + " " * (gen["spaces"] - 2)
    if "utf8" in gen:
        return '"' + "é" * gen["utf8"] + '"'
    if "digits" in gen:
        return "9" * gen["digits"]
    if "repeat" in gen:
        return str(gen["repeat"]) * gen["times"]
    raise ValueError(f"unknown generator {gen}")


def payload_bytes(spec: dict[str, Any]) -> bytes:
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    text = generate(spec["gen"]) if "gen" in spec else spec["text"]
    return text.encode("utf-8", "surrogatepass")


def workflow_text(spec: dict[str, Any], name: str) -> str:
    if "gen" in spec:
        return alias_bomb(spec["gen"]["alias_bomb"], spec["gen"]["under"], name)
    text = spec["text"]
    if text.startswith("W(") and text.endswith(")"):
        text = WAIT_TEMPLATE.format(task=text[2:-1])
    return text.replace("ID", str(uuid.uuid4())).replace("NAME", name)


def alias_bomb(levels: int, under: str, name: str) -> str:
    """`levels` lines of nine aliases each: 9**levels strings once expanded, a few hundred bytes."""
    lines = ['x0: &x0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, levels)]
    head = f"id: {uuid.uuid4()}\nname: {name}\n"
    jobs = "jobs: [{name: main, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n"
    if under == "top":
        return head + jobs + "\n".join(lines) + "\n"
    return head + jobs + f"{under}:\n" + "\n".join("  " + line for line in lines) + "\n"


# -- the run ---------------------------------------------------------------------------------------


@dataclass
class Session:
    """One `swamp --jsonl` process: lines in, frames out, answers found by id or by line."""

    lines: list[bytes] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)
    out: str = ""
    err: str = ""
    code: int = 0
    unparsed: list[str] = field(default_factory=list)

    def add(self, line: bytes | str) -> int:
        self.lines.append(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line)
        return len(self.lines)

    def run(self, root: Path, timeout: float = 300) -> Session:
        result = kit.cli(root, "--jsonl", input=b"\n".join(self.lines) + b"\n", timeout=timeout)
        self.out, self.err, self.code = result.out, result.err, result.code
        for raw in self.out.splitlines():
            try:
                self.frames.append(json.loads(raw))
            except ValueError:
                self.unparsed.append(raw[:200])
        return self

    def answer(self, request_id: str | None = None, line: int | None = None) -> dict[str, Any] | None:
        """The result or error frame answering a request (by its id) or a line (by number)."""
        for frame in self.frames:
            if frame.get("type") in ("event", "done"):
                continue
            if request_id is not None and frame.get("id") == request_id:
                return frame
            details = (frame.get("error") or {}).get("details") or {}
            if line is not None and frame.get("id") is None and details.get("line") == line:
                return frame
        return None

    def done_for(self, request_id: str) -> bool:
        return any(f.get("type") == "done" and f.get("id") == request_id for f in self.frames)

    @property
    def traceback(self) -> bool:
        return kit.has_traceback(self.out, self.err)


def code_of(frame: dict[str, Any] | None) -> str | None:
    if frame is None:
        return None
    if frame.get("type") == "error":
        return str(frame["error"]["code"])
    return "accepted"


def _signal_frame(request_id: str, wait_id: str, spec: dict[str, Any]) -> bytes:
    head = json.dumps({"type": "workflow.signal", "id": request_id})[:-1]
    if "value" in spec or spec.get("as") == "value":
        raw = spec["value"] if "value" in spec else generate(spec["gen"])
        body = '{"waitId":' + json.dumps(wait_id) + ',"payload":' + raw + "}"
    else:
        text = payload_bytes(spec).decode("utf-8", "surrogatepass")
        body = json.dumps({"waitId": wait_id, "payloadText": text})
    return (head + ',"payload":' + body + "}").encode("utf-8", "surrogatepass")


def _open_waits(root: Path, cases: list[Case]) -> dict[str, tuple[str, str]]:
    """(runId, waitId) of a run of its own for every case that signals a wait, so that a case
    wrongly accepted settles only its own wait and fails under its own name alone. One workflow per
    schema; each run has its own inputs, so no run supersedes (or even reads) another."""
    workflows = {
        name: kit.write_workflow(
            root, f"corpus-{name}", [kit.job("main", kit.wait_step("review", 86400, schema))]
        )
        for name, schema in SCHEMAS.items()
    }
    waits = {}
    for number, case in enumerate(cases):
        run = kit.start_run(root, workflows[case.spec.get("wait", "any")], {"case": number})
        waits[case.id] = (run["id"], run["waits"][0]["waitId"])
    return waits


def _signals_a_wait(case: Case) -> bool:
    if case.kind == "payload":
        return True
    return case.kind == "frame" and any("{WAIT}" in line for line in case.spec.get("lines", []))


def _retired_wait(root: Path) -> str:
    """A wait that timed out and was then reset by `resume --from`: its ID must answer reset."""
    name = kit.write_workflow(root, "corpus-retry", [kit.job("main", kit.wait_step("review", 1, {}))])
    run = kit.start_run(root, name)
    old = run["waits"][0]["waitId"]
    failed = kit.call(root, "workflow.resume", {"workflow": name, "run": run["id"]}, now=kit.at(5))
    assert failed["status"] == "failed"
    kit.call(root, "workflow.resume", {"workflow": name, "run": run["id"], "from": "review"}, now=kit.at(6))
    return old


def run_corpus(base: Path, cases: list[Case] | None = None) -> dict[str, CaseResult]:
    cases = cases if cases is not None else load_cases()
    results = {c.id: CaseResult(c) for c in cases}
    signal_root = kit.init_repo(base / "signals")
    _run_signal_side(signal_root, [c for c in cases if c.kind != "workflow"], results)
    workflow_root = kit.init_repo(base / "workflows")
    _run_workflow_side(workflow_root, [c for c in cases if c.kind == "workflow"], results)
    return results


def _run_signal_side(root: Path, cases: list[Case], results: dict[str, CaseResult]) -> None:
    own_waits = _open_waits(root, [c for c in cases if _signals_a_wait(c)])
    retired = _retired_wait(root)
    before = kit.snapshot(root)
    waits_dir = root / ".swamp" / "waits"
    pointers_before = sorted(p.name for p in waits_dir.iterdir()) if waits_dir.is_dir() else []
    session = Session()
    pending: list[tuple[Case, str | None, int | None, Any]] = []  # (case, id, line, extra)
    cli_jobs: list[tuple[Case, list[bytes | str], bytes | None, str | None]] = []
    isolated: list[Case] = []

    def wait_for(case: Case) -> str:
        return own_waits[case.id][1]

    for case in cases:
        spec = case.spec
        if case.kind == "payload":
            via = spec.get("via", "jsonl")
            if via == "jsonl":
                rid = f"p-{spec['id']}"
                session.add(_signal_frame(rid, wait_for(case), spec))
                pending.append((case, rid, None, None))
            else:
                data = payload_bytes(spec)
                args: list[bytes | str] = ["workflow", "signal", wait_for(case)]
                stdin = None
                if via == "cli-file":
                    path = root.parent / f"payload-{spec['id']}.bin"
                    path.write_bytes(data)
                    args += ["--payload-file", str(path)]
                elif via == "cli-stdin":
                    args += ["--payload", "-"]
                    stdin = data
                else:
                    args += ["--payload", data]
                cli_jobs.append((case, [*args, "--json"], stdin, None))
        elif case.kind == "wait_id":
            wait_id = spec["wait_id"].replace("{A26}", A26).replace("{RETIRED}", retired)
            for verb, body in (
                ("signal", {"type": "workflow.signal", "payload": {"waitId": wait_id, "payload": {}}}),
                ("show", {"type": "workflow.wait.show", "payload": {"waitId": wait_id}}),
                ("reject", {"type": "workflow.reject", "payload": {"waitId": wait_id}}),
            ):
                rid = f"w-{spec['id']}-{verb}"
                session.add(json.dumps({**body, "id": rid}))
                pending.append((case, rid, None, verb))
            if spec.get("via") == "cli":
                cli_jobs.append(
                    (case, ["workflow", "signal", wait_id, "--payload", "{}", "--json"], None, "cli")
                )
        elif case.kind == "frame":
            if spec.get("isolated"):
                isolated.append(case)
                continue
            line_no = 0
            for line in _frame_lines(spec, own_waits[case.id][1] if case.id in own_waits else ""):
                line_no = session.add(line)
            pending.append((case, spec.get("reply_id"), line_no, None))

    session.run(root)
    for case, rid, line_no, extra in pending:
        result = results[case.id]
        _judge_session_case(session, case, rid, line_no, extra, result)
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(lambda job: (job, _cli(root, job)), cli_jobs))
    for (case, _, _, extra), outcome in done:
        _judge_cli_case(case, outcome, extra, results[case.id])
    for case in isolated:
        _run_isolated(root, case, own_waits[case.id][1] if case.id in own_waits else "", results[case.id])
    if session.traceback or session.unparsed:
        shown = session.err[-300:] or session.unparsed[:2]
        for case, *_ in pending:
            results[case.id].problems.append(f"the shared session printed a traceback or non-JSON: {shown}")
    after = kit.snapshot(root)
    for case in cases:
        _judge_nothing_written(case, before, after, own_waits, results[case.id])
    pointers_after = sorted(p.name for p in waits_dir.iterdir()) if waits_dir.is_dir() else []
    stray = sorted(set(pointers_after) - set(pointers_before))
    for case in cases:
        if case.kind == "wait_id" and stray:
            results[case.id].problems.append(f"files appeared under .swamp/waits: {stray}")
    for marker in Path("/tmp").glob("swamp-corpus-pwned*"):
        for case in cases:
            if case.kind == "wait_id":
                results[case.id].problems.append(f"a wait ID ran a command: {marker} exists")


def _frame_lines(spec: dict[str, Any], wait_id: str) -> list[bytes | str]:
    if "hex" in spec:
        return [bytes.fromhex(spec["hex"])]
    if "gen" in spec:
        gen = spec["gen"]
        if "long_line" in gen:
            filler = "x" * gen["long_line"]
            return [
                json.dumps(
                    {"type": "workflow.list", "id": f"f-long-{uuid.uuid4().hex}", "payload": {"pad": filler}}
                )
            ]
        if "deep_frame" in gen:
            n = gen["deep_frame"]
            return ['{"type":"workflow.list","id":"f-deep","payload":{"x":' + "[" * n + "]" * n + "}}"]
    return [line.replace("{WAIT}", wait_id) for line in spec["lines"]]


def _judge_session_case(
    session: Session, case: Case, rid: str | None, line_no: int | None, extra: Any, result: CaseResult
) -> None:
    spec = case.spec
    frame = session.answer(request_id=rid, line=line_no) if rid else session.answer(line=line_no)
    got = code_of(frame)
    result.got = got if result.got is None else f"{result.got},{got}"
    if case.kind == "payload":
        if got != spec["expect"]:
            result.problems.append(f"expected {spec['expect']}, got {got}: {_message(frame)}")
        elif got == "accepted" and "stored" in spec:
            from_frame = frame["payload"]["data"]["payload"] if frame else None
            if not _same(from_frame, spec["stored"]):
                result.problems.append(f"stored {from_frame!r}, expected {spec['stored']!r}")
    elif case.kind == "wait_id":
        if got != "wait_not_found":
            result.problems.append(f"{extra}: expected wait_not_found, got {got}: {_message(frame)}")
        elif extra in ("signal", "show"):
            reason = (frame or {}).get("error", {}).get("details", {}).get("reason")
            if reason != spec["reason"]:
                result.problems.append(f"{extra}: reason {reason!r}, expected {spec['reason']!r}")
    else:  # frame
        if got != spec["expect"]:
            result.problems.append(f"expected {spec['expect']}, got {got}: {_message(frame)}")
        elif frame is not None and frame.get("id") != spec.get("reply_id"):
            result.problems.append(f"reply id {frame.get('id')!r}, expected {spec.get('reply_id')!r}")
        if frame is not None and frame.get("id") is not None and not session.done_for(frame["id"]):
            result.problems.append("no done frame")
    if rid and case.kind != "frame" and not session.done_for(rid):
        result.problems.append("no done frame")


def _message(frame: dict[str, Any] | None) -> str:
    if frame is None:
        return "no answer"
    if frame.get("type") == "error":
        return str(frame["error"].get("message", ""))[:160]
    return "a result"


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _cli(root: Path, job: tuple[Case, list[bytes | str], bytes | None, str | None]) -> kit.Result:
    _, args, stdin, _ = job
    return kit.cli(root, *args, input=stdin or b"")  # type: ignore[arg-type]


def _judge_cli_case(case: Case, outcome: kit.Result, extra: Any, result: CaseResult) -> None:
    spec = case.spec
    got = kit.error_code(outcome) or ("accepted" if outcome.code == 0 else f"exit {outcome.code}")
    result.got = got if result.got is None else f"{result.got},cli:{got}"
    if kit.has_traceback(outcome.out, outcome.err):
        result.problems.append("the command printed a traceback")
    expected = "wait_not_found" if case.kind == "wait_id" else spec["expect"]
    if got != expected:
        result.problems.append(f"cli: expected {expected}, got {got}: {outcome.out[:200]}")
    elif got != "accepted" and outcome.code != 3:
        result.problems.append(f"cli: exit {outcome.code}, expected 3")
    if case.kind == "wait_id" and got == expected:
        reason = outcome.json["error"].get("details", {}).get("reason")
        if reason != spec["reason"]:
            result.problems.append(f"cli: reason {reason!r}, expected {spec['reason']!r}")


def _run_isolated(root: Path, case: Case, wait_id: str, result: CaseResult) -> None:
    session = Session()
    line_no = 0
    for line in _frame_lines(case.spec, wait_id):
        line_no = session.add(line)
    sentinel = f"sentinel-{uuid.uuid4().hex[:8]}"
    session.add(json.dumps({"type": "workflow.list", "id": sentinel}))
    session.run(root, timeout=60)
    frame = session.answer(request_id=case.spec.get("reply_id"), line=line_no)
    if case.spec["expect"] == "answered":
        answered = [f for f in session.frames if f.get("id") not in (sentinel,) and f.get("type") == "done"]
        result.got = "answered" if answered else None
        if not answered:
            result.problems.append("the request got no frame at all")
    else:
        result.got = code_of(frame)
        if result.got != case.spec["expect"]:
            result.problems.append(f"expected {case.spec['expect']}, got {result.got}")
    if session.traceback:
        result.problems.append("traceback: " + session.err.strip().splitlines()[-1][:200])
    if session.answer(request_id=sentinel) is None:
        result.problems.append("the stream stopped: the next request was not answered")


def _judge_nothing_written(
    case: Case,
    before: dict[str, bytes],
    after: dict[str, bytes],
    own_waits: dict[str, tuple[str, str]],
    result: CaseResult,
) -> None:
    """A refusal leaves its own wait's record byte-identical; a case is judged on its own run only,
    so one wrongly accepted case does not fail the others."""
    own = own_waits.get(case.id)
    refused = case.spec.get("expect") != "accepted"
    if own is not None and refused:
        for path, data in before.items():
            if Path(path).stem == own[0] and after.get(path) != data:
                result.problems.append(f"a refusal changed the record {path}")
    if case.kind == "wait_id":  # no case's own run: only the retired wait's run is theirs
        owned = {run_id for run_id, _ in own_waits.values()}
        for path, data in before.items():
            if Path(path).stem not in owned and after.get(path) != data:
                result.problems.append(f"a wait ID changed the record {path}")
    created = sorted(set(after) - set(before))
    if created:
        result.problems.append(f"records were created: {created}")


def _run_workflow_side(root: Path, cases: list[Case], results: dict[str, CaseResult]) -> None:
    session = Session()
    ids = {}
    for case in cases:
        name = "c-" + case.spec["id"]
        (root / "workflows" / f"workflow-{name}.yaml").write_text(
            workflow_text(case.spec, name), encoding="utf-8"
        )
        rid = f"wf-{case.spec['id']}"
        session.add(json.dumps({"type": "workflow.run", "id": rid, "payload": {"workflow": name}}))
        ids[case.id] = rid
    session.run(root, timeout=300)
    created = kit.record_files(root)
    for case in cases:
        result = results[case.id]
        frame = session.answer(request_id=ids[case.id])
        result.got = code_of(frame)
        expected = case.spec.get("expect", "workflow_invalid")
        if result.got != expected:
            result.problems.append(f"expected {expected}, got {result.got}: {_message(frame)}")
        else:
            error = frame["error"] if frame else {}
            said = str(error.get("message", "")) + json.dumps(error.get("details", {}), ensure_ascii=False)
            if case.spec["says"] not in said:
                result.problems.append(f"the refusal does not say {case.spec['says']!r}: {said[:300]}")
        mine = [p for p in created if _record_workflow(p) == "c-" + case.spec["id"]]
        if mine:
            result.problems.append(f"a run record was created: {mine[0].name}")
        if session.traceback:
            result.problems.append("the session printed a traceback")


def _record_workflow(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_bytes())["workflowName"])
    except (OSError, ValueError, KeyError):
        return None


def summary(results: dict[str, CaseResult]) -> dict[str, Any]:
    by_code: dict[str, int] = {}
    for r in results.values():
        by_code[str(r.got)] = by_code.get(str(r.got), 0) + 1
    failing = sorted(r.case.id for r in results.values() if not r.ok and not r.case.bug)
    known = sorted(r.case.id for r in results.values() if not r.ok and r.case.bug)
    fixed = sorted(r.case.id for r in results.values() if r.ok and r.case.bug)
    return {
        "cases": len(results),
        "answersByCode": dict(sorted(by_code.items())),
        "unexpected": failing,
        "knownBugs": known,
        "knownBugsNowPassing": fixed,
    }
