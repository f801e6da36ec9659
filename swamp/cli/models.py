"""model create / list / get / type list."""

from __future__ import annotations

from typing import Any

from .common import (
    Group,
    call,
    click,
    output_options,
    wide_option,
)
from .complete import model_names
from .output import out, style

# -- model -------------------------------------------------------------------------------------------


@click.group(cls=Group)
def model() -> None:
    """Create and inspect model definitions and types.

    \b
    Examples:
      swamp model create command/shell hello
      swamp model type list
    """


@model.command("create")
@click.argument("type_name", metavar="TYPE")
@click.argument("name")
@output_options
@click.pass_context
def model_create(ctx: click.Context, type_name: str, name: str, as_json: bool, repo_dir: str | None) -> None:
    """Create models/TYPE/NAME.yaml, a definition of model type TYPE.

    \b
    Example:
      swamp model create command/shell hello
    """

    def render(data: dict[str, Any]) -> None:
        out(f"Created {data['path']} ({data['type']})")

    call(
        ctx,
        "model.create",
        {"type": type_name, "name": name},
        as_json=as_json,
        repo_dir=repo_dir,
        render=render,
    )


@model.command("list")
@wide_option
@output_options
@click.pass_context
def model_list(ctx: click.Context, wide: bool, as_json: bool, repo_dir: str | None) -> None:
    """List model definitions.

    At a narrow terminal the path is cut first; --wide shows every column whole.
    On a pipe the table is plain, every cell whole; programs should read --json.

    \b
    Examples:
      swamp model list
      swamp model list --json
    """
    from .tables import table

    def render(data: dict[str, Any]) -> None:
        if not data["models"]:
            out("No models yet. Create one with: swamp model create command/shell hello")
        else:
            table(
                [[m["name"], m["type"], m["path"]] for m in data["models"]],
                ["NAME", "TYPE", "PATH"],
                wide=wide,
            )
        for problem in data["problems"]:
            out(style(f"broken: {problem['path']}: {problem['error']}", "red"))

    call(ctx, "model.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)


@model.command("get")
@click.argument("name", shell_complete=model_names)
@output_options
@click.pass_context
def model_get(ctx: click.Context, name: str, as_json: bool, repo_dir: str | None) -> None:
    """Show model definition NAME (by name or id).

    \b
    Example:
      swamp model get hello
    """

    def render(data: dict[str, Any]) -> None:
        from ..store.yamlio import dump_yaml

        shown = {k: v for k, v in data.items() if k not in ("typeInfo",)}
        out(dump_yaml(shown).rstrip())
        if "typeInfo" in data:
            out(f"methods: {', '.join(data['typeInfo']['methods'])}")

    call(ctx, "model.get", {"model": name}, as_json=as_json, repo_dir=repo_dir, render=render)


@model.group("type", cls=Group)
def model_type() -> None:
    """Inspect model types (builtin and extensions/models/*.py).

    \b
    Example:
      swamp model type list --json
    """


@model_type.command("list")
@wide_option
@output_options
@click.pass_context
def model_type_list(ctx: click.Context, wide: bool, as_json: bool, repo_dir: str | None) -> None:
    """List model types, and extension files that failed to load.

    At a narrow terminal the methods and the source are cut first; --wide shows every column
    whole. On a pipe the table is plain, every cell whole; programs should read --json.

    \b
    Examples:
      swamp model type list
      swamp model type list --json
    """
    from .tables import table

    def render(data: dict[str, Any]) -> None:
        table(
            [[t["type"], t["version"], ", ".join(t["methods"]), t["source"]] for t in data["types"]],
            ["TYPE", "VERSION", "METHODS", "SOURCE"],
            wide=wide,
        )
        for problem in data["problems"]:
            out(style(f"broken: {problem['path']}: {problem['error']}", "red"))

    call(ctx, "model.type.list", {}, as_json=as_json, repo_dir=repo_dir, render=render)
