"""How a watch is shown and how it exits: `workflow watch` (cli/watch.py) and `--watch` on run and
resume (common.run_rendering) both use it, so it imports neither.

Journal events are printed by the same renderer as `workflow run` (render.RunProgress); the facts
that only the record shows (a wait settled, a gate decided, the run's status) by WatchProgress.
"""

from __future__ import annotations

from typing import Any

from ..domain.errors import EXIT_FAILED, EXIT_WATCH_TIMEOUT
from .output import out, style
from .terminal_text import shown_doc


def watch_exit(data: dict[str, Any]) -> int:
    outcome = data.get("watch", {}).get("outcome")
    if outcome == "timeout":
        return EXIT_WATCH_TIMEOUT
    if outcome == "interrupted" or data.get("status") in ("failed", "cancelled"):
        return EXIT_FAILED
    return 0


class WatchProgress:
    """Prints a watch's events: the engine's own through RunProgress, and the record's facts."""

    def __init__(self, *, quiet_start: bool = False) -> None:
        from .render import RunProgress

        self.steps = RunProgress()
        self.quiet_start = quiet_start  # `run --watch` has just printed where the run stands
        self._first = True

    def __call__(self, event: dict[str, Any]) -> None:
        from .render import status_text

        event = shown_doc(event)  # CLI-030: the journal's lines are anyone's text
        kind = event.get("event")
        first, self._first = self._first, False
        if kind == "run_status":
            if first and self.quiet_start or event.get("status") in ("succeeded", "failed", "cancelled"):
                return  # the outcome says how it ended
            verb = "Watching" if first else "Now"
            out(
                f"{verb}: run {event.get('runId')} (workflow {event.get('workflow')}) is "
                f"{status_text(str(event.get('status')))}"
            )
            for command in event.get("next") or []:
                out(f"  Next: {command}")
            if "deadlineEnforced" in event:
                from .render import enforcement_lines

                enforcement_lines(bool(event["deadlineEnforced"]), "  ")
        elif kind == "deadline_passed":
            deadline_passed_lines(event)
        elif kind == "gate_decided":
            verdict = style("approved", "green") if event.get("approved") else style("rejected", "red")
            reason = f": {event['reason']}" if event.get("reason") else ""
            out(
                f"{style(str(event.get('job')), 'blue')} │ ⚖ {event.get('step')} {verdict} by "
                f"{event.get('decidedBy')}{reason}"
            )
        elif kind == "journal_truncated":
            dropped = "output lines" if event.get("dropping") == "step_output" else "events"
            note = f"(the run's journal is full: later {dropped} are not shown; the record has them)"
            out(style(note, dim=True))
        elif kind == "step_waiting" and event.get("kind") == "signal":
            self.steps(event)
            out(f"  Send it: swamp workflow signal {event.get('waitId')} --payload '<json>'")
        else:
            self.steps(event)


def deadline_passed_lines(event: dict[str, Any]) -> None:
    """WATCH-012: the moment a wait's deadline passes, and what will happen to it."""
    line = f"{event.get('job')} │ ⏰ {event.get('step')}: deadline passed at {event.get('deadline')}"
    out(f"{style(line, 'yellow')} ({event.get('waitId')})")
    if event.get("deadlineEnforced"):
        out("  A swamp serve --enforce-deadlines fails the wait now (wait_timeout).")
        return
    out("  Nothing enforces it: the run stays suspended until it is resumed (the step then fails).")
    out("  Make deadlines act by themselves: swamp service install")


def watch_outcome(doc: dict[str, Any]) -> None:
    from .render import run_outcome, status_text

    doc = shown_doc(doc)
    outcome = doc.get("watch", {}).get("outcome")
    if outcome == "timeout":
        out()
        out(
            f"{status_text(doc['status'])}: run {doc['id']} (workflow {doc['workflowName']}) is still "
            f"{doc['status']}; stopped watching (--timeout)"
        )
        out(f"  Watch again: swamp workflow watch {doc['id']}")
        return
    if outcome == "interrupted":
        steps = [s for j in doc.get("jobs", []) for s in j.get("steps", [])]
        # Where it stopped: a step recorded running, else the first one that had not finished.
        running = [s["name"] for s in steps if s.get("status") == "running"]
        unfinished = [s["name"] for s in steps if s.get("status") not in ("succeeded", "skipped")]
        step = (running or unfinished or ["STEP"])[0]
        out()
        out(
            f"{status_text('failed')}: run {doc['id']} (workflow {doc['workflowName']}) was interrupted: "
            "the process running it stopped"
        )
        out(f"  Retry it with: swamp workflow resume {doc['workflowName']} --run {doc['id']} --from {step}")
        return
    run_outcome(doc)


def watching_line(data: dict[str, Any]) -> str:
    """What `run --watch` and `resume --watch` say once the run is shown and the watch begins."""
    waiting = "for answers" if data.get("status") == "suspended" else "until it ends"
    stays = "stays suspended" if data.get("status") == "suspended" else "goes on"
    return style(f"Watching run {data['id']} {waiting}; Ctrl-C stops watching (the run {stays}).", dim=True)


def then_watch(timeout: float | None) -> Any:
    """For `run --watch` / `resume --watch` (common.call's `then`): after the run request, watch
    the run it returned unless it already ended; the result is the watch's document, with the
    run request's `superseded` kept."""

    def follow(data: dict[str, Any], use_json: bool, ask: Any) -> dict[str, Any]:
        if data.get("status") in ("succeeded", "failed", "cancelled"):
            return {**data, "watch": {"outcome": "finished"}}
        payload: dict[str, Any] = {"run": data["id"], "fromSuspension": True}
        if timeout is not None:
            payload["timeout"] = timeout
        try:  # from the line that says Ctrl-C stops the watching: so it does, at any moment
            if not use_json:
                from .render import run_outcome

                run_outcome(data)
                out()
                out(watching_line(data))  # WATCH-015: it does not look hung
            watched: dict[str, Any] = ask("workflow.watch", payload, WatchProgress(quiet_start=True))
        except KeyboardInterrupt:  # Ctrl-C stops the watching, never the run (as `watch` does)
            from ..domain.errors import EXIT_SIGINT
            from .output import err

            err(f"\nStopped watching; the run goes on. Watch it again: swamp workflow watch {data['id']}")
            raise SystemExit(EXIT_SIGINT) from None
        if "superseded" in data:
            watched["superseded"] = data["superseded"]
        return watched

    return follow
