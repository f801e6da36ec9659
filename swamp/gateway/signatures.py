"""Provider webhook signatures (GATEWAY-072..075): pure functions of the secret, the raw body and
the headers, so the providers' published test vectors check them directly.

Every comparison is `hmac.compare_digest` (constant time): a byte-by-byte compare that stops at
the first difference would tell an attacker, by its timing, how much of a forged signature is right.
"""

from __future__ import annotations

import hashlib
import hmac

# Slack: a request whose timestamp is further than this from now is refused, so a captured request
# cannot be replayed later (Slack's "Verifying requests from Slack").
SLACK_WINDOW_SECONDS = 300


def hex_hmac_sha256(secret: bytes, message: bytes) -> str:
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _same(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "replace"))


def verify_hmac_sha256(secret: bytes, body: bytes, given: str | None, prefix: str = "") -> bool:
    """`given` is `prefix` then the lower-case hex HMAC-SHA256 of the body (hex is read either case)."""
    if not given or not given.startswith(prefix):
        return False
    return _same(hex_hmac_sha256(secret, body), given[len(prefix) :].strip().lower())


def verify_github(secret: bytes, body: bytes, signature: str | None) -> bool:
    """GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`."""
    return verify_hmac_sha256(secret, body, signature, "sha256=")


def slack_problem(
    secret: bytes, body: bytes, signature: str | None, timestamp: str | None, now: float
) -> str | None:
    """Slack's v0 scheme: `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<body>">` with
    `X-Slack-Request-Timestamp` (Unix seconds) within 5 minutes of now. None when the request is
    Slack's; else what is wrong, fit to show (never the expected signature)."""
    if not signature or not timestamp:
        return "the X-Slack-Signature or X-Slack-Request-Timestamp header is missing"
    if not timestamp.isascii() or not timestamp.isdigit():
        return "X-Slack-Request-Timestamp is not Unix seconds"
    if abs(now - int(timestamp)) > SLACK_WINDOW_SECONDS:
        return f"X-Slack-Request-Timestamp is more than {SLACK_WINDOW_SECONDS} seconds from now"
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    if not verify_hmac_sha256(secret, base, signature, "v0="):
        return "X-Slack-Signature does not match the body"
    return None
