#!/bin/sh
# A swamp hook: post each wait that opens to a chat webhook (Slack, Mattermost, Rocket.Chat and
# Google Chat all take {"text": "..."}).
#
#   .swamp.yaml:  waitOpened: {command: "sh hooks/notify-chat.sh", timeout: 30}
#   environment:  SWAMP_CHAT_WEBHOOK_URL=https://hooks.slack.com/services/...  (where swamp runs)
#
# The wait arrives as one line of JSON on stdin. It is never spliced into shell text: python3
# reads it and writes the request body, and curl sends that body from its stdin. A failure (no
# URL, the chat is down) is recorded in the run's audit trail: swamp workflow wait show WAIT_ID.
set -eu
: "${SWAMP_CHAT_WEBHOOK_URL:?set SWAMP_CHAT_WEBHOOK_URL to the chat webhook URL}"
python3 -c '
import json, sys
wait = json.loads(sys.stdin.readline())
lines = [
    "Waiting for an answer: %s / %s" % (wait["workflow"], wait["step"]),
    wait["description"] or "",
    "Answer before %s with:" % wait["deadline"],
    wait["signal"],
]
json.dump({"text": "\n".join(line for line in lines if line)}, sys.stdout)
' | curl --fail --silent --show-error --max-time 20 \
  --header "Content-Type: application/json" --data-binary @- "$SWAMP_CHAT_WEBHOOK_URL"
