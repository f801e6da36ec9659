"""What a call through `swamp.client` raises: swamp's refusal, carried whole.

A refusal on the wire is an `error` frame `{code, message, details?}` (PROTO-003, PROTO-008); the
client raises it as ONE exception class, `SwampError`, so a program matches on `err.code` (the
stable codes of spec/schemas/errors.json) rather than on a class per code. The client adds two codes
of its own that never come from swamp: `connection_lost` (`ConnectionLost`: the connection died
while the call was in flight, or before it was sent) and `protocol_error` (a frame the protocol does
not allow, e.g. a `done` with no answer before it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SwampError(Exception):
    """A refusal: `code` (stable, snake_case), `message` (one line, says what to do next), `details`.

    >>> try:
    ...     client.get_workflow("nope")
    ... except SwampError as err:
    ...     print(err.code)              # workflow_not_found
    """

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    @classmethod
    def from_body(cls, body: Any) -> SwampError:
        """The exception for an `error` frame's `error` object."""
        if not isinstance(body, Mapping):
            return cls("protocol_error", f"an error frame without an error object: {body!r}")
        details = body.get("details")
        return cls(
            str(body.get("code") or "protocol_error"),
            str(body.get("message") or ""),
            details if isinstance(details, Mapping) else None,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.details))


class ConnectionLost(SwampError):
    """The connection to `swamp serve` ended before this call was answered (code `connection_lost`).

    Raised at once by every call still in flight when the connection dies, and by every call made on
    a closed client. Whether a request that was sent took effect is unknown: look (`history_get`,
    `wait_show`) before sending it again.
    """

    def __init__(self, message: str, details: Mapping[str, Any] | None = None):
        super().__init__("connection_lost", message, details)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.details))
