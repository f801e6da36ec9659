"""The `@acme/release` model type: deploy a version, or escalate to a person."""

from __future__ import annotations

import datetime as dt
from typing import Any


def deploy(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    ctx.log(f"deploying {args['version']} to {args['environment']}")
    return {
        "deployed": True,
        "version": args["version"],
        "environment": args["environment"],
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def escalate(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    ctx.log(f"escalating: {args['reason']}")
    return {"escalated": True, "reason": args["reason"], "channel": args["channel"]}


model = {
    "type": "@acme/release",
    "version": "2026.11.30.1",
    "description": "Deploys releases and escalates problems",
    "methods": {
        "deploy": {
            "description": "Deploy a version to an environment",
            "arguments": {
                "type": "object",
                "properties": {
                    "version": {"type": "string", "minLength": 1},
                    "environment": {"type": "string", "enum": ["staging", "production"]},
                },
                "required": ["version", "environment"],
                "additionalProperties": False,
            },
            "execute": deploy,
        },
        "escalate": {
            "description": "Tell a person that the release needs attention",
            "arguments": {
                "type": "object",
                "properties": {
                    "reason": {"type": "string"},
                    "channel": {"type": "string", "default": "#releases"},
                },
                "required": ["reason"],
                "additionalProperties": False,
            },
            "execute": escalate,
        },
    },
}
