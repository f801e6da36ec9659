"""The JSON-lines protocol over a pair of streams (`swamp --jsonl`, and `swamp serve` later).

Each line read is one request; each request is answered with optional `event` frames, then one
result or `error` frame, then `done`. Requests run concurrently, so a long `workflow.run` never
holds up an independent request behind it; frames of one request stay in order. A line that cannot
be used gets an `invalid_request` error (with its line number) and the stream goes on. At EOF the
requests in flight finish before the call returns.

Lines are read in chunks of at most CHUNK_BYTES and kept only up to MAX_LINE_BYTES: the rest of a
longer line is skipped as it arrives, so a peer that sends a gigabyte without a newline costs
about one frame of memory, not the gigabyte (a whole-line reader peaked at 3.1 GB for a 1 GB line).
"""

from __future__ import annotations

import collections
import functools
import json
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from ..domain.errors import InvalidRequest
from .frames import MAX_LINE_BYTES, BadFrame, FrameWriter, answer, parse_frame, refuse
from .helpers import Helpers, Request
from .requests import executes, handle

CHUNK_BYTES = 64 * 1024
MAX_WORKERS = 16
# Requests of one stream read ahead of their answers at most: past it the stream is not read until
# one is answered, so a client that pipelines a million lines neither queues them all in memory nor,
# in serve, puts them ahead of every other client's requests (50,000 pipelined serve.status held
# another client's answer up for 3.9 s).
MAX_PIPELINED = 256
# Text of answers of a stdin/stdout stream waiting for their reader at most (StreamWriter).
MAX_QUEUED_CHARS = 64 * 1024 * 1024


class StreamWriter(FrameWriter):
    """A FrameWriter for a stream that one client both feeds and reads (stdin and stdout of
    `swamp --jsonl` or `swamp serve`): frames are queued and a thread of their own writes them.

    A stream's requests are read at most MAX_PIPELINED ahead of their answers. If answering meant
    writing to stdout, a client that writes every request before reading any answer (a common
    script: write, close, then read) would fill stdout's pipe, the answers would stop, the reader
    would stop, and both sides would wait forever (1,000 pipelined signals did). Queued here, the
    answers wait for their reader up to MAX_QUEUED_CHARS; only past that does writing block, and
    with it the reading of more requests: memory stays bounded either way."""

    def __init__(self, stream: IO[str], limit: int = MAX_QUEUED_CHARS):
        super().__init__(None)  # every frame goes through write_lines below, never the base's stream
        self._out = stream
        self._limit = limit
        self._queue: collections.deque[str] = collections.deque()
        self._queued = 0
        self._changed = threading.Condition()
        self._ending = False
        self._sender = threading.Thread(target=self._send, name="swamp-jsonl-send", daemon=True)
        self._sender.start()

    def write_lines(self, text: str) -> None:
        with self._changed:
            while self._queued and self._queued + len(text) > self._limit and not self.closed:
                self._changed.wait()
            if self.closed or self._ending:
                return
            self._queue.append(text)
            self._queued += len(text)
            self._changed.notify_all()

    def finish(self) -> None:
        """Write everything queued, then stop."""
        with self._changed:
            self._ending = True
            self._changed.notify_all()
        self._sender.join()

    def _send(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._ending:
                    self._changed.wait()
                if not self._queue:
                    return
                text = "".join(self._queue)
                self._queue.clear()
            try:
                self._out.write(text)
                self._out.flush()
            except (OSError, ValueError):  # the reader went away: its answers are dropped
                with self._changed:
                    self.closed = True
                    self._queue.clear()
                    self._queued = 0
                    self._changed.notify_all()
                return
            with self._changed:
                self._queued -= len(text)
                self._changed.notify_all()


class TooLong:
    """A line longer than MAX_LINE_BYTES, in place of its text (which was never kept)."""


TOO_LONG = TooLong()


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[str | TooLong]:
    """Every line of `stream` as text (UTF-8; bytes that are not become lone surrogates), or
    TOO_LONG for one longer than `limit` bytes, whose bytes are dropped as they arrive. Reads what
    is there (at most CHUNK_BYTES at a time) without waiting for more, so a request is answered as
    soon as its line is in."""
    read: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
    kept = bytearray()
    skipping = False
    while True:
        try:
            chunk = read(CHUNK_BYTES)
        except (OSError, ValueError):  # the peer went away (a reset socket, a closed pipe)
            chunk = b""
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = memoryview(chunk)[start : len(chunk) if end < 0 else end]
            if not skipping and len(kept) + len(piece) > limit:
                skipping = True
                kept.clear()
            if not skipping:
                kept += piece
            if end < 0:
                break
            yield TOO_LONG if skipping else kept.decode("utf-8", "surrogateescape")
            kept.clear()
            skipping = False
            start = end + 1
    if skipping:
        yield TOO_LONG
    elif kept:
        yield kept.decode("utf-8", "surrogateescape")


def too_long(line_number: int) -> BadFrame:
    return BadFrame(None, InvalidRequest(f"line {line_number} is longer than {MAX_LINE_BYTES} bytes"))


def serve(
    source: IO[bytes],
    output: IO[str],
    *,
    repo_dir: str | None = None,
    implied_type: str | None = None,
) -> int:
    """Answer every request line until EOF; returns the process exit code (0)."""
    writer = StreamWriter(output)
    try:
        _serve_lines(source, writer, repo_dir, implied_type)
    finally:
        writer.finish()
    return 0


def _serve_lines(
    source: IO[bytes], writer: FrameWriter, repo_dir: str | None, implied_type: str | None
) -> None:
    seen: set[str] = set()
    helpers = Helpers()
    slots = threading.BoundedSemaphore(MAX_PIPELINED)
    ended = threading.Event()  # the input reached its end: subscriptions end with `closed`
    streams: list[threading.Thread] = []
    with ThreadPoolExecutor(max_workers=MAX_WORKERS) as pool:
        for number, raw in enumerate(bounded_lines(source), start=1):
            if isinstance(raw, TooLong):  # a payload line (implied type) is named by its number
                refuse(writer, None if implied_type is None else str(number), too_long(number).error, number)
                continue
            line = raw.strip()
            if not line:
                continue
            try:
                if implied_type is not None:
                    request_id, request_type, payload = _implied(line, number, implied_type)
                else:
                    request_id, request_type, payload = parse_frame(line, number, seen)
            except BadFrame as bad:
                refuse(writer, bad.request_id, bad.error, number)
                continue
            if repo_dir is not None and "repoDir" not in payload:
                payload = {**payload, "repoDir": repo_dir}
            slots.acquire()  # waits while MAX_PIPELINED requests of this stream are unanswered
            if request_type in STREAMS:  # may last for hours: a thread of its own, not a worker
                positioned = threading.Event()
                stream = threading.Thread(
                    target=_answer_stream,
                    args=(slots.release, writer, request_id, request_type, payload, ended, positioned),
                    name="swamp-jsonl-stream",
                    daemon=True,
                )
                stream.start()
                streams.append(stream)
                positioned.wait(POSITIONING_SECONDS)  # the next line is read once it has its start
                continue
            if implied_type is not None:
                pool.submit(_answer_then, slots.release, writer, request_id, request_type, payload, number)
                continue
            helpers.arrived(request_type)
            request = Request(
                request_id, request_type, line, number, repo_dir, executes=executes(request_type, payload)
            )
            finish = functools.partial(_finished, helpers, request_type, slots.release)
            if not helpers.hand_off(request, writer.write_lines, finish):
                pool.submit(_answer_here_or_there, writer, helpers, request, payload, finish)
        ended.set()
        for stream in streams:
            stream.join()
    helpers.close()  # after the pool: a request it held may have gone to a helper


# Requests that stream until they are stopped; each gets a thread of its own.
# How long a reader waits for a subscription to fix its start before reading on regardless (a
# store that answers that slowly is failing; the subscription then reports it).
POSITIONING_SECONDS = 30.0
STREAMS = frozenset({"events.subscribe"})


def _answer_stream(
    release: Callable[[], None],
    writer: FrameWriter,
    request_id: Any,
    request_type: str,
    payload: Any,
    ended: threading.Event,
    positioned: threading.Event,
) -> None:
    """Answer a subscription, which ends with `closed` once the input has reached its end;
    `positioned` is set once it has fixed its start (or it failed), for the reader waiting on it."""
    from ..app.events import SUBSCRIPTION_POSITIONED, SUBSCRIPTION_STOP

    token = SUBSCRIPTION_STOP.set(lambda: "closed" if ended.is_set() else None)
    placed = SUBSCRIPTION_POSITIONED.set(positioned.set)
    try:
        answer(writer, request_id, request_type, payload, handle)
    finally:
        SUBSCRIPTION_POSITIONED.reset(placed)
        SUBSCRIPTION_STOP.reset(token)
        positioned.set()
        release()


def _answer_then(
    release: Callable[[], None],
    writer: FrameWriter,
    request_id: Any,
    request_type: str,
    payload: Any,
    number: int,
) -> None:
    try:
        answer(writer, request_id, request_type, payload, handle, number)
    finally:
        release()


def _finished(helpers: Helpers, request_type: str, release: Callable[[], None]) -> None:
    helpers.finished(request_type)
    release()


def _answer_here_or_there(
    writer: FrameWriter, helpers: Helpers, request: Request, payload: Any, finish: Callable[[], None]
) -> None:
    """Answered here, unless helpers became ready since the request was read (a burst read while
    they were starting goes to them as soon as they can take it)."""
    if helpers.hand_off(request, writer.write_lines, finish):
        return
    try:
        answer(writer, request.id, request.type, payload, handle, request.number)
    finally:
        finish()


def _implied(line: str, number: int, request_type: str) -> tuple[Any, str, Any]:
    request_id = str(number)
    try:
        payload = json.loads(line)
    except ValueError as exc:
        raise BadFrame(request_id, InvalidRequest(f"line {number} is not JSON: {exc}")) from None
    if not isinstance(payload, dict):
        raise BadFrame(
            request_id, InvalidRequest(f"line {number} must be a JSON object (the request's payload)")
        )
    return request_id, request_type, payload


def serve_stdio(repo_dir: str | None = None, implied_type: str | None = None) -> int:
    from .channel import protect_stdout

    return serve(sys.stdin.buffer, protect_stdout(), repo_dir=repo_dir, implied_type=implied_type)
