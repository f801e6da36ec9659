#!/usr/bin/env python3
"""A tiny implementation that behaves as the _selftest scenarios expect.

CLI: `repo init .`; `workflow run NAME --json`; `workflow history get RUN --json`;
`debug env` (prints environment, cwd, user and stdin as JSON); `debug argv ...` (prints its
args); `debug sleep SECONDS`; `debug id` (the process's account, its groups' names and its
umask). Its records and documents match spec/schemas (the runner validates
them). JSON-lines (--jsonl): `workflow.history.get` with payload {run}; `debug.echo` is answered
with an error whose message is the request line exactly as it arrived, `debug.id` with one whose
message is the process's account; malformed lines get
invalid_request with id null; every request is closed by done.
"""

import getpass
import json
import os
import sys
import time
from pathlib import Path

RUNS = Path(".swamp") / "workflow-runs"


def find_run(run_id):
    for path in sorted(RUNS.glob(f"*/{run_id}.json")):
        return json.loads(path.read_text())
    return None


def account():
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def shown(record):
    """A run as `workflow history get` shows it (spec/schemas/results.schema.json)."""
    path = f"{RUNS}/{record['workflowId']}/{record['id']}.json"
    return {**record, "path": path, "interrupted": False, "audit": [], "answers": []}


def not_found(run_id):
    return {"code": "run_not_found", "message": f"no run {run_id}; list runs with `swamp workflow history`"}


def cli(args):
    if args == ["repo", "init", "."]:
        Path(".swamp.yaml").write_text("version: 1\n")
        RUNS.mkdir(parents=True, exist_ok=True)
        print("Initialised a repository.")
        return 0
    if args[:2] == ["workflow", "run"] and len(args) == 4:
        name = args[2]
        run_id = f"run_{len(list(RUNS.glob('*/*.json'))) + 1:04d}"
        now = os.environ.get("SWAMP_NOW", "2026-01-01T00:00:00Z").replace("Z", ".000Z")
        record = {
            "formatVersion": 1,
            "id": run_id,
            "workflowId": name,
            "workflowName": name,
            "status": "succeeded",
            "createdAt": now,
            "startedAt": now,
            "completedAt": now,
            "durationMs": 0,
            "inputs": {},
            "initiatedBy": account(),
            "jobs": [],
        }
        if os.environ.get("SWAMP_ACTOR"):
            record["onBehalfOf"] = os.environ["SWAMP_ACTOR"]
        (RUNS / name).mkdir(parents=True, exist_ok=True)
        (RUNS / name / f"{run_id}.json").write_text(json.dumps(record))
        print(json.dumps({**record, "path": f"{RUNS}/{name}/{run_id}.json", "superseded": []}))
        return 0
    if args[:3] == ["workflow", "history", "get"] and len(args) == 5:
        record = find_run(args[3])
        print(json.dumps(shown(record) if record else {"error": not_found(args[3])}))
        return 0 if record else 3
    if args == ["debug", "env"]:
        stdin = sys.stdin.read()
        user = getpass.getuser()
        print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "user": user, "stdin": stdin}))
        return 0
    if args[:2] == ["debug", "argv"]:
        print(json.dumps({"argv": args[2:]}))
        return 0
    if args == ["debug", "id"]:
        import grp

        mask = os.umask(0)
        os.umask(mask)
        names = sorted({grp.getgrgid(gid).gr_name for gid in {os.getgid(), *os.getgroups()}})
        print(json.dumps({"account": account(), "groups": names, "umask": f"{mask:04o}"}))
        return 0
    if args[:2] == ["debug", "sleep"]:
        time.sleep(float(args[2]))
        return 0
    print(f"usage: unknown command {args}", file=sys.stderr)
    return 2


def serve():
    def send(frame):
        print(json.dumps(frame), flush=True)

    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        ident = request.get("id") if isinstance(request, dict) else None
        if not isinstance(request, dict) or not isinstance(ident, str) or "type" not in request:
            message = "each line must be a JSON object with a string type and id"
            send(
                {
                    "type": "error",
                    "id": ident if isinstance(ident, str) else None,
                    "error": {"code": "invalid_request", "message": message},
                }
            )
        elif request["type"] == "debug.echo":  # the line exactly as it arrived
            send(
                {
                    "type": "error",
                    "id": ident,
                    "error": {"code": "invalid_request", "message": line.rstrip("\n")},
                }
            )
        elif request["type"] == "debug.id":  # the account the process runs as
            send({"type": "error", "id": ident, "error": {"code": "invalid_request", "message": account()}})
        elif request["type"] == "workflow.history.get":
            run_id = request.get("payload", {}).get("run")
            record = find_run(run_id)
            if record:
                send({"type": request["type"], "id": ident, "payload": {"data": shown(record)}})
            else:
                send({"type": "error", "id": ident, "error": not_found(run_id)})
        else:
            send(
                {
                    "type": "error",
                    "id": ident,
                    "error": {
                        "code": "invalid_request",
                        "message": f"unknown request type {request['type']}",
                    },
                }
            )
        send({"type": "done", "id": ident if isinstance(ident, str) else None})
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--jsonl"] else cli(sys.argv[1:]))
