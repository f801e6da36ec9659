"""version: which spec and protocol this swamp speaks (the `protocol.version` request)."""

from __future__ import annotations

from typing import Any

from .. import __version__
from .common import call, click
from .output import out


@click.command("version")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def version(ctx: click.Context, as_json: bool) -> None:
    """Show the spec version, the protocol version and the request types this swamp answers.

    \b
    Examples:
      swamp version
      swamp version --json     # {"spec": "1.0.0", "protocol": 1, "requestTypes": [...]}
    """

    def render(data: dict[str, Any]) -> None:
        out(f"swamp {__version__}: spec {data['spec']}, protocol {data['protocol']}")
        out("Request types: " + ", ".join(data["requestTypes"]))

    call(ctx, "protocol.version", {}, as_json=as_json, repo_dir=None, render=render)
