"""After `signal` accepts an answer in log mode: what happens to the run next, said as it is.

A run that waits for nothing more goes on in one of three ways, and the advice printed names the
one that happened (CLI-038, CLI-039): a `swamp serve --auto-continue` announced in the store
continues it (app/announcements.py: then `swamp workflow watch RUN`, never `resume`); at the
payload prompt, the person continues it here (`Continue the run now? [Y/n]`, as `signal
--resume` would); or nobody does yet (`Next: swamp workflow resume ...`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import click

from ..domain import suggested
from .output import out, stdout, style
from .terminal_text import shown


def serve_continues(ctx: click.Context, repo_dir: str | None) -> bool:
    """Whether a live `swamp serve --auto-continue` follows this store. Through --connect the
    store is not ours to look at: then False (the serve there continues it itself when it can,
    and says so in its answer)."""
    from ..domain.errors import SwampError
    from .common import _repo_dir
    from .transport import connect_path

    if connect_path(ctx):
        return False
    try:
        from ..app.announcements import auto_continue_announced
        from ..app.context import App

        return auto_continue_announced(App.shared(_repo_dir(ctx, repo_dir)))
    except SwampError:  # the store cannot be read: nothing is known of a serve
        return False


def waits_for_nothing(data: dict[str, Any]) -> bool:
    """A plain signal's result (no --resume) whose run has no other wait open."""
    return (
        not data.get("held")
        and "continued" not in data
        and not data.get("openWaits")
        and data.get("runStatus") == "suspended"
    )


def moved_on(data: dict[str, Any]) -> None:
    """The run goes on without this command (CLI-038)."""
    out(
        "  The run goes on: swamp serve --auto-continue continues it. Watch it: "
        f"{suggested.watch(str(data['runId']))}"
    )


def offer(ctx: click.Context, repo_dir: str | None, render: Any) -> Any:
    """`call`'s `then` for a signal sent from the payload prompt (CLI-039): show the answer, then,
    when the run waits for nothing and no serve will continue it, ask whether to continue it here."""

    def follow(data: dict[str, Any], use_json: bool, ask: Any) -> dict[str, Any]:
        from .terminal_text import shown_doc
        from .transport import connect_path

        # Through --connect the serve there continues the run itself when it auto-continues (its
        # answer says so), and whether someone else's serve would is not ours to see: no offer.
        if use_json or connect_path(ctx) or not waits_for_nothing(data):
            return data
        render(shown_doc(data), advice=False)
        if serve_continues(ctx, repo_dir):
            moved_on(data)
            return {"shown": True}
        gates = _open_gates(ask, data)
        if gates:  # the run still waits for a decision: no offer; the approval continues it
            steps = [gate["stepName"] for gate in gates]
            for gate in gates:
                job = gate["jobName"] if steps.count(gate["stepName"]) > 1 else None
                command = suggested.approve(
                    str(data["workflowName"]), str(gate["stepName"]), str(data["runId"]), job=job, resume=True
                )
                out(f"  Next: {shown(command)}")
            return {"shown": True}
        try:
            answer = _question("Continue the run now? [Y/n] ").strip().lower()
        except EOFError:
            answer = "n"
        except KeyboardInterrupt:
            stdout().write("\n")
            _resume_later(data)
            from ..domain.errors import EXIT_SIGINT

            return {"shown": True, "exit": EXIT_SIGINT}
        if answer not in ("", "y", "yes"):
            _resume_later(data)
            return {"shown": True}
        return _continue(ctx, data, ask)

    return follow


def _question(prompt: str) -> str:
    from .prompt import _ask

    return _ask(prompt)


def _continuing() -> Any:
    """The continuation's progress, as `resume` shows it, after one line that says it began."""
    from .render import RunProgress

    class Continuing(RunProgress):
        started = False

        def __call__(self, event: dict[str, Any]) -> None:
            if not self.started:
                self.started = True
                out(f"Continuing run {shown(str(event.get('runId')))} here")
            super().__call__(event)

    return Continuing()


def _open_gates(ask: Any, data: dict[str, Any]) -> list[dict[str, Any]]:
    gates = ask("workflow.approvals", {"workflow": data["workflowName"]}, None).get("approvals") or []
    return [gate for gate in gates if gate.get("runId") == data["runId"]]


def _resume_later(data: dict[str, Any]) -> None:
    out(f"  Next: {shown(suggested.resume(str(data['workflowName']), str(data['runId'])))}")


def _continue(ctx: click.Context, data: dict[str, Any], ask: Any) -> dict[str, Any]:
    """Continue the run as `resume` does, showing it as it goes; a run that another process
    continued meanwhile is said to have moved on."""
    import gc

    from ..domain.errors import SwampError
    from .common import _interruptible
    from .transport import connect_path

    gc.enable()  # `call` pauses the collector for a quick signal; a run executes here now
    payload = {"workflow": data["workflowName"], "run": data["runId"]}
    progress = _continuing()
    stopping = (
        contextlib.nullcontext()
        if connect_path(ctx)
        else _interruptible("workflow.resume", payload, progress)
    )
    try:
        with stopping as interruption:
            run = ask("workflow.resume", payload, progress)
    except SwampError as exc:
        if exc.code in ("claim_timeout", "run_not_suspended"):  # another process continued it
            out(f"{style('The run moved on', 'yellow')}: {shown(exc.message)}")
            out(f"  Watch it: {suggested.watch(str(data['runId']))}")
            return {"shown": True}
        raise
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()
    doc: dict[str, Any] = {"continued": True, "run": run}
    code = interruption.exit_code if interruption is not None else None
    if code:
        doc["exit"] = code
    return doc
