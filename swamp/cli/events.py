"""swamp events: the repository's event log, from a terminal or a script (events.subscribe).

Log mode prints one line per event as it comes; `--json` prints one document at the end: the
events, then where the subscription got to (`cursor`) and how it ended (`outcome`), which is the
request's result with the events beside it.
"""

from __future__ import annotations

from typing import Any

from ..app.events import KINDS
from ..domain.errors import EXIT_SIGINT, SwampError
from .common import DURATION, _as_json, _repo_dir, click, output_options
from .output import err, out, print_error, print_json, style
from .terminal_text import shown, shown_doc


@click.command("events")
@click.option(
    "--after",
    metavar="CURSOR",
    help="Start after this cursor (an event's, or the one a previous `swamp events` ended at): "
    "every event after it, then live ones. Default: only events that happen from now on.",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(KINDS),
    metavar="KIND",
    help=f"Only events of this kind: {', '.join(KINDS)} (repeat for several). Default: all.",
)
@click.option("--run", "runs", multiple=True, metavar="RUN_ID", help="Only events of this run (repeat).")
@click.option(
    "--timeout",
    type=DURATION,
    metavar="DURATION",
    help="Stop after this much wall-clock time (seconds, or 10m...); 0 prints what the log holds and stops. "
    "Default: until Ctrl-C.",
)
@output_options
@click.pass_context
def events(
    ctx: click.Context,
    after: str | None,
    kinds: tuple[str, ...],
    runs: tuple[str, ...],
    timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Print what happens to the repository's runs, whichever process makes it happen: a wait
    opened (wait_opened, with its signal command), a wait settled (wait_settled, with who sent
    the signal), a run suspended (run_suspended) or finished (run_finished). Each event has a
    cursor; pass the last one back with --after to go on where you stopped, with nothing missed
    and nothing twice. A line or a part of the log that swamp did not append there (it does not
    follow the one before it) is skipped and said on stderr, never in silence.

    \b
    Examples:
      swamp events                                    # from now on, until Ctrl-C
      swamp events --kind wait_opened                 # only waits that open
      swamp events --after CURSOR --timeout 0 --json  # what happened since CURSOR, then stop
      swamp events --run 3f2a6c1e-... --timeout 600

    \b
    Exit codes:
      0  the timeout passed (or the input ended)
      3  --after is not a cursor of this repository (cursor_invalid), or its events are no
         longer kept (cursor_expired: start again from the cursor in the error's details)
      130  Ctrl-C (with --json, the document so far is printed first)
    """
    use_json = _as_json(ctx, as_json)
    payload: dict[str, Any] = {}
    if after is not None:
        payload["after"] = after
    if kinds:
        payload["kinds"] = list(kinds)
    if runs:
        payload["runs"] = list(runs)
    if timeout is not None:
        payload["timeout"] = timeout
    directory = _repo_dir(ctx, repo_dir)
    if directory is not None:
        payload["repoDir"] = directory
    seen: list[dict[str, Any]] = []

    def progress(event: dict[str, Any]) -> None:
        seen.append(event)
        if not use_json:
            show_event(event)

    from .transport import handler

    try:
        data = handler(ctx)("events.subscribe", payload, progress)
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    except KeyboardInterrupt:  # Ctrl-C: what was seen so far, and where to go on from
        cursor = seen[-1]["cursor"] if seen else after
        if use_json:
            print_json({"events": seen, "cursor": cursor, "outcome": "cancelled"})
        elif cursor:
            err(f"Stopped. Go on from here with: swamp events --after {shown(cursor)}")
        ctx.exit(EXIT_SIGINT)
    if use_json:
        print_json({"events": seen, **data})
        return
    out(style(f"({data['outcome']}) go on from here with: swamp events --after {data['cursor']}", dim=True))


def show_event(event: dict[str, Any]) -> None:
    event = shown_doc(event)  # CLI-030: events carry names, descriptions and reasons from runs
    kind = event.get("event")
    at = event.get("at", "")
    where = f"{event.get('workflow')} run {event.get('runId')}"
    if kind == "wait_opened":
        out(f"{at}  {style('wait opened', 'yellow')}   {where} {event.get('job')}/{event.get('step')}")
        described = f" ({event['description']})" if event.get("description") else ""
        out(f"    {event.get('waitId')} until {event.get('deadline')}{described}")
        out(f"    Send it: swamp workflow signal {event.get('waitId')} --payload '<json>'")
    elif kind == "wait_settled":
        by = f" from {event['submittedBy']}" if event.get("submittedBy") else ""
        out(
            f"{at}  {style('wait settled', 'blue')}  {where} {event.get('job')}/{event.get('step')}: "
            f"{event.get('outcome')}{by} ({event.get('waitId')})"
        )
    elif kind == "run_suspended":
        waits = ", ".join(event.get("waitIds") or []) or "a gate"
        out(f"{at}  {style('suspended', 'yellow')}     {where}, waiting for {waits}")
    elif kind == "run_finished":
        status = str(event.get("status"))
        colour = "green" if status == "succeeded" else "red"
        reason = f": {event['failureReason']}" if event.get("failureReason") else ""
        out(f"{at}  {style(status.ljust(13), colour)} {where}{reason}")
    else:
        out(f"{at}  {kind}  {where}")
