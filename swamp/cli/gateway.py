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
@click.option(
    "--public-url",
    metavar="URL",
    help="The address people and systems reach the gateway at (default: gateway.publicUrl of .swamp.yaml).",
)
@click.option("--certfile", metavar="FILE", help="Serve HTTPS with this PEM certificate (with --keyfile).")
@click.option("--keyfile", metavar="FILE", help="The certificate's PEM private key (with --certfile).")
@click.option(
    "--continue/--no-continue",
    "resume",
    default=True,
    help="An answer continues the run when nothing else is open, as `signal --resume` (default: on).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.1),
    default=20.0,
    show_default=True,
    metavar="PER_SECOND",
    help="Requests a second one client address may make on average (twice that at once).",
)
@click.option(
    "--trust-proxy",
    metavar="ADDRESSES",
    help="Believe X-Forwarded-For from these addresses (comma-separated; your reverse proxy's).",
)
@click.option(
    "--connect",
    metavar="SOCKET",
    help="Ask the swamp serve on this socket instead of opening the repository and store here "
    "(also the global --connect and SWAMP_CONNECT): the gateway then needs no access to the store.",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="With --connect: a YAML file holding `gateway:` settings (publicUrl, routes) as .swamp.yaml does.",
)
@click.option("--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The repository.")
@click.pass_context
def gateway(
    ctx: click.Context,
    listen: str,
    public_url: str | None,
    certfile: str | None,
    keyfile: str | None,
    resume: bool,
    rate: float,
    trust_proxy: str | None,
    connect: str | None,
    config: str | None,
    repo_dir: str | None,
) -> None:
    """Answer waits over HTTP: one-time links for people, a JSON API, provider webhooks.

    Needs the gateway extra: pip install 'swamp[gateway]'. It prints one JSON line,
    {"listening": URL}, once it listens; logs one JSON line a request on stderr (never a token);
    stops on SIGTERM or Ctrl-C after the requests in flight are answered.

    Beside a repository it opens the store itself. With --connect SOCKET it asks that swamp serve
    instead (as its own account, a socket peer) and needs no access to the store; serve runs the
    hooks, and continues runs when started with --auto-continue.

    \b
    Routes:
      GET  /healthz                        200 {"status": "ok"}
      POST /v1/waits/WAIT_ID/signal        Authorization: Bearer TOKEN; the payload as the body
      GET  /v1/waits/WAIT_ID               Authorization: Bearer TOKEN
      GET  /a/TOKEN                        a link's answer page (swamp workflow wait link)

    \b
    Examples:
      swamp gateway --listen 127.0.0.1:8080 --public-url https://swamp.example.com
      swamp gateway --listen 0.0.0.0:8443 --certfile cert.pem --keyfile key.pem
      swamp gateway --listen 127.0.0.1:8080 --connect /run/swamp/serve.sock --config gateway.yaml
    """
    import os

    from ..domain.errors import SwampError
    from .output import print_error

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise click.UsageError(
            "the gateway needs its extra: pip install 'swamp[gateway]' (Starlette, uvicorn, Jinja2)"
        ) from None
    from ..gateway.server import Options, serve

    root = ctx.find_root().obj or {}
    options = Options(
        listen=listen,
        repo_dir=repo_dir or root.get("repo_dir"),
        public_url=public_url,
        certfile=certfile,
        keyfile=keyfile,
        resume=resume,
        rate=rate,
        trusted_proxies=trust_proxy,
        connect=connect or root.get("connect") or os.environ.get("SWAMP_CONNECT") or None,
        config=config,
    )
    try:
        ctx.exit(serve(options))
    except SwampError as exc:
        print_error(exc, bool(root.get("json")))
        ctx.exit(exc.exit_code)
