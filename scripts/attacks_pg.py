"""Attacks on issue 26's PostgreSQL items: secrets in output, failures that were internal_error,
names PostgreSQL limits in bytes, values libpq cuts, a copy check blind to the indexed columns.

- A password spelt so that libpq quotes it back (`S3CRETpw%ZZ`), an address libpq cannot parse at
  all, a password's key and value percent-encoded: held when no output (stdout, stderr, --json)
  shows S3CRETpw in any spelling and nothing is a traceback.
- A `store:` setting with `passwor%64=` or a tab before `password=`: held when refused with
  settings_invalid (exit 3) without showing the password.
- A role without rights, a trigger refusing the audit insert, the database stopped mid-run
  (`pg_ctl stop -m immediate` from the run's own step), an index entry over PostgreSQL's limit:
  held when each is storage_error (exit 1) saying what to do (the right that is missing), with
  nothing half-written.
- A schema of 28 x `ü` (56 bytes): held when a run saves and is signalled.
- A NUL in a workflow name copied into PostgreSQL: held when refused, not cut. A target whose
  indexed column differs from its record (a trigger renames it): held when `store copy` says
  store_copy_mismatch.

Self-contained (standard library only), against a real swamp binary, on a throwaway cluster of
its own (`scripts/pg start`, stopped at the end): `run(swamp, workdir) -> [{"attack", "held",
"detail"}]`, the whole module well under 60 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

NOW = "2026-01-01T00:00:00Z"
SECRET = "S3CRETpw"
PG = Path(__file__).resolve().parent / "pg"
WAIT_WORKFLOW = """id: {id}
name: {name}
jobs:
  - name: main
    steps:
      - name: w
        task: {{type: wait_for_signal, timeout: 3600, schema: {{type: integer}}}}
"""
SH_MODEL = """id: 00000000-0000-4000-8000-0000000000a1
name: sh
type: command/shell
methods:
  execute:
    arguments: {run: "true"}
"""


class Env:
    def __init__(self, swamp: str, workdir: Path):
        self.swamp = swamp
        self.workdir = workdir
        self.cluster = Path(tempfile.mkdtemp(prefix="swamp-attacks-pg-", dir="/tmp"))
        self.cluster.chmod(0o755)
        self.base = self.start()
        self.bin = subprocess.run([str(PG), "bin"], capture_output=True, text=True, check=True).stdout.strip()

    def start(self) -> str:
        done = subprocess.run(
            [str(PG), "start", str(self.cluster)], capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise RuntimeError(f"scripts/pg start failed: {done.stderr[-400:]}")
        return done.stdout.strip()

    def close(self) -> None:
        subprocess.run([str(PG), "stop", str(self.cluster)], capture_output=True, timeout=300)
        shutil.rmtree(self.cluster, ignore_errors=True)

    def url(self, schema: str, **params: str) -> str:
        from urllib.parse import quote

        extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in params.items())
        return f"{self.base}&options=-csearch_path%3D{quote(schema, safe='')}{extra}"

    def sql(self, statement: str) -> str:
        done = subprocess.run(
            [f"{self.bin}/psql", self.base, "-Atqc", statement], capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql: {done.stderr.strip()}")
        return done.stdout.strip()

    def cli(self, root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        full = {**os.environ, "SWAMP_NOW": NOW, **env}
        return subprocess.run(
            [self.swamp, *args], cwd=root, env=full, capture_output=True, text=True, timeout=120
        )

    def repo(self, name: str, url: str | None) -> Path:
        root = self.workdir / f"{name}-{uuid.uuid4().hex[:6]}"
        env = {"SWAMP_STORE_URL": url} if url else {"SWAMP_STORE_URL": "file"}
        root.mkdir(parents=True)
        done = self.cli(root, "repo", "init", ".", **env)
        if done.returncode != 0:
            raise RuntimeError(f"repo init: {done.stderr.strip()}")
        (root / "models" / "command" / "shell").mkdir(parents=True, exist_ok=True)
        (root / "models" / "command" / "shell" / "sh.yaml").write_text(SH_MODEL)
        return root


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _code(done: subprocess.CompletedProcess[str]) -> str:
    return str(_json(done).get("error", {}).get("code", ""))


def _wait_workflow(root: Path, name: str, file: str | None = None) -> str:
    wf_id = str(uuid.uuid4())
    text = WAIT_WORKFLOW.format(id=wf_id, name=json.dumps(name))
    (root / "workflows" / f"workflow-{file or name}.yaml").write_text(text)
    return wf_id


def secrets_in_output(env: Env) -> list[dict[str, Any]]:
    root = env.repo("secrets", None)
    results = []
    addresses = {
        "password-percent-token": f"postgresql://alice:{SECRET}%ZZ@localhost/db",
        "password-unparsable-address": f"postgresql://alice:{SECRET}@[::1/db",
        "password-spelt-in-query": "postgresql://alice@/swamp?host=/nonexistent-swamp-socket&passwor%64=S3%43RETpw",
    }
    for attack, address in addresses.items():
        shown = []
        for args in (("store", "status"), ("store", "status", "--json"), ("workflow", "waits", "--json")):
            done = env.cli(root, *args, SWAMP_STORE_URL=address)
            shown.append(done.stdout + done.stderr)
        text = "\n".join(shown)
        leaked = SECRET in text or "S3%43RETpw" in text or "Traceback" in text
        results.append({"attack": attack, "held": not leaked, "detail": text[:300]})
    for attack, setting in {
        "settings-password-key-encoded": "postgresql://alice@db.example/swamp?passwor%64=" + SECRET,
        "settings-password-after-tab": "service=swamp\\tpassword=" + SECRET,
    }.items():
        (root / ".swamp.yaml").write_text(f'version: 1\nstore: "{setting}"\n')
        done = env.cli(root, "store", "status", "--json", SWAMP_STORE_URL="")
        held = (
            done.returncode == 3
            and _code(done) == "settings_invalid"
            and SECRET not in done.stdout + done.stderr
        )
        results.append(
            {"attack": attack, "held": held, "detail": f"exit {done.returncode}: {done.stdout[:200]}"}
        )
    (root / ".swamp.yaml").write_text("version: 1\n")
    return results


def role_without_rights(env: Env) -> dict[str, Any]:
    schema, role = f"a_{uuid.uuid4().hex[:8]}", f"r_{uuid.uuid4().hex[:8]}"
    root = env.repo("rights", env.url(schema))
    env.sql(f'CREATE ROLE "{role}" LOGIN')
    try:
        status = env.cli(root, "store", "status", "--json", SWAMP_STORE_URL=env.url(schema, user=role))
        env.sql(
            f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"; '
            f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"'
        )
        _wait_workflow(root, "review")
        run = env.cli(root, "workflow", "run", "review", "--json", SWAMP_STORE_URL=env.url(schema, user=role))
    finally:
        env.sql(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')
    said, wrote = _json(status).get("error", {}), _json(run).get("error", {})
    held = (
        said.get("code") == "storage_error"
        and f"USAGE on schema {schema}" in said.get("message", "")
        and wrote.get("code") == "storage_error"
        and "INSERT" in wrote.get("message", "")
    )
    return {"attack": "role-without-rights", "held": held, "detail": f"{said} / {wrote}"[:400]}


def trigger_refuses_audit(env: Env) -> dict[str, Any]:
    schema = f"a_{uuid.uuid4().hex[:8]}"
    url = env.url(schema)
    root = env.repo("trigger", url)
    _wait_workflow(root, "review")
    run = env.cli(root, "workflow", "run", "review", "--json", SWAMP_STORE_URL=url)
    wait_id = _json(env.cli(root, "workflow", "waits", "--json", SWAMP_STORE_URL=url))["waits"][0]["waitId"]
    before = env.sql(f"SELECT md5(string_agg(record, '')) FROM \"{schema}\".runs")
    env.sql(
        f'CREATE FUNCTION "{schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS '
        "$$ BEGIN RAISE EXCEPTION 'audit disk full'; END $$; "
        f'CREATE TRIGGER refuse BEFORE INSERT ON "{schema}".audit FOR EACH ROW '
        f'EXECUTE FUNCTION "{schema}".refuse()'
    )
    signal = env.cli(root, "workflow", "signal", wait_id, "--payload", "1", "--json", SWAMP_STORE_URL=url)
    after = env.sql(f"SELECT md5(string_agg(record, '')) FROM \"{schema}\".runs")
    held = run.returncode == 0 and _code(signal) == "storage_error" and before == after
    return {"attack": "trigger-refuses-audit-insert", "held": held, "detail": signal.stdout[:300]}


def stopped_mid_run(env: Env) -> dict[str, Any]:
    url = env.url(f"a_{uuid.uuid4().hex[:8]}")
    root = env.repo("stopped", url)
    stop = f"{env.bin}/pg_ctl -D {env.cluster}/data -m immediate -w stop"
    stop = f"runuser -u postgres -- {stop}" if os.getuid() == 0 else stop
    (root / "workflows" / "workflow-stop.yaml").write_text(
        f"id: {uuid.uuid4()}\nname: stop\njobs:\n  - name: main\n    steps:\n"
        "      - name: halt\n        task: {type: model_method, modelIdOrName: sh, methodName: execute, "
        f"inputs: {{run: {json.dumps(stop)}}}}}\n"
    )
    try:
        run = env.cli(root, "workflow", "run", "stop", "--json", SWAMP_STORE_URL=url)
    finally:
        env.start()
    held = _code(run) == "storage_error" and "Traceback" not in run.stderr
    return {"attack": "database-stopped-mid-run", "held": held, "detail": run.stdout[:300]}


def multibyte_schema(env: Env) -> dict[str, Any]:
    url = env.url("ü" * 28)
    try:
        root = env.repo("umlaut", url)
        _wait_workflow(root, "review")
        run = env.cli(root, "workflow", "run", "review", "--json", SWAMP_STORE_URL=url)
        waits = _json(env.cli(root, "workflow", "waits", "--json", SWAMP_STORE_URL=url)).get("waits", [])
        signal = env.cli(
            root, "workflow", "signal", waits[0]["waitId"], "--payload", "1", SWAMP_STORE_URL=url
        )
        held, detail = run.returncode == 0 and signal.returncode == 0, run.stdout[:200] + signal.stderr[:200]
    except (RuntimeError, IndexError, KeyError) as exc:
        held, detail = False, str(exc)[:300]
    finally:
        env.sql(f'DROP SCHEMA IF EXISTS "{"ü" * 28}" CASCADE')
    return {"attack": "schema-of-28-multibyte-characters", "held": held, "detail": detail}


def copies(env: Env) -> list[dict[str, Any]]:
    results = []
    root = env.repo("nul", None)
    _wait_workflow(root, "review")
    env.cli(root, "workflow", "run", "review", "--json", SWAMP_STORE_URL="file")
    (record,) = [p for p in (root / ".swamp" / "workflow-runs").rglob("*.json")]
    doc = json.loads(record.read_text())
    doc["workflowName"] = "review\u0000planted"
    record.write_text(json.dumps(doc))
    url = env.url(f"a_{uuid.uuid4().hex[:8]}")
    env.cli(root, "store", "migrate", SWAMP_STORE_URL=url)
    copied = env.cli(root, "store", "copy", "--from", "file", "--to", url, "--json", SWAMP_STORE_URL="file")
    held = _code(copied) == "storage_error" and "NUL" in copied.stdout
    results.append({"attack": "nul-in-workflow-name-copied", "held": held, "detail": copied.stdout[:300]})

    root = env.repo("index", None)
    _wait_workflow(root, "review")
    env.cli(root, "workflow", "run", "review", "--json", SWAMP_STORE_URL="file")
    schema = f"a_{uuid.uuid4().hex[:8]}"
    url = env.url(schema)
    env.cli(root, "store", "migrate", SWAMP_STORE_URL=url)
    env.sql(
        f'CREATE FUNCTION "{schema}".rename() RETURNS trigger LANGUAGE plpgsql AS '
        "$$ BEGIN NEW.workflow_name := NEW.workflow_name || '-x'; RETURN NEW; END $$; "
        f'CREATE TRIGGER rename BEFORE INSERT ON "{schema}".runs FOR EACH ROW '
        f'EXECUTE FUNCTION "{schema}".rename()'
    )
    copied = env.cli(root, "store", "copy", "--from", "file", "--to", url, "--json", SWAMP_STORE_URL="file")
    held = _code(copied) == "store_copy_mismatch"
    results.append({"attack": "copy-blind-to-indexed-columns", "held": held, "detail": copied.stdout[:300]})
    return results


def index_row_over_limit(env: Env) -> dict[str, Any]:
    import hashlib

    url = env.url(f"a_{uuid.uuid4().hex[:8]}")
    root = env.repo("limit", url)
    name = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(47))
    wf_id = _wait_workflow(root, name, "long")
    run = env.cli(root, "workflow", "run", wf_id, "--json", SWAMP_STORE_URL=url)
    status = _json(env.cli(root, "store", "status", "--json", SWAMP_STORE_URL=url))
    held = _code(run) == "storage_error" and status.get("runs") == 0
    return {"attack": "index-entry-over-the-limit", "held": held, "detail": run.stdout[:300]}


def run(swamp: str, workdir: Path) -> list[dict[str, Any]]:
    env = Env(swamp, workdir)
    results: list[dict[str, Any]] = []
    try:
        results += secrets_in_output(env)
        for attack in (role_without_rights, trigger_refuses_audit, multibyte_schema, index_row_over_limit):
            try:
                results.append(attack(env))
            except Exception as exc:  # an attack that cannot even finish is a finding
                results.append(
                    {"attack": attack.__name__, "held": False, "detail": f"{type(exc).__name__}: {exc}"}
                )
        results += copies(env)
        results.append(stopped_mid_run(env))
    finally:
        env.close()
    return results


if __name__ == "__main__":  # python scripts/attacks_pg.py SWAMP [WORKDIR]
    import sys

    where = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp())
    print(json.dumps(run(sys.argv[1], where), indent=1))
