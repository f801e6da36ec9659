"""Log-mode renderers: readable lines for people, with the exact follow-up commands to type."""

from __future__ import annotations

import threading
from typing import Any

from .output import out, style

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


class RunProgress:
    """Prints engine events as they come: one line per step start, end, failure or skip."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        job = event.get("job", "")
        step = event.get("step", "")
        line: str | None = None
        if kind == "run_started":
            line = (
                f"Starting workflow {style(str(event.get('workflow')), bold=True)} (run {event.get('runId')})"
            )
        elif kind == "job_started":
            line = f"{style(job, 'blue')} │ start"
        elif kind == "job_skipped":
            line = f"{style(job, 'blue')} │ {style('skipped', 'yellow')} (dependency)"
        elif kind == "job_completed":
            status = event.get("status", "")
            line = (
                f"{style(job, 'blue')} │ {status_text(status)} {duration(event.get('durationMs'))}".rstrip()
            )
        elif kind == "step_started":
            line = f"{style(job, 'blue')} │ ▶ {step}"
        elif kind == "step_output":
            line = f"{style(job, 'blue')} │   {style(str(event.get('line')), dim=True)}"
        elif kind == "step_succeeded":
            took = duration(event.get("durationMs"))
            line = f"{style(job, 'blue')} │ {style('✓', 'green')} {step} {took}".rstrip()
        elif kind == "step_failed":
            allowed = " (failure allowed)" if event.get("allowedFailure") else ""
            line = f"{style(job, 'blue')} │ {style('✗', 'red')} {step}{allowed}: {event.get('error')}"
        elif kind == "step_waiting":
            what = f"a signal ({event.get('waitId')})" if event.get("kind") == "signal" else "approval"
            line = f"{style(job, 'blue')} │ ⏸ {step} waiting for {what}"
        elif kind == "step_skipped":
            reason = event.get("reason")
            detail = f" · guard: {event.get('guard')}" if reason == "guarded" else ""
            line = f"{style(job, 'blue')} │ {style('⊘', 'yellow')} {step} skipped ({reason}){detail}"
        if line is not None:
            with self._lock:
                out(line)


class AnswerProgress:
    """signal/approve --resume: says the answer was taken and the run goes on, then shows the
    continuation as `resume` does (RunProgress)."""

    def __init__(self, headline: str) -> None:
        self._headline: str | None = headline
        self._progress = RunProgress()

    def __call__(self, event: dict[str, Any]) -> None:
        if self._headline is not None:
            run_id = event.get("runId")
            which = f"run {run_id} of {event.get('workflow')}" if run_id else "the run"
            out(f"{style(self._headline, 'green')}; continuing {which}")
            self._headline = None
        self._progress(event)


def still_open(data: dict[str, Any]) -> None:
    """What keeps a run suspended after an answer with --resume (the result's `stillOpen`)."""
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
    status = doc["status"]
    name = doc["workflowName"]
    took = duration(doc.get("durationMs"))
    out()
    if status == "succeeded":
        out(f"{status_text(status)}: workflow {name} in {took} (run {doc['id']})")
    elif status == "failed":
        out(f"{status_text(status)}: workflow {name} in {took} (run {doc['id']})")
        if doc.get("failedStep"):
            out(f"  {doc['failedStep']}: {doc.get('failureReason')}")
        out(f"  Details: swamp workflow history get {doc['id']}")
    elif status == "suspended":
        out(f"{status_text(status)}: workflow {name} (run {doc['id']})")
        for wait in doc.get("waits", []):
            about = f": {wait['description']}" if wait.get("description") else ""
            out(f"  Waiting for a signal: {wait['jobName']}.{wait['stepName']}{about}")
            out(f"    wait ID {style(wait['waitId'], bold=True)}, deadline {wait['deadline']}")
        for gate in doc.get("gates", []):
            deadline = f" (deadline {gate['deadline']})" if gate.get("deadline") else ""
            out(f"  Waiting for approval: {gate['jobName']}.{gate['stepName']}: {gate['prompt']}{deadline}")
        for command in doc.get("next", []):
            out(f"  Next: {command}")
    else:
        out(f"{status_text(status)}: workflow {name} (run {doc['id']})")
    for item in doc.get("superseded", []):
        out(f"  Earlier run {item['runId']}: {item['action']} ({item['reason']})")
    out(style(f"Saved to {doc.get('path')}", dim=True))


def run_tree(doc: dict[str, Any]) -> None:
    took = duration(doc.get("durationMs"))
    out(f"Workflow: {style(doc['workflowName'], bold=True)} (run {doc['id']})")
    if doc.get("inputs"):
        out(f"  inputs: {doc['inputs']}")
    for job in doc.get("jobs", []):
        out(f"  {ICONS.get(job['status'], '?')} {job['name']} {duration(job.get('durationMs'))}".rstrip())
        for step in job.get("steps", []):
            icon = "⚠" if step.get("allowedFailure") else ICONS.get(step["status"], "?")
            extra = f" ({step['reason']})" if step.get("reason") and step["status"] == "skipped" else ""
            out(f"    {icon} {step['name']} {duration(step.get('durationMs'))}{extra}".rstrip())
            if step.get("error"):
                out(f"      -> {step['error']}")
    for entry in doc.get("audit") or []:
        signal = f" ({entry['signalId']})" if entry.get("signalId") else ""
        by = who(entry.get("by"), entry)
        what = f"{entry.get('action')} {entry.get('waitId')}"
        out(f"  {entry.get('at')} {what} by {by}: {entry.get('code')}{signal}")
    interrupted = " (interrupted: its process stopped)" if doc.get("interrupted") else ""
    out(f"Result: {status_text(doc['status'])}{interrupted} {took}".rstrip())
    out(style(f"Saved to: {doc.get('path')}", dim=True))


def table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    out("  ".join(style(h.ljust(w), bold=True) for h, w in zip(headers, widths, strict=False)).rstrip())
    for row in rows:
        out("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip())


def who(account: object, doc: dict[str, Any]) -> str:
    """An account, and whom it said it acted for (SWAMP_ACTOR), if anyone: `root (for alice)`."""
    behalf = doc.get("onBehalfOf")
    return f"{account} (for {behalf})" if behalf else str(account)
