"""Answer each wait of step STEP with PAYLOAD, and continue its run: answer.py SOCKET STEP PAYLOAD [COUNT]
Sees runs started by anyone (a CLI in another terminal too) through `events.subscribe` and answers at
`wait_opened`; a run still busy holds the answer and goes on by itself. Prints `ready` once it follows."""

import json
import sys

from swamp.client import Client, SwampError


def answer(client: Client, wait_id: str, payload: object) -> bool:
    try:
        done = client.signal(wait_id, payload, resume=True)
    except SwampError as err:  # answered already, expired, payload refused: say so, go on
        print(f"{wait_id}: {err.code}: {err.message}", flush=True)
        return False
    if done.get("held"):  # its run was still executing: it applies the answer and goes on
        print(f"{wait_id}: held; run {done['runId']} takes it when it can", flush=True)
    else:
        status = done["run"]["status"] if done.get("continued") else done["runStatus"]
        print(f"{wait_id}: answered; run {done['runId']} is {status}", flush=True)
    return True


def main(socket: str, step: str, payload: object, count: int) -> None:
    with Client.connect(socket) as client:  # a `swamp serve --socket SOCKET`
        start = client.subscribe(timeout=0)  # where the log ends now: follow from there
        list(start)
        print("ready", flush=True)
        with client.subscribe(after=start.cursor, kinds=["wait_opened"]) as events:
            for event in events:
                if event["step"] == step:
                    count -= answer(client, event["waitId"], payload)
                if count <= 0:  # COUNT answers given (default: no end)
                    break


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 10**9)
