"""Log-mode renderers: readable lines for people, with the exact follow-up commands to type."""

from __future__ import annotations

import shutil
import threading
import time
from collections import deque
from typing import Any

from ..domain import suggested
from .output import out, stdout, style
from .terminal_text import shown, shown_doc

ICONS = {
    "pending": "○",
    "running": "◐",
    "waiting_approval": "⏸",
    "waiting": "⏳",
    "succeeded": "✓",
    "failed": "✗",
    "skipped": "⊘",
    "cancelled": "✖",
    "suspended": "⏸",
}
COLORS = {"succeeded": "green", "failed": "red", "skipped": "yellow", "cancelled": "red", "suspended": "cyan"}


def duration(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    if ms < 3_600_000:
        return f"{ms // 60_000}m{(ms % 60_000) // 1000}s"
    if ms < 86_400_000:
        return f"{ms // 3_600_000}h{(ms % 3_600_000) // 60_000}m"
    return f"{ms // 86_400_000}d{(ms % 86_400_000) // 3_600_000}h"


def time_left(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    return f"{seconds // 86400}d{(seconds % 86400) // 3600}h"


def status_text(status: str) -> str:
    return style(f"{ICONS.get(status, '?')} {status}", COLORS.get(status))


STDERR_TAIL_LINES = 10  # of a failed step's stderr, shown under its ✗ line
TAIL_LINE_WIDTH = 200  # characters of each such line; the rest is cut with …


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def elapsed(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{(whole % 3600) // 60:02d}m"


class RunProgress:
    """Prints engine events as they come: one line per step start, end, failure or skip, and each
    line a step's command prints, marked with its step (stderr lines with `!`). Under a failed
    step's ✗ line, the last lines of its stderr. On a terminal, a step running longer than a
    second shows its elapsed time on a status line rewritten in place (`\\r`) and cleared before
    any other line; never on a pipe. The one renderer of run events (`run`, `resume`, `watch`)."""

    def __init__(self, *, terminal: bool | None = None, tick: float = 1.0) -> None:
        self._lock = threading.Lock()
        self._terminal = stdout().isatty() if terminal is None else terminal
        self._tick = tick
        self._stderr: dict[tuple[str, str], deque[str]] = {}
        self._running: dict[tuple[str, str], float] = {}  # step -> monotonic time it started
        self._shown = 0  # characters of the status line now on screen
        self._ticking: threading.Event | None = None  # set to stop the ticker that is running

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        event = shown_doc(event)  # CLI-030: names, output lines and errors come from the run
        job = event.get("job", "")
        step = event.get("step", "")
        key = (str(job), str(step))
        lines: list[str] = []
        if kind == "run_started":
            lines.append(
                f"Starting workflow {style(str(event.get('workflow')), bold=True)} (run {event.get('runId')})"
            )
        elif kind == "job_started":
            lines.append(f"{style(job, 'blue')} │ start")
        elif kind == "job_skipped":
            lines.append(f"{style(job, 'blue')} │ {style('skipped', 'yellow')} (dependency)")
        elif kind == "job_completed":
            status = event.get("status", "")
            lines.append(
                f"{style(job, 'blue')} │ {status_text(status)} {duration(event.get('durationMs'))}".rstrip()
            )
        elif kind == "step_started":
            lines.append(f"{style(job, 'blue')} │ ▶ {step}")
        elif kind == "step_output":
            text = str(event.get("line"))
            if event.get("stream") == "stderr":
                lines.append(f"{style(job, 'blue')} │   {step} {style('!', 'red', bold=True)} {text}")
            else:
                lines.append(f"{style(job, 'blue')} │   {step} │ {style(text, dim=True)}")
        elif kind == "step_succeeded":
            took = duration(event.get("durationMs"))
            if event.get("heldSignal"):
                took = f"took early signal {event['heldSignal']}, held before the wait opened"
            lines.append(f"{style(job, 'blue')} │ {style('✓', 'green')} {step} {took}".rstrip())
        elif kind == "step_failed":
            allowed = " (failure allowed)" if event.get("allowedFailure") else ""
            lines.append(f"{style(job, 'blue')} │ {style('✗', 'red')} {step}{allowed}: {event.get('error')}")
            with self._lock:
                tail = list(self._stderr.get(key, ()))
            lines += [f"{style(job, 'blue')} │     {style('!', 'red', bold=True)} {text}" for text in tail]
        elif kind == "step_waiting":
            what = f"a signal ({event.get('waitId')})" if event.get("kind") == "signal" else "approval"
            lines.append(f"{style(job, 'blue')} │ ⏸ {step} waiting for {what}")
        elif kind == "wait_settled":  # a watch's, or a held signal applied by the run (WATCH-016)
            lines.append(settled_line(event))
        elif kind == "step_skipped":
            reason = event.get("reason")
            detail = f" · guard: {event.get('guard')}" if reason == "guarded" else ""
            lines.append(f"{style(job, 'blue')} │ {style('⊘', 'yellow')} {step} skipped ({reason}){detail}")
        with self._lock:
            self._track(kind, key, event)
            if lines:
                self._clear_status()
                for line in lines:
                    out(line)
        if kind in ("run_completed", "run_suspended"):
            self.close()

    def _track(self, kind: Any, key: tuple[str, str], event: dict[str, Any]) -> None:
        """What the status line and the stderr tails need to know (under the lock)."""
        if kind == "step_started":
            self._running[key] = time.monotonic()
            self._stderr.pop(key, None)
            if self._terminal and self._ticking is None:
                self._ticking = threading.Event()
                ticker = threading.Thread(
                    target=self._tick_loop, args=(self._ticking,), name="swamp-elapsed", daemon=True
                )
                ticker.start()
        elif kind == "step_output" and event.get("stream") == "stderr" and str(event.get("line")).strip():
            tail = self._stderr.setdefault(key, deque(maxlen=STDERR_TAIL_LINES))
            tail.append(cut(str(event.get("line")), TAIL_LINE_WIDTH))
        elif kind in ("step_succeeded", "step_failed", "step_waiting", "step_skipped"):
            self._running.pop(key, None)
            self._stderr.pop(key, None)

    def _tick_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self._tick):
            with self._lock:
                if not stop.is_set():
                    self._draw_status()

    def _draw_status(self) -> None:
        now = time.monotonic()
        long = [(key, now - began) for key, began in self._running.items() if now - began >= 1]
        if not long:
            self._clear_status()
            return
        parts = [f"{job} │ ◐ {step} {elapsed(seconds)}" for (job, step), seconds in long]
        width = max(10, shutil.get_terminal_size((80, 24)).columns - 1)
        text = cut("   ".join(parts), width)
        stream = stdout()
        stream.write("\r" + text + " " * max(0, self._shown - len(text)))
        stream.flush()
        self._shown = len(text)

    def _clear_status(self) -> None:
        if self._shown:
            stream = stdout()
            stream.write("\r" + " " * self._shown + "\r")
            stream.flush()
            self._shown = 0

    @property
    def status_width(self) -> int:
        """How many characters the status line takes on screen now (0: none shown)."""
        return self._shown

    def close(self) -> None:
        """Stop the elapsed-time line and clear it; call before printing anything else."""
        with self._lock:
            if self._ticking is not None:
                self._ticking.set()
                self._ticking = None
            self._running.clear()
            self._clear_status()


def settled_line(event: dict[str, Any]) -> str:
    """A `wait_settled` event (shown: CLI-030) as a line: how the wait settled, and by whom."""
    by = f" from {event['submittedBy']}" if event.get("submittedBy") else ""
    what = {"received": "signal accepted", "rejected": "rejected", "timed_out": "timed out"}
    outcome = str(event.get("outcome"))
    line = f"{event.get('job')} │ ✉ {event.get('step')}: {what.get(outcome, outcome)}"
    return f"{style(line, 'blue')}{by} ({event.get('waitId')})"


class AnswerProgress(RunProgress):
    """signal/approve --resume: says the answer was taken and the run goes on, then shows the
    continuation as `resume` does."""

    def __init__(self, headline: str) -> None:
        super().__init__()
        self._headline: str | None = headline

    def __call__(self, event: dict[str, Any]) -> None:
        if self._headline is not None:
            run_id = event.get("runId")
            which = f"run {shown(run_id)} of {shown(event.get('workflow'))}" if run_id else "the run"
            out(f"{style(self._headline, 'green')}; continuing {which}")
            self._headline = None
        super().__call__(event)


def still_open(data: dict[str, Any]) -> None:
    """What keeps a run suspended after an answer with --resume (the result's `stillOpen`)."""
    data = shown_doc(data)  # CLI-030, as in every renderer of a document
    items = data.get("stillOpen") or []
    if not items:
        out(
            f"The run was not continued; continue it with: swamp workflow resume {data['workflowName']} "
            f"--run {data['runId']}"
        )
        return
    out("The run stays suspended; still open:")
    for item in items:
        if item["kind"] == "wait":
            out(f"  a signal for {item['job']}.{item['step']} (wait {item['waitId']})")
        else:
            out(f"  an approval of {item['job']}.{item['step']}")


def run_outcome(doc: dict[str, Any]) -> None:
    doc = shown_doc(doc)
    status = doc["status"]
    name = doc["workflowName"]
    took = duration(doc.get("durationMs"))
    out()
    if status == "succeeded":
        out(f"{status_text(status)}: workflow {name} in {took} (run {doc['id']})")
    elif status == "failed":
        out(f"{status_text(status)}: workflow {name} in {took} (run {doc['id']})")
        if doc.get("interruption"):
            out(f"  {interruption_text(doc)}")
        if doc.get("failedStep"):
            out(f"  {doc['failedStep']}: {doc.get('failureReason')}")
        out(f"  Details: swamp workflow history get {doc['id']}")
    elif status == "suspended":
        out(f"{status_text(status)}: workflow {name} (run {doc['id']})")
        for wait in doc.get("waits", []):
            about = f": {wait['description']}" if wait.get("description") else ""
            out(f"  Waiting for a signal: {wait['jobName']}.{wait['stepName']}{about}")
            out(f"    wait ID {style(wait['waitId'], bold=True)}, deadline {wait['deadline']}")
        if "deadlineEnforced" in doc:
            enforcement_lines(doc["deadlineEnforced"], "  ")
        for gate in doc.get("gates", []):
            deadline = f" (deadline {gate['deadline']})" if gate.get("deadline") else ""
            out(f"  Waiting for approval: {gate['jobName']}.{gate['stepName']}: {gate['prompt']}{deadline}")
        for command in doc.get("next", []):
            out(f"  Next: {command}")
        answers = [c for c in doc.get("next", []) if c.startswith("swamp workflow signal ")]
        if len(answers) == 1 and not doc.get("gates"):
            out(f"  Or answer and continue in one command: {answers[0]} --resume")
    else:
        out(f"{status_text(status)}: workflow {name} (run {doc['id']})")
    for item in doc.get("superseded", []):
        out(f"  Earlier run {item['runId']}: {item['action']} ({item['reason']})")
    definition_note(doc)
    out(style(f"Saved to {doc.get('path')}", dim=True))
    hint = resume_hint(doc)
    if hint:
        out(f"Resume with: {hint}")


def enforcement_lines(enforced: bool, indent: str = "") -> None:
    """Whether a wait's deadline acts by itself here, and what to run when it does not (WAIT-091)."""
    if enforced:
        out(f"{indent}Deadlines are enforced: a serve fails each wait at its deadline.")
        return
    out(f"{indent}Nothing enforces deadlines here: a late wait stays open until a resume.")
    out(f"{indent}  Make deadlines act by themselves: swamp service install")
    out(f"{indent}  (or keep running: swamp serve --auto-continue --enforce-deadlines)")


def interruption_text(doc: dict[str, Any]) -> str:
    """`Interrupted at T: swamp received SIGINT; 1 step stopped (main.long), 2 not started`."""
    about = doc["interruption"]
    steps = [(job["name"], step) for job in doc.get("jobs", []) for step in job.get("steps", [])]
    stopped = [f"{job}.{step['name']}" for job, step in steps if step.get("reason") == "interrupted"]
    pending = sum(1 for _, step in steps if step["status"] == "pending")
    parts = [f"{len(stopped)} step{'s' if len(stopped) != 1 else ''} stopped"]
    if stopped:
        parts[0] += f" ({', '.join(stopped[:5])}{', ...' if len(stopped) > 5 else ''})"
    parts.append(f"{pending} not started")
    return f"Interrupted at {about.get('at')}: {about.get('reason')}; {', '.join(parts)}"


def resume_hint(doc: dict[str, Any]) -> str | None:
    """For an interrupted run, the command that retries it from the first step it stopped (or
    the first it did not start)."""
    if not doc.get("interruption") or doc.get("status") != "failed":
        return None
    steps = [step for job in doc.get("jobs", []) for step in job.get("steps", [])]
    first = next((s for s in steps if s.get("reason") == "interrupted"), None) or next(
        (s for s in steps if s["status"] == "pending"), None
    )
    if first is None:
        return None
    name = first.get("forEachTemplate") or first["name"]
    return suggested.resume(doc["workflowName"], doc["id"], from_step=name)


def definition_note(doc: dict[str, Any]) -> None:
    """RESUME-022: a resume ran the definition saved with the run, not the edited file."""
    if not doc.get("definitionChanged"):
        return
    changed = ", ".join(doc.get("definitionChanges") or [])
    out(
        style("  Note:", "yellow")
        + f" this ran the definition saved with run {doc['id']} (workflow file changed since: {changed});"
    )
    out(f"  to run the edited file start a fresh run: swamp workflow run {doc['workflowName']}")


OUTPUT_LINES = 5  # of each step's stdout and stderr, shown by history get (--lines N)
PAYLOAD_WIDTH = 1000  # characters of a payload shown by history get; --json has it whole


def run_tree(doc: dict[str, Any], lines: int = OUTPUT_LINES) -> None:
    """`history get` in log mode (RUN-014, RUN-031): the run, each step with the last `lines` lines
    of its output and what its wait or gate was told, by whom and when, then the audit trail."""
    import json

    inputs = doc.get("inputs")
    doc = shown_doc(doc)
    took = duration(doc.get("durationMs"))
    out(f"Workflow: {style(doc['workflowName'], bold=True)} (run {doc['id']})")
    if inputs:
        out(f"  inputs: {shown(json.dumps(inputs, ensure_ascii=False))}")
    starter = doc.get("startedBy") or doc.get("initiatedBy")
    if starter and "audit" in doc:  # history get: who started it, as `starter: false` judges it
        out(f"  started by: {who(starter, doc)}")
    told = {(a["job"], a["step"]): a for a in doc.get("answers") or []}
    for job in doc.get("jobs", []):
        out(f"  {ICONS.get(job['status'], '?')} {job['name']} {duration(job.get('durationMs'))}".rstrip())
        for step in job.get("steps", []):
            icon = "⚠" if step.get("allowedFailure") else ICONS.get(step["status"], "?")
            extra = f" ({step['reason']})" if step.get("reason") and step["status"] == "skipped" else ""
            out(f"    {icon} {step['name']} {duration(step.get('durationMs'))}{extra}".rstrip())
            outputs = step.get("outputs")
            for line in output_tail(outputs, "stdout", lines):
                out(f"        │ {line}")
            if step.get("error"):
                out(f"      -> {step['error']}")
            answer = told.get((job["name"], step["name"]))
            if answer is not None:
                out(f"        {answer_text(answer)}")
            failed = step["status"] == "failed"
            for line in output_tail(outputs, "stderr", max(lines, STDERR_TAIL_LINES) if failed else lines):
                out(f"        {style('!', 'red', bold=True)} {line}")
    for entry in doc.get("audit") or []:
        if entry.get("action") == "hook":
            hook_lines(entry, indent="  ")
            continue
        signal = f" ({entry['signalId']})" if entry.get("signalId") else ""
        by = who(entry.get("by"), entry)
        target = entry.get("waitId") or f"step {entry.get('step')}"  # a gate's approve/reject
        what = f"{entry.get('action')} {target}"
        override = f" (override: {entry['override']})" if entry.get("override") else ""  # ACCESS-021
        permission = permission_note(entry)
        out(f"  {entry.get('at')} {what} by {by}: {entry.get('code')}{signal}{override}{permission}")
    interrupted = " (interrupted: its process stopped)" if doc.get("interrupted") else ""
    out(f"Result: {status_text(doc['status'])}{interrupted} {took}".rstrip())
    if doc.get("interruption"):
        out(f"  {interruption_text(doc)}")
    out(style(f"Saved to: {doc.get('path')}", dim=True))
    hint = resume_hint(doc)
    if hint:
        out(f"Resume with: {hint}")


def permission_note(entry: dict[str, Any]) -> str:
    """What an audit line says of a signal permission (ACCESS-046, ACCESS-051): the one granted,
    revoked or delivered with (and its granter), or why a token was refused."""
    parts = []
    if entry.get("reason"):
        parts.append(str(entry["reason"]))
    if entry.get("permissionId"):
        parts.append(f"permission {entry['permissionId']}")
    if entry.get("grantedBy"):
        parts.append(f"granted by {entry['grantedBy']}")
    return f" [{', '.join(parts)}]" if parts else ""


HOOK_STDERR_LINES = 3  # of a hook's recorded stderr, shown under its audit line


def hook_lines(entry: dict[str, Any], indent: str) -> None:
    """A hook's audit entry (HOOK-011): when, which hook, for which wait, how it ended, and the
    last lines of its stderr when it did not end well."""
    entry = shown_doc(entry)
    code = entry.get("code")
    if code == "ok":
        how = "exit 0"
    elif code == "hook_failed":
        how = style(f"failed (exit {entry.get('exitCode')})", "red")
    elif code == "hook_timed_out":
        how = style("timed out: killed", "red")
    else:
        how = style(f"could not start: {entry.get('error')}", "red")
    took = duration(entry.get("durationMs"))
    attempt = again = ""
    if (entry.get("attempts") or 1) > 1:  # HOOK-019: each attempt of a hook with retries
        attempt = f" (attempt {entry.get('attempt')} of {entry.get('attempts')})"
        if entry.get("retryAt"):
            again = f"; next attempt at {entry.get('retryAt')}"
    out(
        f"{indent}{entry.get('at')} hook {entry.get('hook')} {entry.get('waitId')}{attempt}: "
        f"{how} after {took}{again}"
    )
    if code != "ok":
        lines = [line for line in str(entry.get("stderr") or "").splitlines() if line.strip()]
        for line in lines[-HOOK_STDERR_LINES:]:
            out(f"{indent}  {style('!', 'red', bold=True)} {cut(line, TAIL_LINE_WIDTH)}")


def answer_text(answer: dict[str, Any]) -> str:
    """One wait's or gate's answer (RUN-031): `received {"verdict": "ship"} from alice at T`,
    `approved by bob at T: reason`, `rejected by ...`, `open`, `timed_out at T`."""
    import json

    outcome = str(answer.get("outcome"))
    if outcome == "open":
        return "open: no answer yet"
    word = "from" if outcome == "received" else "by"
    by = f" {word} {who(answer['by'], answer)}" if answer.get("by") else ""
    at = f" at {answer['at']}" if answer.get("at") else ""
    text = outcome
    if outcome == "received":
        text = f"received {cut(shown(json.dumps(answer.get('payload'), ensure_ascii=False)), PAYLOAD_WIDTH)}"
    granted = f" (permission granted by {answer['grantedBy']})" if answer.get("grantedBy") else ""
    override = f" (override: {answer['override']})" if answer.get("override") else ""
    reason = f": {answer['reason']}" if answer.get("reason") and answer.get("by") else ""
    return f"{text}{by}{at}{granted}{override}{reason}"


def output_tail(outputs: Any, stream: str, count: int) -> list[str]:
    """The last `count` non-blank lines of a step's recorded `outputs.<stream>`, each cut."""
    text = outputs.get(stream) if isinstance(outputs, dict) else None
    if not isinstance(text, str) or count <= 0:
        return []
    lines = [line for line in text.splitlines() if line.strip()]
    return [cut(line, TAIL_LINE_WIDTH) for line in lines[-count:]]


def stderr_tail(outputs: Any) -> list[str]:
    """The last lines of a step's recorded stderr (a command's `outputs.stderr`), each cut."""
    text = outputs.get("stderr") if isinstance(outputs, dict) else None
    if not isinstance(text, str):
        return []
    lines = [line for line in text.splitlines() if line.strip()]
    return [cut(line, TAIL_LINE_WIDTH) for line in lines[-STDERR_TAIL_LINES:]]


def who(account: object, doc: dict[str, Any]) -> str:
    """An account, and whom it said it acted for (SWAMP_ACTOR), if anyone: `root (for alice)`."""
    behalf = doc.get("onBehalfOf")
    return shown(f"{account} (for {behalf})" if behalf else account)
