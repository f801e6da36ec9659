"""repo init."""

from __future__ import annotations

from typing import Any

from .common import (
    Group,
    call,
    click,
)
from .output import out

# -- repo ----------------------------------------------------------------------------------------


@click.group(cls=Group)
def repo() -> None:
    """Create swamp repositories.

    \b
    Example:
      swamp repo init my-repo
    """


@repo.command("init")
@click.argument("directory", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def repo_init(ctx: click.Context, directory: str | None, as_json: bool) -> None:
    """Create a repository in DIRECTORY (default: the current directory).

    Also writes .swamp/.gitignore, which keeps run state (records, waits, indexes, locks) out of
    git. On an existing repository it adds what is missing and changes nothing else, except a
    .gitignore exactly as an older swamp wrote it, which it updates.

    .swamp.yaml holds the repository's settings; hooks are commands run when a wait opens or
    settles, with the wait as JSON on stdin (README "Hooks", spec/hooks.md).

    \b
    Examples:
      swamp repo init my-repo
      echo 'hooks: {waitOpened: "sh hooks/notify.sh"}' >> my-repo/.swamp.yaml
    """

    def render(data: dict[str, Any]) -> None:
        verb = "Created" if data["created"] else "Already a repository:"
        out(f"{verb} {data['path']}")
        if data.get("gitignore") == "upgraded":
            out("Updated .swamp/.gitignore: everything under .swamp/ is run state and is ignored by git")
        out("Next: swamp model create command/shell hello && swamp workflow create hello")

    if (ctx.find_root().obj or {}).get("repo_dir"):  # REPO-009: the directory is the argument
        raise click.UsageError("repo init takes its directory as an argument: swamp repo init DIRECTORY")
    call(ctx, "repo.init", {"path": directory or "."}, as_json=as_json, repo_dir=None, render=render)
