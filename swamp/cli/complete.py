"""Shell completion: `swamp completion bash|zsh|fish` prints the script, and the names and IDs
that arguments complete to.

The script is click's own (it runs `_SWAMP_COMPLETE=<shell>_complete swamp` with the words typed
so far); what each argument completes to comes from the same requests as the listings (workflow
names from `workflow.list`, run IDs from `workflow.history`, open wait IDs from `workflow.waits`),
read from the repository the command line names (`--repo-dir`, `SWAMP_REPO_DIR`, or the current
directory). Completion is never an error: outside a repository, or whatever goes wrong, there are
no candidates and nothing is printed but them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .common import click

SHELLS = ("bash", "zsh", "fish")


def _candidates(
    ctx: click.Context, request: str, payload: dict[str, Any], pick: Callable[[dict[str, Any]], Any]
) -> list[tuple[str, str]]:
    """(value, help) pairs from one request, or none at all if anything goes wrong. The shell
    prints them at the terminal (CLI-030): a help is shown with its control characters escaped,
    and a value holding one is not offered (escaped, it would not be the value)."""
    try:
        from .terminal_text import shown
        from .transport import handler

        directory = ctx.params.get("repo_dir") or ctx.find_root().params.get("repo_dir")
        data = handler(ctx)(request, {**payload, **({"repoDir": directory} if directory else {})})
        pairs = [(str(value), shown(about)) for value, about in pick(data)]
    except Exception:  # completion never fails and never prints a traceback
        return []
    # An index not rebuilt (a read-only .swamp) costs speed only: the next Tab comes here again.
    with contextlib.suppress(Exception):
        _rebuild_open_index(directory)
    return [(value, about) for value, about in pairs if shown(value) == value]


def _rebuild_open_index(directory: str | None) -> None:
    """The fast path (cli/tabcomplete.py) found the file store's open index missing or stale, or
    no recent cache of another store: write it afresh from the active runs, so that the next Tab
    is answered from it."""
    import os

    from .tabcomplete import REBUILD_ENV

    asked = os.environ.pop(REBUILD_ENV, None)
    if asked:
        from ..app.context import App
        from ..store.openindex import rebuild, write_cache

        datastore, _, store = asked.partition("\n")
        runs, _ = App.shared(directory).runs.active_runs()
        if store:
            write_cache(datastore, store, runs)
        else:
            rebuild(datastore, runs)


def _items(pairs: list[tuple[str, str]], incomplete: str) -> list[Any]:
    """The candidates; in bash, which shows no help, `VALUE  (help)` when there are several
    (bash then lists them and inserts their common start, inside the values)."""
    import os

    from click.shell_completion import CompletionItem

    from .tabcomplete import bash_line

    chosen = [(value, about) for value, about in pairs if value.startswith(incomplete)]
    if os.environ.get("_SWAMP_COMPLETE") == "bash_complete" and len(chosen) > 1:
        return [CompletionItem(bash_line(value, about)) for value, about in chosen]
    return [CompletionItem(value, help=about) for value, about in chosen]


def workflow_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    def pick(data: dict[str, Any]) -> Any:
        return ((w["name"], w.get("description") or "") for w in data["workflows"])

    return _items(_candidates(ctx, "workflow.list", {}, pick), incomplete)


def run_statuses(command: str | None) -> tuple[str, ...]:
    """The runs a command's RUN or --run can take, as cli/tabcomplete.py's table has them."""
    from .tabcomplete import ACTIVE, COMMANDS

    found = [statuses for words, (_, statuses) in COMMANDS.items() if words[-1] == command]
    return found[0] if found else ACTIVE


def run_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Run IDs, newest first, of the runs the command can take (suspended ones for signal, not
    finished ones for watch and cancel): of the workflow already named on the line, if any."""
    workflow = ctx.params.get("workflow_name")
    if workflow is None and param.name == "run_id":  # `W --run <Tab>`: click leaves W unparsed
        workflow = next((word for word in ctx.args if not word.startswith("-")), None)
    payload = {"workflow": workflow} if isinstance(workflow, str) else {}
    statuses = run_statuses(ctx.command.name)

    def pick(data: dict[str, Any]) -> Any:
        runs = (r for r in data["runs"] if r["status"] in statuses)
        return ((r["runId"], f"{r['workflowName']} {r['status']} {r['createdAt']}") for r in runs)

    return _items(_candidates(ctx, "workflow.history", payload, pick), incomplete)


def any_run_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Every run's ID, newest first (`history get`)."""

    def pick(data: dict[str, Any]) -> Any:
        return ((r["runId"], f"{r['workflowName']} {r['status']} {r['createdAt']}") for r in data["runs"])

    return _items(_candidates(ctx, "workflow.history", {}, pick), incomplete)


def wait_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """The IDs of open (unexpired) waits."""
    from .tabcomplete import wait_help

    def pick(data: dict[str, Any]) -> Any:
        return (
            (w["waitId"], wait_help(w["workflowName"], w["jobName"], w["stepName"], w.get("description")))
            for w in data["waits"]
        )

    return _items(_candidates(ctx, "workflow.waits", {}, pick), incomplete)


def step_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """The steps holding an open wait, of the run --run names (a prefix: of the runs it starts)."""
    from .tabcomplete import step_help

    run = ctx.params.get("run_id") or ""

    def pick(data: dict[str, Any]) -> Any:
        steps: dict[str, str] = {}
        for w in data["waits"]:
            if w["runId"].startswith(run):
                steps.setdefault(w["stepName"], step_help(w["workflowName"], w["jobName"], w["waitId"]))
        return sorted(steps.items())

    return _items(_candidates(ctx, "workflow.waits", {}, pick), incomplete)


def workflow_or_wait(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """`reject WORKFLOW STEP` or `reject WAIT_ID`: both."""
    if incomplete.startswith("wait_"):
        return wait_ids(ctx, param, incomplete)
    return [*workflow_names(ctx, param, incomplete), *wait_ids(ctx, param, incomplete)]


def history_args(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """`history [NAME]` or `history get RUN`."""
    from click.shell_completion import CompletionItem

    given = ctx.params.get("args") or ()
    if not given:
        head = [CompletionItem("get", help="show one run whole")] if "get".startswith(incomplete) else []
        return [*head, *workflow_names(ctx, param, incomplete)]
    if tuple(given) == ("get",):
        return any_run_ids(ctx, param, incomplete)
    return []


def model_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    pairs = _candidates(ctx, "model.list", {}, lambda data: ((m["name"], m["type"]) for m in data["models"]))
    return _items(pairs, incomplete)


@click.command("completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    Commands, options, workflow names, run IDs and open wait IDs complete with Tab.

    \b
    Examples:
      eval "$(swamp completion bash)"                    # in ~/.bashrc
      eval "$(swamp completion zsh)"                     # in ~/.zshrc
      swamp completion fish > ~/.config/fish/completions/swamp.fish
    """
    from click.shell_completion import get_completion_class

    from .main import cli
    from .output import out

    cls = get_completion_class(shell)
    assert cls is not None  # the choices above are click's own shells
    out(cls(cli, {}, "swamp", "_SWAMP_COMPLETE").source().rstrip("\n"))
