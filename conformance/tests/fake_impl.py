#!/usr/bin/env python3
"""A deliberately wrong implementation: every request succeeds with empty data.

JSON-lines mode (--jsonl): each JSON object line gets {"type": <type>, "id": <id>,
"payload": {"data": {}}} and a done frame; other lines are silently ignored.
Any other command prints {} and exits 0.
"""

import json
import sys


def main() -> int:
    if "--jsonl" not in sys.argv[1:]:
        print("{}")
        return 0
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if isinstance(request, dict):
            ident = request.get("id")
            print(json.dumps({"type": request.get("type"), "id": ident, "payload": {"data": {}}}))
            print(json.dumps({"type": "done", "id": ident}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
