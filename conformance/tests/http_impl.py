#!/usr/bin/env python3
"""A tiny HTTP implementation for the runners' `http` step tests.

`gateway --listen HOST:PORT` prints `{"listening": "http://HOST:PORT"}` (the port it bound) and
answers every request with a JSON echo of what arrived, byte for byte: the method, the target, the
header lines in their order and case, and the body. `?status=N` answers with status N; `/text`
answers `text/plain`; every answer has the header `X-Twice` twice (a runner joins them with ", ").
`repo init .` does nothing. SIGTERM stops it (exit 0).
"""

import json
import signal
import socketserver
import sys
import threading


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        request_line = self.rfile.readline().decode("latin-1").rstrip("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers = []
        while True:
            line = self.rfile.readline().decode("latin-1").rstrip("\r\n")
            if not line:
                break
            name, _, value = line.partition(":")
            headers.append([name, value.strip()])
        length = next((int(v) for n, v in headers if n.lower() == "content-length"), 0)
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        status = 200
        if "?status=" in target:
            status = int(target.split("?status=", 1)[1][:3])
        if target.startswith("/text"):
            kind, data = "text/plain; charset=utf-8", f"{method} {target}\n{body}"
        else:
            kind = "application/json"
            data = json.dumps({"method": method, "target": target, "headers": headers, "body": body})
        raw = data.encode("utf-8")
        head = [
            f"HTTP/1.1 {status} Echo",
            f"Content-Type: {kind}",
            f"Content-Length: {len(raw)}",
            "X-Twice: one",
            "X-Twice: two",
            "Connection: close",
        ]
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + raw)


def main(args):
    if args == ["repo", "init", "."]:
        return 0
    if len(args) != 3 or args[:2] != ["gateway", "--listen"]:
        print(f"usage: unknown command {args}", file=sys.stderr)
        return 2
    host, _, port = args[2].rpartition(":")
    if not port.isdigit():
        print(f"--listen {args[2]!r} is not HOST:PORT", file=sys.stderr)
        return 2
    server = socketserver.ThreadingTCPServer((host, int(port)), Handler)
    server.daemon_threads = True
    print(json.dumps({"listening": f"http://{host}:{server.server_address[1]}"}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
