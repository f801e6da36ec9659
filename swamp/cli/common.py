"""What every command shares: the click flavour, output options, and `call` (request, then render)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from ..domain.errors import EXIT_FAILED, InternalError, SwampError
from .output import print_error, print_json

# The command groups: `swamp workflow` alone (or `swamp model type`) prints that group's help.
_GROUP_WORDS = frozenset({"workflow", "model", "type", "repo", "wait"})


def _shows_help(argv: list[str]) -> bool:
    """Whether this process will print help: `-h`/`--help`, or no command below the groups."""
    if os.environ.get("_SWAMP_COMPLETE"):  # shell completion: fast, never help
        return False
    return not argv or bool({"-h", "--help"} & set(argv)) or set(argv) <= _GROUP_WORDS


# rich-click renders help beautifully but costs ~25 ms of import; commands that only do work (a
# `signal` in a script's loop) parse with plain click, which rich-click wraps with the same API.
if _shows_help(sys.argv[1:]):
    import rich_click as click

    click.Group = click.RichGroup  # the lazy groups below subclass the rich flavour
    click.rich_click.USE_RICH_MARKUP = False
    # No arguments panel: it would name each argument by its Python name (TYPE_NAME) where the
    # usage line and the description say its metavar (TYPE); the usage line is the one place.
    click.rich_click.SHOW_ARGUMENTS = False
    click.rich_click.MAX_WIDTH = 100
    _rich_text = click.RichHelpFormatter.rich_text

    def _rich_text_keeping_indents(self: Any, text: Any, style: Any = "") -> Any:
        # rich-click dedents each text it renders (inspect.cleandoc, which ignores the first line):
        # an `Examples:` block right after a help's first line lost the indent of its examples.
        # A leading newline makes every line count; cleandoc drops it again.
        return _rich_text(self, "\n" + text if isinstance(text, str) else text, style)

    click.RichHelpFormatter.rich_text = _rich_text_keeping_indents
else:
    import click  # type: ignore[no-redef]

Renderer = Callable[[dict[str, Any]], None]
Then = Callable[[dict[str, Any], bool, Callable[..., Any]], dict[str, Any]]


def _as_json(ctx: click.Context, local: bool) -> bool:
    root = ctx.find_root()
    return local or bool(root.obj and root.obj.get("json"))


def _repo_dir(ctx: click.Context, local: str | None) -> str | None:
    root = ctx.find_root()
    return local or (root.obj or {}).get("repo_dir")


def call(
    ctx: click.Context,
    request: str,
    payload: dict[str, Any],
    *,
    as_json: bool,
    repo_dir: str | None,
    render: Renderer,
    progress: Callable[[dict[str, Any]], None] | None = None,
    exit_code: Callable[[dict[str, Any]], int] = lambda data: 0,
    then: Then | None = None,
) -> None:
    """Answer `request` and render its result. `then` (run --watch) follows the result with more
    requests, `then(data, use_json, ask)` with `ask(request, payload, progress)`, and returns the
    document to render in its place."""
    use_json = _as_json(ctx, as_json)
    directory = _repo_dir(ctx, repo_dir)
    if directory is not None:
        payload = {**payload, "repoDir": directory}
    if request not in QUICK_REQUESTS or payload.get("resume") or not gc.isenabled():
        _answer(ctx, request, payload, use_json, render, progress, exit_code, then)
        return
    # A quick request reads a few records and writes at most one, and the process ends with it:
    # nothing it allocates forms cycles worth collecting, while the collector would walk every
    # object that its imports create. Frozen on the way out, so that no late collection walks them.
    gc.disable()
    try:
        _answer(ctx, request, payload, use_json, render, progress, exit_code, then)
    finally:
        gc.freeze()
        gc.enable()


def _answer(
    ctx: click.Context,
    request: str,
    payload: dict[str, Any],
    use_json: bool,
    render: Renderer,
    progress: Callable[[dict[str, Any]], None] | None,
    exit_code: Callable[[dict[str, Any]], int],
    then: Then | None = None,
) -> None:
    from .transport import connect_path, handler

    handle = handler(ctx)

    def ask(follow_up: str, more: dict[str, Any], shown: Callable[[dict[str, Any]], None] | None) -> Any:
        repo = {"repoDir": payload["repoDir"]} if "repoDir" in payload else {}
        return handle(follow_up, {**more, **repo}, None if use_json else shown)

    # Through --connect the run executes in serve: Ctrl-C cancels the request there (transport.py).
    stopping = contextlib.nullcontext() if connect_path(ctx) else _interruptible(request, payload, progress)
    try:
        with stopping as interruption:
            data = handle(request, payload, None if use_json else progress)
        if then is not None and (interruption is None or interruption.exit_code is None):
            warned = data.get("hookWarnings") if isinstance(data, dict) else None
            if warned and not use_json:
                hook_warnings(warned)  # before watching: the watch may go on for hours
            data = then(data, use_json, ask)
            if warned and use_json and isinstance(data, dict):
                data = {**data, "hookWarnings": warned}
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    except Exception as exc:  # never a bare traceback
        if os.environ.get("SWAMP_DEBUG"):
            raise
        error = InternalError(
            f"unexpected error: {type(exc).__name__}: {exc}. Run again with SWAMP_DEBUG=1 for a traceback"
        )
        print_error(error, use_json)
        ctx.exit(error.exit_code)
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()  # the elapsed-time line is cleared before anything else is printed
    if use_json:
        print_json(data)
    else:
        from .terminal_text import shown_doc

        # CLI-030: a renderer gets the document with every string's control characters shown as
        # escapes, unless it prints values as JSON and shows the rest itself (terminal_text.exact).
        render(data if getattr(render, "exact", False) else shown_doc(data))
        if data.get("hookWarnings") and then is None:
            hook_warnings(data["hookWarnings"])
    # Stopped by a signal: 130 or 143 whatever the run's status (CLI-006), after the run is shown.
    code = (interruption.exit_code if interruption is not None else None) or exit_code(data)
    if code:
        ctx.exit(code)


def hook_warnings(warnings: list[dict[str, Any]]) -> None:
    """HOOK-016 in log mode: a line on stderr for each hook that failed, naming it, its event,
    how it ended, whether it is tried again, and where to see more."""
    from .output import err
    from .terminal_text import shown

    for w in warnings:
        if w.get("code") == "hook_timed_out":
            how = "timed out"
        elif w.get("code") == "hook_not_started":
            how = f"could not start ({w.get('error') or 'unknown'})"
        else:
            how = f"failed (exit {w.get('exitCode')})"
        again = (
            f" on attempt {w.get('attempt')} of {w.get('attempts')}; next attempt at {w['retryAt']}"
            if w.get("retryAt")
            else ""
        )
        err(
            shown(
                f"swamp: warning: hook {w.get('hook')} ({w.get('event')}) for {w.get('waitId')} "
                f"{how}{again}; see: {w.get('next')}"
            )
        )


def _interruptible(
    request: str, payload: dict[str, Any], progress: Callable[[dict[str, Any]], None] | None
) -> contextlib.AbstractContextManager[Any]:
    """Ctrl-C / SIGTERM handling (cli/interrupt.py) for a request that may execute a run."""
    from ..protocol.requests import executes

    if not executes(request, payload):
        return contextlib.nullcontext()
    from .interrupt import interruptible

    return interruptible(lambda: getattr(progress, "status_width", 0))


# Requests that neither run steps nor load extension code, so their process is short (see `call`);
# not when their payload says `resume` (signal --resume executes the run).
QUICK_REQUESTS = frozenset(
    {
        "workflow.signal",
        "workflow.waits",
        "workflow.wait.show",
        "workflow.approvals",
        "workflow.history",
        "workflow.list",
        "workflow.get",
    }
)

COMMAND_REQUESTS = {
    "repo init": "repo.init",
    "workflow run": "workflow.run",
    "workflow list": "workflow.list",
    "workflow get": "workflow.get",
    "workflow create": "workflow.create",
    "workflow validate": "workflow.validate",
    "workflow history": "workflow.history",
    "workflow approve": "workflow.approve",
    "workflow reject": "workflow.reject",
    "workflow approvals": "workflow.approvals",
    "workflow resume": "workflow.resume",
    "workflow cancel": "workflow.cancel",
    "workflow signal": "workflow.signal",
    "workflow waits": "workflow.waits",
    "workflow wait show": "workflow.wait.show",
    "workflow wait grant": "workflow.wait.grant",
    "workflow wait revoke": "workflow.wait.revoke",
    "workflow wait link": "workflow.wait.link",
    "workflow watch": "workflow.watch",
    "events": "events.subscribe",
    "model create": "model.create",
    "model list": "model.list",
    "model get": "model.get",
    "model type list": "model.type.list",
}


def _serve_command_jsonl(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--jsonl on a command: every stdin line is one payload of that command's request type."""
    if not value or ctx.resilient_parsing:
        return
    from ..protocol.jsonl import serve_stdio
    from .transport import connect_path

    if connect_path(ctx):
        raise click.UsageError(
            "--jsonl answers requests here; through --connect, use the serve's socket itself "
            "(it speaks the same frames) or leave out --connect",
            ctx,
        )
    path = ctx.command_path.split(" ", 1)[1] if " " in ctx.command_path else ""
    # Eager: this runs before the command's own --repo-dir is parsed, so read it from the argv.
    argv = (ctx.find_root().obj or {}).get("argv", [])
    ignored = _request_words(argv, path.split())
    if {"-h", "--help"} & set(ignored):
        return  # the help option, eager too, prints the help and ends the command
    if ignored:
        shown = " ".join(ignored)
        raise click.UsageError(
            "--jsonl reads each request's payload from stdin (one JSON object a line) and takes no "
            f"arguments or options besides --repo-dir; give '{shown}' in the payloads instead",
            ctx,
        )
    local = _option_value(argv, "--repo-dir")
    ctx.exit(serve_stdio(repo_dir=_repo_dir(ctx, local), implied_type=COMMAND_REQUESTS[path]))


def _request_words(argv: list[str], command: list[str]) -> list[str]:
    """What the command line says after the command's words besides --jsonl, --json and
    --repo-dir: arguments and request options, which --jsonl would silently ignore."""
    at = 0
    for word in command:  # the command's words, in order, after any options given before them
        at = argv.index(word, at) + 1 if word in argv[at:] else at
    rest, words = argv[at:], []
    skip = secret = False
    for arg in rest:
        if skip:
            skip = False
        elif secret:  # a signal permission's token is never shown (ACCESS-063)
            secret = False
            words.append("TOKEN")
        elif arg == "--repo-dir":
            skip = True
        elif arg.startswith("--token="):
            words.append("--token=TOKEN")
        elif arg not in ("--jsonl", "--json") and not arg.startswith("--repo-dir="):
            secret = arg == "--token"
            words.append(arg)
    return words


def _option_value(argv: list[str], name: str) -> str | None:
    """The value of the last `name VALUE` or `name=VALUE` in argv."""
    found = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
    return found


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--jsonl",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_serve_command_jsonl,
        help="Read one JSON payload per stdin line and answer each with JSON-lines frames "
        "(no other argument or option but --repo-dir).",
    )(func)
    func = click.option(
        "--repo-dir",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="The repository (default: found from the current directory).",
    )(func)
    func = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of log lines."
    )(func)
    return func


def wide_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """--wide on a listing command: every column whole, whatever the terminal's width."""
    return click.option(
        "--wide",
        is_flag=True,
        help="Show every column whole, even past the terminal's width (scripts: use --json).",
    )(func)


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter("must be a finite number of seconds")
    return value


class Duration(click.ParamType):
    """An option that takes a duration: a number of seconds or 90s, 10m, 1h30m, 2d, PT10M, read by
    the one parser of domain/durations.py (WF-041); a value that is none is a usage error."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, float)):
            return value
        from ..domain.durations import parse_duration

        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()


def claim_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--claim-timeout",
        type=DURATION,
        metavar="DURATION",
        help="How long to wait for the run's claim when another command holds it (default 5).",
    )(func)


def input_options(value_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--input (repeatable) and --input-file, as run and resume take them."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option(
            "--input-file", type=click.Path(dir_okay=False), help="A YAML or JSON file of inputs."
        )(func)
        return click.option("--input", "-i", "inputs", multiple=True, metavar="K=V", help=value_help)(func)

    return decorate


def read_inputs(ctx: click.Context, inputs: tuple[str, ...], input_file: str | None, as_json: bool) -> Any:
    """The inputs the options describe; bad syntax is printed as a usage error and ends the command."""
    from ..domain.errors import UsageError
    from .inputs import parse_inputs

    try:
        return parse_inputs(inputs, input_file)
    except UsageError as exc:
        print_error(exc, _as_json(ctx, as_json))
        ctx.exit(exc.exit_code)


def _drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def watch_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--watch",
        is_flag=True,
        help="If the run suspends, keep watching it (as `swamp workflow watch`) until it ends; "
        "Ctrl-C stops only the watching. Exit 0 succeeded, 1 failed/cancelled/interrupted.",
    )(func)


def run_rendering(
    watch: bool,
    render: Renderer,
    progress: Callable[[dict[str, Any]], None],
    exit_code: Callable[[dict[str, Any]], int],
) -> dict[str, Any]:
    """`call`'s rendering arguments for run and resume, and with --watch (cli/watch_render.py)."""
    if not watch:
        return {"render": render, "progress": progress, "exit_code": exit_code}
    from .watch_render import then_watch, watch_exit, watch_outcome

    return {"render": watch_outcome, "progress": progress, "exit_code": watch_exit, "then": then_watch(None)}


def _run_exit(data: dict[str, Any]) -> int:
    return EXIT_FAILED if data.get("status") in ("failed", "cancelled") else 0


def _answer_exit(data: dict[str, Any]) -> int:
    """signal/approve --resume: as resume when the run was continued, else 0 (it stays suspended)."""
    return _run_exit(data["run"]) if data.get("continued") else 0


def call_answer(
    ctx: click.Context,
    request: str,
    payload: dict[str, Any],
    *,
    headline: str,
    as_json: bool,
    repo_dir: str | None,
    render: Renderer,
) -> None:
    """An answer (signal, approve, reject): with `resume` in the payload, the continuation is shown
    as `resume` shows it (after `headline`) and the command exits as `resume` does."""
    if not payload.get("resume"):
        call(ctx, request, payload, as_json=as_json, repo_dir=repo_dir, render=render)
        return
    from .render import AnswerProgress

    call(
        ctx,
        request,
        payload,
        as_json=as_json,
        repo_dir=repo_dir,
        render=render,
        progress=AnswerProgress(headline),
        exit_code=_answer_exit,
    )


class Group(click.Group):  # type: ignore[misc]
    """A command group that, named alone (`swamp workflow`), prints its help to stdout and exits 0,
    as `swamp` alone does (CLI-008, CLI-015); click's default is a usage error on stderr."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        return list(super().parse_args(ctx, args))


class LazyGroup(Group):
    """A group whose subcommands are imported only when used, so a command starts fast."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> Any:
        if name in self.lazy:
            module_name, attribute = self.lazy[name].split(":")
            return getattr(importlib.import_module(module_name, __package__), attribute)
        return super().get_command(ctx, name)
