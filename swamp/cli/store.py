"""swamp store status | migrate: which run store is in use, and its schema (issue 17)."""

from __future__ import annotations

from typing import Any

from .common import Group, call, click
from .output import out


@click.group(cls=Group)
def store() -> None:
    """Show and prepare where run state lives: files under .swamp (the default) or PostgreSQL.

    The store is chosen by SWAMP_STORE_URL, else `store:` in .swamp.yaml, else files. Passwords
    come from libpq's usual places (PGPASSWORD, ~/.pgpass, a service file), never .swamp.yaml.
    Give each tenant its own database: schemas do not isolate roles, and LISTEN/NOTIFY are
    database-wide (spec/store.md, "Trust").

    \b
    Examples:
      swamp store status
      SWAMP_STORE_URL=postgresql://db.example/swamp swamp store migrate
      echo 'store: service=swamp' >> .swamp.yaml && swamp store status --json
    """


@store.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def store_status(ctx: click.Context, as_json: bool) -> None:
    """Which run store this repository uses, where, and its schema version.

    Outside a repository, the store SWAMP_STORE_URL names. A PostgreSQL store whose schema is not
    this swamp's is shown (current: false) with what to do; one that cannot be reached is
    storage_error (exit 1).

    \b
    Examples:
      swamp store status
      swamp store status --json
    """

    def render(data: dict[str, Any]) -> None:
        if data["kind"] == "file":
            out(f"Store: files under {data['location']} (the default)")
            out(f"Runs: {data['runs']}")
            if data.get("eventsSkipped"):  # EVENT-022
                out(f"Event log: {data['eventsSkipped']} line(s) or segment(s) swamp did not append, skipped")
            return
        out(f"Store: PostgreSQL at {data['location']}")
        version, expected = data["schemaVersion"], data["expected"]
        if data["current"]:
            out(f"Schema: {data['schema']}, version {version} (this swamp's)")
        elif version == 0:
            out(f"Schema: {data['schema']}, no swamp tables yet; create them with: swamp store migrate")
        elif version < expected:
            out(
                f"Schema: {data['schema']}, version {version}, older than this swamp's {expected}; "
                "upgrade it with: swamp store migrate"
            )
        else:
            out(
                f"Schema: {data['schema']}, version {version}, newer than this swamp's {expected}; "
                "upgrade swamp on this host"
            )
        out(f"Runs: {data['runs']}")

    call(ctx, "store.status", {}, as_json=as_json, repo_dir=None, render=render)


@store.command("migrate")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def store_migrate(ctx: click.Context, as_json: bool) -> None:
    """Create or upgrade the PostgreSQL store's tables to this swamp's schema version.

    Idempotent, and safe to run from several hosts at once (an advisory lock makes the second
    wait, then find nothing to do). Outside a repository it migrates the store SWAMP_STORE_URL
    names. On the file store there is nothing to migrate.

    \b
    Examples:
      swamp store migrate
      SWAMP_STORE_URL='postgresql:///swamp?host=/run/postgresql' swamp store migrate --json
    """

    def render(data: dict[str, Any]) -> None:
        if data["kind"] == "file":
            out("This repository keeps its runs in files under .swamp: there is nothing to migrate")
            return
        where = f"the PostgreSQL store at {data['location']} (schema {data['schema']})"
        if data["applied"]:
            out(f"Migrated {where} from version {data['from']} to {data['to']}")
        else:
            out(f"Nothing to migrate: {where} is at version {data['to']}, this swamp's")

    call(ctx, "store.migrate", {}, as_json=as_json, repo_dir=None, render=render)


@store.command("copy")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="ADDRESS",
    help="Where to copy the runs: `file` (this repository's .swamp) or a PostgreSQL store "
    "(postgresql://host/dbname, service=NAME). It must hold no run yet.",
)
@click.option(
    "--from",
    "from_",
    metavar="ADDRESS",
    help="Where to copy them from (`file` or a PostgreSQL address). Default: the store this "
    "repository uses (SWAMP_STORE_URL, else .swamp.yaml, else files).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The repository to work on."
)
@click.pass_context
def store_copy(ctx: click.Context, to: str, from_: str | None, as_json: bool, repo_dir: str | None) -> None:
    """Copy every run (its record, wait index entries, audit trail and held signals) from one
    store to another, then verify both sides by counts and a digest.

    Nothing is overwritten: a target that already holds a run is refused (store_not_empty) before
    anything is written. Runs must not change while they are copied: stop the serves and commands
    working on them first (a run whose claim is held is refused, store_busy). The event log is not
    copied (subscribers start again on the new store). The source is left as it is; point the
    repository at the target afterwards (`store:` in .swamp.yaml, or SWAMP_STORE_URL).

    \b
    Examples:
      swamp store copy --to 'postgresql://db.example/swamp'      # files -> PostgreSQL
      SWAMP_STORE_URL=service=swamp swamp store copy --to file   # PostgreSQL -> .swamp
      swamp store copy --from file --to service=swamp --json

    \b
    Exit codes:
      0  copied and verified
      1  the copy read back differs (store_copy_mismatch), an ADDRESS is not a store
         (store_unavailable), or a store cannot be reached (storage_error)
      3  refused before anything was written: store_not_empty, store_busy, store_same,
         run_unreadable
    """

    def render(data: dict[str, Any]) -> None:
        source, target = data["from"], data["to"]
        out(
            f"Copied {target['runs']} run(s) from {source['location']} to {target['location']}: "
            f"{target['waits']} wait index entries, {target['audit']} audit entries, "
            f"{target['held']} held signal(s)"
        )
        out(f"Verified: both sides have the same counts and digest {target['digest']}")

    payload = {"to": to, **({"from": from_} if from_ is not None else {})}
    call(ctx, "store.copy", payload, as_json=as_json, repo_dir=repo_dir, render=render)
