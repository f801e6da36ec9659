"""A swamp hook: append a line to waits.log (in the repository root) for each wait event.

.swamp.yaml:  waitOpened: {command: "python3 hooks/log-waits.py"}   (and waitSettled)

The wait arrives as one line of JSON on stdin; nothing of it is ever read by a shell.
"""

import json
import sys

wait = json.loads(sys.stdin.readline())
where = f"{wait['workflow']}/{wait['step']} {wait['waitId']}"
if wait["event"] == "wait_opened":
    line = f"{wait['openedAt']} OPENED {where} until {wait['deadline']}: {wait['description'] or ''}"
    line += f"\n    answer with: {wait['signal']}"
else:
    receipt = wait.get("receipt") or {}
    at, by = receipt.get("receivedAt", wait["deadline"]), receipt.get("submittedBy", "swamp")
    line = f"{at} {wait['outcome'].upper()} {where} (by {by})"
with open("waits.log", "a", encoding="utf-8") as log:
    log.write(line + "\n")
