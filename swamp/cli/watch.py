"""workflow watch: block until a run ends, printing what changes (shown by watch_render.py, which
`--watch` on run and resume uses too)."""

from __future__ import annotations

from typing import Any

from ..domain.errors import EXIT_SIGINT
from .common import call, click, output_options
from .complete import run_ids
from .terminal_text import shown
from .watch_render import WatchProgress, watch_exit, watch_outcome


def _timeout_option(func: Any) -> Any:
    from .common import DURATION

    return click.option(
        "--timeout",
        type=DURATION,
        metavar="DURATION",
        help="Stop watching after this much wall-clock time (SWAMP_NOW does not move it): seconds "
        "or a duration such as 10m; 0 checks once. Default: no limit.",
    )(func)


@click.command("watch")
@click.argument("run", shell_complete=run_ids)
@_timeout_option
@output_options
@click.pass_context
def workflow_watch(
    ctx: click.Context, run: str, timeout: float | None, as_json: bool, repo_dir: str | None
) -> None:
    """Wait until run RUN (an ID or unique prefix) leaves suspended/running, printing what
    changes: steps and their output lines, waits opened (with the signal command), signals
    accepted, gates decided, the run's status; then its outcome. A run already finished
    prints its outcome at once. Reads only: never takes the run's claim.

    \b
    Examples:
      swamp workflow watch 3f2a                   # until the run ends
      swamp workflow watch 3f2a --timeout 600     # at most ten minutes
      swamp workflow watch 3f2a --timeout 0 --json

    \b
    Exit codes:
      0  the run succeeded
      1  it ended failed or cancelled, or it is interrupted (its process stopped)
      4  --timeout passed while it was still suspended or running
      3  no such run (run_not_found, run_ambiguous)
    """
    payload: dict[str, Any] = {"run": run}
    if timeout is not None:
        payload["timeout"] = timeout
    try:
        call(
            ctx,
            "workflow.watch",
            payload,
            as_json=as_json,
            repo_dir=repo_dir,
            render=watch_outcome,
            progress=WatchProgress(),
            exit_code=watch_exit,
        )
    except KeyboardInterrupt:  # Ctrl-C stops the watching, never the run
        from .output import err

        err(f"Stopped watching; the run goes on. Watch it again with: swamp workflow watch {shown(run)}")
        ctx.exit(EXIT_SIGINT)
