"""swamp gateway: the optional HTTP edge (swamp/gateway), its own process."""

from __future__ import annotations

from .common import click


@click.command("gateway")
@click.option(
    "--listen",
    metavar="HOST:PORT",
    required=True,
    help="Where to accept HTTP (port 0 picks a free one; the address is printed as a JSON line).",
)
@click.option("--public-url", metavar="URL", help="The address people and systems reach the gateway at.")
@click.option("--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The repository.")
@click.pass_context
def gateway(ctx: click.Context, listen: str, public_url: str | None, repo_dir: str | None) -> None:
    """Answer waits over HTTP: one-time links for people, a JSON API, provider webhooks.

    Needs the gateway extra: pip install 'swamp[gateway]'.

    \b
    Examples:
      swamp gateway --listen 127.0.0.1:8080 --public-url https://swamp.example.com
    """
    from ..domain.errors import SwampError
    from .output import print_error

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise click.UsageError(
            "the gateway needs its extra: pip install 'swamp[gateway]' (Starlette, uvicorn, Jinja2)"
        ) from None
    from ..gateway.server import serve

    root = ctx.find_root().obj or {}
    try:
        ctx.exit(serve(listen, repo_dir=repo_dir or root.get("repo_dir"), public_url=public_url))
    except SwampError as exc:
        print_error(exc, bool(root.get("json")))
        ctx.exit(exc.exit_code)
