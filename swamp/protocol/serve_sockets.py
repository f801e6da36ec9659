"""swamp serve --socket: the local Unix socket (mode 0600; with --socket-access 0660 and the
group's ownership, or 0666; a stale one of ours replaced, anyone else's left alone), its accept
loop, --max-connections (a connection past it is refused with a frame), a thread per client
reading its requests, and each client's queued answers flushed before serve exits."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable

from ..domain.actors import Actor
from ..domain.errors import ServeError, TooManyRequests
from .connection import MAX_UNREAD_BYTES, ConnectionWriter
from .serve_flights import Flights
from .serve_intake import Intake

REFUSED_READ_BYTES = 64 * 1024  # what a refused client already sent, read so its close is clean
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# sun_path holds 108 bytes on Linux (104 on BSD and macOS), its terminating NUL included.
MAX_SOCKET_PATH = 107


def too_long(path: str) -> str:
    """Why a Unix socket cannot be at `path`, and what to do."""
    return (
        f"{path} is {len(os.fsencode(path))} bytes long; a Unix socket's path holds at most "
        f"{MAX_SOCKET_PATH}: choose a shorter one, such as $XDG_RUNTIME_DIR/swamp.sock"
    )


class SocketListener:
    def __init__(
        self,
        max_connections: int,
        intake: Intake,
        flights: Flights,
        shutting_down: threading.Event,
        log: Callable[[str], None],
    ):
        self.max_connections = max_connections
        self.intake = intake
        self.flights = flights
        self.shutting_down = shutting_down
        self.log = log
        self.lock = threading.Lock()
        self.open_connections = 0  # --socket connections being served now (SERVE-045)
        self.refusing = False  # connections are being turned away: logged once until one closes
        self.writers: set[ConnectionWriter] = set()  # each connection's, to flush at the end
        self.listener: socket.socket | None = None
        self.path: str | None = None

    def listen(self, path: str, group: int | None = None, anyone: bool = False) -> None:
        """Listen on `path`: for serve's own account alone, or also for `group`'s members, or for
        `anyone` (--socket-access, ACCESS-070); each peer's account from the kernel all the same."""
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            raise ServeError(too_long(path), {"socket": path, "maximum": MAX_SOCKET_PATH})
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            found = None
        if found is not None:
            if not stat.S_ISSOCK(found.st_mode):  # a file, a directory, a symlink: not ours to remove
                raise ServeError(
                    f"{path} exists and is not a socket; remove it yourself or choose another --socket",
                    {"socket": path},
                    code="socket_path_taken",
                )
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                if found.st_uid != os.getuid():
                    raise ServeError(
                        f"{path} is a socket left by another user (uid {found.st_uid}); "
                        "it is theirs to remove: choose another --socket",
                        {"socket": path, "owner": found.st_uid},
                        code="socket_not_owned",
                    ) from None
                os.unlink(path)  # a stale socket left by a serve of ours that died
            else:
                probe.close()
                raise ServeError(
                    f"{path} is in use by a running swamp serve; stop it or choose another --socket",
                    {"socket": path},
                    code="socket_in_use",
                )
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        except OSError as exc:  # its folder is missing or not ours to write in
            listener.close()
            raise ServeError(
                f"Could not listen on {path}: {exc.strerror or exc}; --socket needs a folder that "
                "exists and that serve's account can write in",
                {"socket": path},
            ) from None
        finally:
            os.umask(old_mask)
        try:
            if group is not None:  # the group first: the socket is never open to the wrong group
                os.chown(path, -1, group)
            os.chmod(path, 0o666 if anyone else 0o660 if group is not None else 0o600)
        except OSError as exc:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise ServeError(
                f"Could not give {path} to group {group} (--socket-access): {exc.strerror}; serve's "
                "account must belong to that group",
                {"socket": path},
            ) from None
        listener.listen(64)
        self.listener = listener
        self.path = path
        threading.Thread(target=self._accept, name="swamp-serve-accept", daemon=True).start()
        self.log(f"listening on {path}")

    def stop_accepting(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.close()

    def remove(self) -> None:
        """Remove the socket file, once serve is done with it."""
        if self.path:
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def _accept(self) -> None:
        assert self.listener is not None
        starved = False
        while not self.shutting_down.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError as exc:
                if exc.errno not in OUT_OF_DESCRIPTORS or self.shutting_down.is_set():
                    return  # the listener was closed: shutdown
                if not starved:
                    self.log(
                        f"cannot accept a connection ({os.strerror(exc.errno or 0)}); trying again as "
                        "descriptors free up: lower --max-connections or raise the limit (ulimit -n)"
                    )
                starved = True
                time.sleep(0.1)  # the pending connection waits in the listen queue meanwhile
                continue
            starved = False
            with self.lock:
                admitted = self.open_connections < self.max_connections
                if admitted:
                    self.open_connections += 1
            if not admitted:
                self._turn_away(client)
                continue
            try:
                threading.Thread(target=self._serve_client, args=(client,), daemon=True).start()
            except RuntimeError:  # no thread to be had: as if the limit were reached
                self._closed_connection()
                self._turn_away(client)

    def _turn_away(self, client: socket.socket) -> None:
        """Refuse a connection past --max-connections with a frame (SERVE-045), without a thread
        or a wait: the frames fit an empty socket buffer, and what the client already sent is read
        so that closing does not reset the connection before it reads them."""
        limit = self.max_connections
        with self.lock:
            first, self.refusing = not self.refusing, True
        if first:
            self.log(f"{limit} connections are open (--max-connections): refusing new ones until one closes")
        error = TooManyRequests(
            f"swamp serve already has {limit} connections open (--max-connections); close one of "
            "yours or try again later",
            {"maxConnections": limit},
        )
        frames = [{"type": "error", "id": None, "error": error.to_dict()}, {"type": "done", "id": None}]
        data = "".join(json.dumps(f, separators=(",", ":")) + "\n" for f in frames).encode()
        try:
            client.setblocking(False)
            with contextlib.suppress(OSError):
                client.send(data)
                client.shutdown(socket.SHUT_WR)
            with contextlib.suppress(OSError):
                client.recv(REFUSED_READ_BYTES)
        finally:
            client.close()

    def _closed_connection(self) -> None:
        with self.lock:
            self.open_connections -= 1
            self.refusing = False

    def _serve_client(self, client: socket.socket) -> None:
        reader = client.makefile("rb")
        number = self.intake.next_connection()
        writer: ConnectionWriter | None = None

        def cut_off(unsent: int) -> None:
            self.log(
                f"connection {number}: closed, its client left {unsent} bytes of frames unread "
                f"(more than {MAX_UNREAD_BYTES}); its requests go on without it"
            )

        try:
            writer = ConnectionWriter(client, cut_off)
            with self.lock:
                self.writers.add(writer)
            actor = peer_actor(client)
            self.intake.read_connection(reader, writer, number, actor)
            # Only this connection's requests: another client's subscription may last for days,
            # and this socket (and thread) would wait for it.
            self.flights.drain(conn=number)
            writer.finish()
        except (OSError, ValueError):
            pass  # the client went away; its requests finish without it
        except RuntimeError:  # no thread could be started for it (its frames, a subscription)
            self.log(f"connection {number}: closed, no thread could be started for it")
        finally:
            if writer is not None:
                with self.lock:
                    self.writers.discard(writer)
            # Its place is free before it is closed: a client that sees it end may connect again.
            self._closed_connection()
            for handle in (reader, client):
                with contextlib.suppress(OSError, ValueError):
                    handle.close()

    def flush(self, deadline: float) -> None:
        """Send what each connection still has queued (its last answers) before serve exits; a
        client that does not read gets until `deadline`."""
        with self.lock:
            writers = list(self.writers)
        for writer in writers:
            writer.finish(timeout=max(0.0, deadline - time.monotonic()))


def peer_actor(client: socket.socket) -> Actor:
    """The account of the process at the other end of a Unix socket, from the kernel (SO_PEERCRED),
    never from anything the client says. Where the OS has no SO_PEERCRED, the socket's mode (0600)
    admits only serve's own user, so that is who it is."""
    from ..store.clock import account_of

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return Actor(account_of(os.getuid()))
    _pid, uid, _gid = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return Actor(account_of(uid))
