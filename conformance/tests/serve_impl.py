#!/usr/bin/env python3
"""A tiny long-lived server for the runner's session self-tests (not a swamp).

`repo init .` makes `.swamp.yaml`; `count` prints {"files": <number of entries in the cwd>}.
`serve [--socket PATH] [--exit-code N]` answers JSON-lines requests on stdin (and on PATH):
`echo` (result = the payload), `sleep` {seconds} (answered later, concurrently), `garbage`
(writes a line that is not JSON), `touch` {path, after?} (creates the file, `after` seconds
later), `log` {text} (to stderr).
Without --socket it exits 0 at EOF after the requests in flight; with it, on SIGTERM/SIGINT it
removes the socket and exits N (default 0).
"""

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path


def answer(write, request):
    ident, kind, payload = request.get("id"), request.get("type"), request.get("payload") or {}
    if kind == "sleep":
        time.sleep(float(payload.get("seconds", 1)))
    if kind == "garbage":
        write("this is not json")
    if kind == "touch":
        time.sleep(float(payload.get("after", 0)))
        Path(payload["path"]).write_text("touched\n")
    if kind == "log":
        print(payload.get("text", ""), file=sys.stderr, flush=True)
    write(json.dumps({"type": kind, "id": ident, "payload": {"data": payload}}))
    write(json.dumps({"type": "done", "id": ident}))


def serve_stream(lines, write, workers):
    for line in lines:
        try:
            request = json.loads(line)
        except ValueError:
            error = {"code": "invalid_request", "message": "not JSON"}
            write(json.dumps({"type": "error", "id": None, "error": error}))
            write(json.dumps({"type": "done", "id": None}))
            continue
        thread = threading.Thread(target=answer, args=(write, request), daemon=True)
        thread.start()
        workers.append(thread)


def writer(stream):
    lock = threading.Lock()

    def write(line):
        with lock:
            stream.write(line + "\n")
            stream.flush()

    return write


def serve(args):
    socket_path = args[args.index("--socket") + 1] if "--socket" in args else None
    exit_code = int(args[args.index("--exit-code") + 1]) if "--exit-code" in args else 0
    workers = []

    def stop(signum, frame):
        # os.write, not print: a signal that lands while the main thread is
        # still inside sys.stderr's flush of "ready" would make print re-enter
        # that buffer and die with a RuntimeError instead of exit_code.
        os.write(2, f"stopping on signal {signum}\n".encode())
        if socket_path:
            os.unlink(socket_path)
        os._exit(exit_code)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if socket_path:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(socket_path)
        listener.listen(8)

        def client(conn):
            with conn, conn.makefile("r") as reader, conn.makefile("w") as out:
                serve_stream(reader, writer(out), [])

        def accept():
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=client, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
    print("ready", file=sys.stderr, flush=True)
    serve_stream(sys.stdin, writer(sys.stdout), workers)
    for thread in workers:
        thread.join()
    if socket_path:
        while True:
            time.sleep(1)
    return 0


def main(args):
    if args == ["repo", "init", "."]:
        Path(".swamp.yaml").write_text("version: 1\n")
        return 0
    if args == ["count"]:
        print(json.dumps({"files": len(os.listdir("."))}))
        return 0
    if args[:1] == ["serve"]:
        return serve(args[1:])
    print(f"usage: unknown command {args}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
