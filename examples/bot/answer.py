"""Answer each wait of step STEP with PAYLOAD, and continue its run: answer.py SOCKET STEP PAYLOAD [COUNT]
Sees runs started by anyone (a CLI in another terminal too) through `events.subscribe`; a wait opens
while its run executes, so it is answered at `run_suspended`. Prints `ready` once it follows them."""

import json
import sys

from swamp.client import Client, SwampError


def answer(client: Client, wait_id: str, payload: object) -> bool:
    try:
        done = client.signal(wait_id, payload, resume=True)
        said = f"answered; run {done['runId']} is {done.get('run', {}).get('status', 'suspended')}"
    except SwampError as err:  # answered already, expired, payload refused: say so, go on
        said = f"{err.code}: {err.message}"
    print(f"{wait_id}: {said}", flush=True)
    return said.startswith("answered")


def main(socket: str, step: str, payload: object, count: int) -> None:
    with Client.connect(socket) as client:  # a `swamp serve --socket SOCKET`
        start = client.subscribe(timeout=0)  # where the log ends now: follow from there
        list(start)
        print("ready", flush=True)
        opened: set[str] = set()  # waits of STEP, answered once their run is suspended
        with client.subscribe(after=start.cursor, kinds=["wait_opened", "run_suspended"]) as events:
            for event in events:
                if event["event"] == "wait_opened" and event["step"] == step:
                    opened.add(event["waitId"])
                for wait_id in opened & set(event.get("waitIds", ())):
                    opened.discard(wait_id)
                    count -= answer(client, wait_id, payload)
                if count <= 0:  # COUNT answers given (default: no end)
                    break


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 10**9)
