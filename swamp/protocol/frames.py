"""JSON-lines frames: reading a request line into (id, type, payload), writing answer frames.

What every host of the protocol shares (`swamp --jsonl` in jsonl.py, `swamp serve`, and the
helper processes in helpers.py), below all of them so none imports another for it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import IO, Any, Protocol

from ..domain.errors import InternalError, InvalidRequest, SwampError
from .requests import handle, lookup

MAX_LINE_BYTES = 1024 * 1024  # a line's bytes, not counting its newline
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def encode_frame(frame: dict[str, Any]) -> str:
    """One frame as its line (without the newline)."""
    try:
        line = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: escape it rather than lose the frame
        line = json.dumps(frame, ensure_ascii=True, separators=(",", ":"))
    return line


class FrameWriter:
    """Writes whole frames, one per line, from any thread."""

    def __init__(self, stream: IO[str] | None):
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False

    def write(self, frame: dict[str, Any]) -> None:
        """A peer that went away loses its frames; the work behind them goes on."""
        self.write_lines(encode_frame(frame) + "\n")

    def write_lines(self, text: str) -> None:
        """Frames already encoded, one per line (a helper process's answer)."""
        with self._lock:
            if self.closed or self._stream is None:
                return
            try:
                self._stream.write(text)
                self._stream.flush()
            except (OSError, ValueError):
                self.closed = True


class FrameSink(Protocol):
    def write(self, frame: dict[str, Any]) -> None: ...


Dispatch = Callable[[str, Any, Callable[[dict[str, Any]], None]], dict[str, Any]]


def answer(
    writer: FrameSink,
    request_id: Any,
    request_type: str,
    payload: Any,
    dispatch: Dispatch = handle,
    line: int | None = None,
) -> None:
    """Run one request and write its frames: events, then a result or an error, then done."""

    def emit(event: dict[str, Any]) -> None:
        writer.write({"type": "event", "id": request_id, "event": event})

    try:
        data = dispatch(request_type, payload, emit)
        writer.write({"type": request_type, "id": request_id, "payload": {"data": data}})
    except SwampError as exc:
        body = exc.to_dict()
        if isinstance(exc, InvalidRequest) and line is not None:
            body["details"] = {**exc.details, "line": line}
        writer.write({"type": "error", "id": request_id, "error": body})
    except Exception as exc:  # a request never takes the stream down
        error = InternalError(f"unexpected error: {type(exc).__name__}: {exc}")
        writer.write({"type": "error", "id": request_id, "error": error.to_dict()})
    writer.write({"type": "done", "id": request_id})


def refuse(writer: FrameWriter, request_id: Any, error: SwampError, line_number: int) -> None:
    details = {**error.details, "line": line_number}
    body = {"code": error.code, "message": error.message, "details": details}
    writer.write({"type": "error", "id": request_id, "error": body})
    writer.write({"type": "done", "id": request_id})


def parse_frame(
    line: str, line_number: int, seen: set[str], extra_types: frozenset[str] = frozenset()
) -> tuple[Any, str, Any]:
    """(id, type, payload) of a request line, or InvalidRequest (with the id when it was readable)."""
    if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise BadFrame(None, InvalidRequest(f"line {line_number} is longer than {MAX_LINE_BYTES} bytes"))
    if not line.isascii() and _NOT_UTF8.search(line):  # bytes that were not UTF-8 (surrogateescape)
        raise BadFrame(None, InvalidRequest(f"line {line_number} is not UTF-8"))
    try:
        frame = json.loads(line, object_pairs_hook=_keep_duplicates, parse_int=_frame_int)
    except RecursionError:
        raise BadFrame(None, InvalidRequest(f"line {line_number} is nested too deeply")) from None
    except ValueError as exc:
        raise BadFrame(None, InvalidRequest(f"line {line_number} is not JSON: {exc}")) from None
    if not isinstance(frame, dict):
        raise BadFrame(None, InvalidRequest(f"line {line_number} is not a JSON object"))
    request_id = frame.get("id")
    if not isinstance(request_id, str) or not request_id:
        raise BadFrame(None, InvalidRequest(f"line {line_number} has no 'id' (a non-empty string)"))
    try:
        request_id.encode("utf-8")
    except UnicodeEncodeError:
        raise BadFrame(
            None, InvalidRequest(f"line {line_number} has an 'id' that is not valid Unicode")
        ) from None
    if request_id in seen:
        raise BadFrame(
            None, InvalidRequest(f"line {line_number} reuses id '{request_id}'", {"id": request_id})
        )
    seen.add(request_id)
    unknown = sorted(set(frame) - {"type", "id", "payload"})
    if unknown:
        raise BadFrame(request_id, InvalidRequest(f"unknown frame field(s): {', '.join(unknown)}"))
    if frame.get("type") not in extra_types:
        try:
            lookup(frame.get("type"))
        except InvalidRequest as exc:
            raise BadFrame(request_id, exc) from None
    payload = frame.get("payload", {})
    if not isinstance(payload, dict):
        raise BadFrame(request_id, InvalidRequest("'payload' must be a JSON object"))
    return request_id, frame["type"], payload


def _frame_int(text: str) -> Any:
    """An integer of a frame; one longer than Python reads (4300 digits) is kept as a marker that
    a signal payload refuses (payload_malformed) instead of refusing the whole line."""
    if len(text) <= 4000:
        return int(text)
    from ..domain.waits import LongInteger

    return LongInteger(text)


class DuplicateKeys(dict[str, Any]):
    """An object that repeated a key in the frame; a signal payload refuses it (payload_malformed)."""

    duplicates: list[str]


def _keep_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) == len(keys):
        return dict(pairs)
    marked = DuplicateKeys(pairs)
    marked.duplicates = sorted({k for k in keys if keys.count(k) > 1})
    return marked


class BadFrame(Exception):
    def __init__(self, request_id: Any, error: SwampError):
        super().__init__(error.message)
        self.request_id = request_id
        self.error = error
