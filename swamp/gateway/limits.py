"""Limits and abuse (GATEWAY-090..099): what one client, one token, one body may cost the gateway.

In-process and approximate on purpose: one gateway process, its memory bounded (buckets idle for a
while are forgotten). Several gateways behind one address each keep their own counts; a reverse
proxy in front is the place for limits shared between them.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field

from starlette.requests import Request

from ..domain.waits import MAX_PAYLOAD_BYTES

# A JSON API body is the payload itself: the core's 16 KiB, plus room for white space around it.
# Past this the body is refused with 413 before more of it is read (GATEWAY-090).
API_BODY_LIMIT = MAX_PAYLOAD_BYTES + 1024
# Any other route's body (a page's form, a provider's webhook) is refused past this.
MAX_BODY = 1024 * 1024
# Reading one body may take this long in all (a client trickling bytes holds a connection).
BODY_SECONDS = 10.0
# A refused token is answered this much later, so guessing is slow (GATEWAY-094).
REFUSED_TOKEN_DELAY = 0.25


class BodyTooLarge(Exception):
    def __init__(self, limit: int, seen: int) -> None:
        super().__init__(f"body over {limit} bytes")
        self.limit = limit
        self.seen = seen


class BodyTimeout(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (BodyTooLarge) as soon as it is known to pass `limit`: from its
    Content-Length before anything is read, else once the chunks read pass it; BodyTimeout when it
    takes longer than BODY_SECONDS to arrive."""
    import asyncio

    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit, int(declared))
    chunks: list[bytes] = []
    size = 0

    async def gather() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(limit, size)
            chunks.append(chunk)

    try:
        await asyncio.wait_for(gather(), BODY_SECONDS)
    except TimeoutError:
        raise BodyTimeout() from None
    return b"".join(chunks)


@dataclass
class Bucket:
    tokens: float
    at: float


@dataclass
class Limiter:
    """A token bucket per key: `rate` requests a second on average, `burst` at once. `take(key)`
    is 0 when admitted, else the seconds until it would be (the Retry-After)."""

    rate: float
    burst: float
    buckets: dict[str, Bucket] = field(default_factory=dict)
    max_keys: int = 10000

    def take(self, key: str, cost: float = 1.0, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.max_keys:
                self._forget(now)
            bucket = self.buckets[key] = Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.tokens >= cost:
            bucket.tokens -= cost
            return 0.0
        return (cost - bucket.tokens) / self.rate

    def _forget(self, now: float) -> None:
        """Drop the buckets that have refilled (they hold nothing a new one would not)."""
        full = [k for k, b in self.buckets.items() if b.tokens + (now - b.at) * self.rate >= self.burst]
        for key in full:
            del self.buckets[key]
        if len(self.buckets) >= self.max_keys:  # still full: the oldest go
            for key in sorted(self.buckets, key=lambda k: self.buckets[k].at)[: self.max_keys // 2]:
                del self.buckets[key]


@dataclass
class Limits:
    """The gateway's limits (GATEWAY-092..094): per client address, per token, and refused tokens
    per client address."""

    per_client: Limiter
    per_token: Limiter
    refusals: Limiter  # a refused token costs one; none left: the client is refused a while

    @classmethod
    def make(cls, rate: float) -> Limits:
        """`rate`: requests a second one client address may make on average (twice that at once)."""
        return cls(
            per_client=Limiter(rate, 2 * rate),
            per_token=Limiter(5.0, 10.0),
            refusals=Limiter(1 / 6, 10.0),  # ten refused tokens at once, then one every 6 s
        )

    def client_wait(self, client: str) -> float:
        return self.per_client.take(client)

    def token_wait(self, token: str) -> float:
        # Keyed by the token's hash: the limiter never holds a token.
        return self.per_token.take(hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest())

    def refused_wait(self, client: str) -> float:
        """Seconds before `client` may present a token again (0: it may now); takes nothing."""
        bucket = self.refusals.buckets.get(client)
        if bucket is None:
            return 0.0
        limiter = self.refusals
        left = min(limiter.burst, bucket.tokens + (time.monotonic() - bucket.at) * limiter.rate)
        return 0.0 if left >= 1 else (1 - left) / limiter.rate

    def refused(self, client: str) -> None:
        self.refusals.take(client)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
