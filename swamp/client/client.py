"""`Client`: a program's handle on `swamp serve`, one method per request type.

Each method builds the request's payload from its keyword arguments (named like the payload's
fields, in snake_case: `wait_id` is `waitId`, `from_` is `from`; an argument left `None` is not
sent), sends it on the shared connection (wire.py) and returns the result `data` as the plain dict
swamp sent, typed by results.py. A refusal raises `SwampError`. Requests that stream events (run,
resume, signal, approve, reject, watch) take `on_event`, called in the caller's thread for each
event as it arrives; `start()` gives the `Call` itself for any request type, and `subscribe()` the
repository's events as an iterator.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal as signals
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, cast

from . import results as r
from .errors import ConnectionLost, SwampError
from .wire import DROPPED, Call, Connection, Event

OnEvent = Callable[[Event], None] | None
PathArg = str | os.PathLike[str]

# Not sent: the payload field `payload` of a signal may be any JSON value, `null` included.
_UNSET: Any = object()

_WIRE_NAMES = {
    "repo_dir": "repoDir",
    "wait_id": "waitId",
    "payload_text": "payloadText",
    "claim_timeout": "claimTimeout",
    "expiring_within": "expiringWithin",
    "from_": "from",
    "permission_id": "permissionId",
    "delivery_id": "deliveryId",
}

STDERR_LINES_KEPT = 200


class Client:
    """A connection to `swamp serve`, safe to share between threads.

    >>> from swamp.client import Client
    >>> with Client.spawn("path/to/repo") as client:        # swamp serve on stdin/stdout
    ...     run = client.run("release")                       # suspended at its wait
    ...     wait = run["waits"][0]["waitId"]
    ...     done = client.signal(wait, {"verdict": "ship"}, resume=True)
    ...     done["run"]["status"]                             # 'succeeded'

    `Client.connect(path)` uses a running `swamp serve --socket PATH` instead.
    """

    # The method behind each request type (tests check it covers every one swamp answers).
    METHODS = {
        "repo.init": "repo_init",
        "store.status": "store_status",
        "store.migrate": "store_migrate",
        "store.copy": "store_copy",
        "workflow.list": "list_workflows",
        "workflow.get": "get_workflow",
        "workflow.create": "create_workflow",
        "workflow.validate": "validate",
        "workflow.run": "run",
        "workflow.resume": "resume",
        "workflow.cancel": "cancel",
        "workflow.watch": "watch",
        "workflow.history": "history",
        "workflow.history.get": "history_get",
        "workflow.approve": "approve",
        "workflow.reject": "reject",
        "workflow.approvals": "approvals",
        "workflow.signal": "signal",
        "workflow.waits": "waits",
        "workflow.wait.show": "wait_show",
        "workflow.wait.grant": "grant",
        "workflow.wait.revoke": "revoke",
        "workflow.wait.link": "link",
        "workflow.link.show": "link_show",
        "model.list": "models",
        "model.get": "get_model",
        "model.create": "create_model",
        "model.type.list": "model_types",
        "protocol.version": "protocol_version",
        "serve.status": "serve_status",
        "cancel": "cancel_request",
        "events.subscribe": "subscribe",
    }

    def __init__(
        self,
        connection: Connection,
        close: Callable[[float], None],
        repo_dir: PathArg | None = None,
        process: subprocess.Popen[bytes] | None = None,
        stderr: collections.deque[str] | None = None,
    ):
        self._connection = connection
        self._close = close
        self._repo_dir = _absolute(repo_dir)
        self._closed = False
        self.process = process
        """The `swamp serve` process of `spawn()`; None for `connect()`."""
        self._stderr = stderr

    # -- opening and closing ---------------------------------------------------------------------

    @classmethod
    def spawn(
        cls,
        repo_dir: PathArg | None = None,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: PathArg | None = None,
    ) -> Client:
        """Start `swamp serve` (this Python's swamp) and talk to it over its stdin and stdout.

        `repo_dir` becomes serve's `--repo-dir`; `args` are more serve options (`--auto-continue`,
        `--socket PATH`, ...); `env` is added to this process's environment (`{"SWAMP_NOW": ...}`).
        Serve's log lines (its stderr) are kept, the last 200, in `serve_log()`. `close()` ends it:
        EOF on its stdin, and SIGTERM too when it also listens on a `--socket` (its other clients'
        requests in flight are then answered as SERVE-027 says). With `--socket`, it returns once
        the socket listens, so `Client.connect(path)` can follow at once.
        """
        argv = [sys.executable, "-m", "swamp", "serve"]
        if repo_dir is not None:
            argv += ["--repo-dir", str(_absolute(repo_dir))]
        argv += list(args)
        listening = any(arg == "--socket" or arg.startswith("--socket=") for arg in args)
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env} if env is not None else None,
            cwd=cwd,
        )
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        assert stdin is not None and stdout is not None and stderr is not None
        kept: collections.deque[str] = collections.deque(maxlen=STDERR_LINES_KEPT)
        drain = threading.Thread(
            target=_keep_lines, args=(stderr, kept), name="swamp-serve-stderr", daemon=True
        )
        drain.start()
        closing = threading.Event()

        def send(line: bytes) -> None:
            stdin.write(line)
            stdin.flush()

        def ended() -> tuple[str, dict[str, Any]]:
            if closing.is_set():
                return "this client was closed; open a new one", {}
            try:
                code: int | None = process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
            drain.join(timeout=1)
            last = list(kept)[-20:]
            said = f": {last[-1]}" if last else ""
            what = "closed its output" if code is None else f"exited {code}"
            advice = "start a new Client (a request in flight may have taken effect)"
            return f"swamp serve {what}{said}; {advice}", {"exitCode": code, "stderr": last}

        connection = Connection(stdout, send, ended)

        def close(timeout: float) -> None:
            closing.set()
            with contextlib.suppress(OSError):
                stdin.close()  # EOF: serve finishes what it was asked, then exits 0 (SERVE-002)
            try:
                if listening:  # with --socket, EOF does not end serve (SERVE-009): SIGTERM does
                    process.send_signal(signals.SIGTERM)
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.send_signal(signals.SIGTERM)  # shutdown answers every request (SERVE-030)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            connection.join(timeout=5)
            drain.join(timeout=5)
            stdout.close()
            stderr.close()

        client = cls(connection, close, process=process, stderr=kept)
        if listening:  # answered once serve listens (it binds its socket before reading stdin)
            try:
                client.serve_status()
            except BaseException:
                client.close()
                raise
        return client

    @classmethod
    def connect(cls, path: PathArg, *, repo_dir: PathArg | None = None) -> Client:
        """Connect to `swamp serve --socket PATH`. Refuses (`socket_not_owned`), before sending
        anything, a connection whose other end runs as another user than you or root, as the kernel
        says of the connected socket (SERVE-046), unless that user owns the folder holding PATH (a
        service account's serve shared with --socket-access, in its own /run/swamp: ACCESS-082).
        `repo_dir` is the default repository of every request (else serve's); raises `OSError`
        when nothing listens at PATH."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(os.fspath(path))
            owner = peer_uid(sock)
            if owner is None:  # no way to ask the kernel here: the socket file's owner is all there is
                owner = os.stat(path).st_uid
            if not trusted_serve(os.fspath(path), owner):  # it may be collecting what we send
                raise SwampError(
                    "socket_not_owned",
                    f"{os.fspath(path)} is served by uid {owner}, which is neither you, root, nor the "
                    "owner of the folder it is in; connect to your own serve (a socket in a directory "
                    "only you can write, such as $XDG_RUNTIME_DIR) or to a serve in a folder its "
                    "account owns (such as /run/swamp)",
                    {"path": os.fspath(path), "owner": owner},
                )
        except BaseException:
            sock.close()
            raise
        reader = sock.makefile("rb")
        closing = threading.Event()

        def ended() -> tuple[str, dict[str, Any]]:
            if closing.is_set():
                return "this client was closed; open a new one", {}
            return (
                f"the connection to swamp serve at {os.fspath(path)} closed; connect again "
                "(a request in flight may have taken effect)",
                {"path": os.fspath(path)},
            )

        def abort() -> None:
            sock.shutdown(socket.SHUT_RDWR)

        connection = Connection(reader, sock.sendall, ended, abort)

        def close(timeout: float) -> None:
            closing.set()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            connection.join(timeout=timeout)
            reader.close()
            sock.close()

        return cls(connection, close, repo_dir=repo_dir)

    def close(self, timeout: float = 10.0) -> None:
        """End the connection; later calls raise `ConnectionLost`. A spawned serve gets EOF: it
        answers what it was asked (subscriptions end `closed`) and exits, given `timeout` seconds
        before SIGTERM (with `--socket`, SIGTERM at once). On a socket, calls still in flight raise
        `ConnectionLost` (serve carries them out all the same, SERVE-033)."""
        if self._closed:
            return
        self._closed = True
        self._close(timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def serve_log(self) -> list[str]:
        """The last lines a spawned serve wrote to its stderr (its log); empty for `connect()`."""
        return list(self._stderr or ())

    @property
    def connected(self) -> bool:
        """False once the connection has ended (closed, or serve went away)."""
        return not self._connection.lost

    # -- any request -------------------------------------------------------------------------------

    def start(self, request_type: str, payload: Mapping[str, Any] | None = None) -> Call:
        """Send a request (its payload as on the wire) and return its `Call` at once.

        >>> call = client.start("workflow.watch", {"run": run_id})
        >>> for event in call.events(): ...
        >>> call.result()
        """
        return self._connection.start(request_type, dict(payload or {}))

    def request(
        self, request_type: str, payload: Mapping[str, Any] | None = None, on_event: OnEvent = None
    ) -> dict[str, Any]:
        """Send a request and wait for its result `data` (the raw dict). Without `on_event` its
        events are not kept."""
        call = self._connection.start(request_type, dict(payload or {}), keep_events=on_event is not None)
        if on_event is not None:
            for event in call.events():
                on_event(event)
        return call.result()

    def _ask(self, request_type: str, on_event: OnEvent = None, /, **fields: Any) -> Any:
        return self.request(request_type, self._payload(fields), on_event)

    def _payload(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        payload = {
            _WIRE_NAMES.get(key, key): value
            for key, value in fields.items()
            if value is not None and value is not _UNSET
        }
        if fields.get("payload", _UNSET) is None:
            payload["payload"] = None  # a signal's null payload is a value, not an absence
        if "repoDir" in payload:
            payload["repoDir"] = str(_absolute(payload["repoDir"]))
        elif self._repo_dir is not None and "repo_dir" in fields:
            payload["repoDir"] = str(self._repo_dir)
        return payload

    # -- runs ----------------------------------------------------------------------------------------

    def run(
        self,
        workflow: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.RunResult:
        """`workflow.run`: run WORKFLOW until it ends or suspends; the run document.

        >>> client.run("release", inputs={"version": "1.2"}, on_event=lambda e: print(e["event"]))
        """
        return cast(
            r.RunResult,
            self._ask("workflow.run", on_event, workflow=workflow, inputs=inputs, repo_dir=repo_dir),
        )

    def resume(
        self,
        workflow: str,
        *,
        run: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        from_: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.ResumeResult:
        """`workflow.resume`: continue a suspended (or failed, with `from_`) run."""
        return cast(
            r.ResumeResult,
            self._ask(
                "workflow.resume",
                on_event,
                workflow=workflow,
                run=run,
                inputs=inputs,
                from_=from_,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def cancel(
        self,
        workflow: str,
        *,
        run: str | None = None,
        reason: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.RunDocument:
        """`workflow.cancel`: cancel a suspended run (the workflow's latest, or `run`)."""
        return cast(
            r.RunDocument,
            self._ask(
                "workflow.cancel",
                None,
                workflow=workflow,
                run=run,
                reason=reason,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def watch(
        self,
        run: str,
        *,
        timeout: float | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.WatchResult:
        """`workflow.watch`: wait until the run ends (or `timeout` seconds); `["watch"]["outcome"]`."""
        return cast(
            r.WatchResult, self._ask("workflow.watch", on_event, run=run, timeout=timeout, repo_dir=repo_dir)
        )

    def history(
        self, workflow: str | None = None, *, limit: int | None = None, repo_dir: PathArg | None = None
    ) -> r.History:
        """`workflow.history`: the runs, newest first."""
        return cast(
            r.History, self._ask("workflow.history", None, workflow=workflow, limit=limit, repo_dir=repo_dir)
        )

    def history_get(self, run: str, *, repo_dir: PathArg | None = None) -> r.RunHistory:
        """`workflow.history.get`: one run's record and audit trail."""
        return cast(r.RunHistory, self._ask("workflow.history.get", None, run=run, repo_dir=repo_dir))

    # -- waits and gates -------------------------------------------------------------------------------

    def waits(
        self,
        *,
        workflow: str | None = None,
        expiring_within: float | str | None = None,
        all: bool | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.Waits:
        """`workflow.waits`: the open waits (`all`: expired ones too)."""
        return cast(
            r.Waits,
            self._ask(
                "workflow.waits",
                None,
                workflow=workflow,
                expiring_within=expiring_within,
                all=all,
                repo_dir=repo_dir,
            ),
        )

    def wait_show(
        self,
        wait_id: str | None = None,
        *,
        run: str | None = None,
        step: str | None = None,
        job: str | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.WaitShow:
        """`workflow.wait.show`: one wait by ID (or unique prefix), or by `run` and `step`."""
        return cast(
            r.WaitShow,
            self._ask(
                "workflow.wait.show", None, wait_id=wait_id, run=run, step=step, job=job, repo_dir=repo_dir
            ),
        )

    def signal(
        self,
        wait_id: str | None = None,
        payload: Any = _UNSET,
        *,
        payload_text: str | None = None,
        run: str | None = None,
        step: str | None = None,
        job: str | None = None,
        check: bool | None = None,
        resume: bool | None = None,
        token: str | None = None,
        override: str | None = None,
        delivery_id: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.SignalResult:
        """`workflow.signal`: answer a wait with `payload` (any JSON value, `None` is null) or
        `payload_text`; `resume=True` continues the run in the same request (`["run"]`);
        `override` (an admin's reason) answers past the wait's answerer policy; `token` delivers
        with a signal permission (see `grant`); `delivery_id` is the sender's ID of this delivery,
        kept on the receipt so that sending it again is known as a replay (`sameDelivery`).

        >>> client.signal("wait_3bqx", {"verdict": "ship"}, resume=True)["continued"]
        >>> client.signal(run=run_id, step="review", payload={"verdict": "fix"})
        >>> client.signal(wait_id, {"verdict": "ship"}, token=token)["signal"]["permissionId"]
        """
        return cast(
            r.SignalResult,
            self._ask(
                "workflow.signal",
                on_event,
                wait_id=wait_id,
                payload=payload,
                payload_text=payload_text,
                run=run,
                step=step,
                job=job,
                check=check,
                resume=resume,
                token=token,
                override=override,
                delivery_id=delivery_id,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def grant(
        self,
        wait_id: str | None = None,
        *,
        run: str | None = None,
        step: str | None = None,
        job: str | None = None,
        expires: str | float | None = None,
        uses: int | None = None,
        note: str | None = None,
        override: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.PermissionGranted:
        """`workflow.wait.grant`: a signal permission for one open wait; its token (in
        `["permission"]["token"]`) is shown this once. `expires` is seconds or a duration ("2h").

        >>> token = client.grant(wait_id, expires="2h", uses=1)["permission"]["token"]
        """
        return cast(
            r.PermissionGranted,
            self._ask(
                "workflow.wait.grant",
                None,
                wait_id=wait_id,
                run=run,
                step=step,
                job=job,
                expires=expires,
                uses=uses,
                note=note,
                override=override,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def link(
        self,
        wait_id: str | None = None,
        *,
        run: str | None = None,
        step: str | None = None,
        job: str | None = None,
        expires: str | float | None = None,
        override: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.LinkMade:
        """`workflow.wait.link`: a one-use answer link for one open wait, `<gateway.publicUrl>/a/<token>`
        (`["url"]`), granted as `grant(uses=1)` is; shown this once.

        >>> url = client.link(wait_id, expires="1d")["url"]
        """
        return cast(
            r.LinkMade,
            self._ask(
                "workflow.wait.link",
                None,
                wait_id=wait_id,
                run=run,
                step=step,
                job=job,
                expires=expires,
                override=override,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def link_show(self, token: str, *, repo_dir: PathArg | None = None) -> r.LinkShown:
        """`workflow.link.show`: the permission a link's token is (its state) and its wait, as
        `wait_show` gives it; never the token.

        >>> client.link_show(token)["permission"]["state"]
        """
        return cast(r.LinkShown, self._ask("workflow.link.show", None, token=token, repo_dir=repo_dir))

    def revoke(
        self,
        permission_id: str,
        *,
        override: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
    ) -> r.PermissionRevoked:
        """`workflow.wait.revoke`: the permission delivers nothing from now on."""
        return cast(
            r.PermissionRevoked,
            self._ask(
                "workflow.wait.revoke",
                None,
                permission_id=permission_id,
                override=override,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def approve(
        self,
        workflow: str | None = None,
        step: str | None = None,
        *,
        run: str | None = None,
        job: str | None = None,
        reason: str | None = None,
        resume: bool | None = None,
        override: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.ApproveResult:
        """`workflow.approve`: approve the gate STEP of the workflow's latest suspended run (or
        `run`); `override` (an admin's reason) approves past the gate's approver policy."""
        return cast(
            r.ApproveResult,
            self._ask(
                "workflow.approve",
                on_event,
                workflow=workflow,
                step=step,
                run=run,
                job=job,
                reason=reason,
                resume=resume,
                override=override,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def reject(
        self,
        workflow: str | None = None,
        step: str | None = None,
        *,
        wait_id: str | None = None,
        run: str | None = None,
        job: str | None = None,
        reason: str | None = None,
        override: str | None = None,
        claim_timeout: float | None = None,
        repo_dir: PathArg | None = None,
        on_event: OnEvent = None,
    ) -> r.RejectResult:
        """`workflow.reject`: reject a gate (WORKFLOW, STEP), or a signal wait with `wait_id` alone;
        `override` (an admin's reason) rejects past its policy."""
        return cast(
            r.RejectResult,
            self._ask(
                "workflow.reject",
                on_event,
                workflow=workflow,
                step=step,
                wait_id=wait_id,
                run=run,
                job=job,
                reason=reason,
                override=override,
                claim_timeout=claim_timeout,
                repo_dir=repo_dir,
            ),
        )

    def approvals(self, *, workflow: str | None = None, repo_dir: PathArg | None = None) -> r.Approvals:
        """`workflow.approvals`: the open gates."""
        return cast(r.Approvals, self._ask("workflow.approvals", None, workflow=workflow, repo_dir=repo_dir))

    # -- workflows, models, the repository ----------------------------------------------------------

    def list_workflows(self, *, repo_dir: PathArg | None = None) -> r.WorkflowList:
        """`workflow.list`."""
        return cast(r.WorkflowList, self._ask("workflow.list", None, repo_dir=repo_dir))

    def get_workflow(self, workflow: str, *, repo_dir: PathArg | None = None) -> r.WorkflowDetail:
        """`workflow.get`: a workflow by name or id, its definition with defaults filled in."""
        return cast(r.WorkflowDetail, self._ask("workflow.get", None, workflow=workflow, repo_dir=repo_dir))

    def create_workflow(
        self, name: str, *, description: str | None = None, repo_dir: PathArg | None = None
    ) -> r.WorkflowCreated:
        """`workflow.create`: a new workflow file NAME."""
        return cast(
            r.WorkflowCreated,
            self._ask("workflow.create", None, name=name, description=description, repo_dir=repo_dir),
        )

    def validate(self, workflow: str | None = None, *, repo_dir: PathArg | None = None) -> r.Validation:
        """`workflow.validate`: one workflow, or every file without `workflow`; see `["passed"]`."""
        return cast(r.Validation, self._ask("workflow.validate", None, workflow=workflow, repo_dir=repo_dir))

    def models(self, *, repo_dir: PathArg | None = None) -> r.ModelList:
        """`model.list`."""
        return cast(r.ModelList, self._ask("model.list", None, repo_dir=repo_dir))

    def get_model(self, model: str, *, repo_dir: PathArg | None = None) -> r.ModelDetail:
        """`model.get`: a model definition and its type."""
        return cast(r.ModelDetail, self._ask("model.get", None, model=model, repo_dir=repo_dir))

    def create_model(self, type: str, name: str, *, repo_dir: PathArg | None = None) -> r.ModelDefinition:
        """`model.create`: a model definition NAME of TYPE."""
        return cast(
            r.ModelDefinition, self._ask("model.create", None, type=type, name=name, repo_dir=repo_dir)
        )

    def model_types(self, *, repo_dir: PathArg | None = None) -> r.ModelTypeList:
        """`model.type.list`."""
        return cast(r.ModelTypeList, self._ask("model.type.list", None, repo_dir=repo_dir))

    def repo_init(self, path: PathArg | None = None) -> r.RepoInit:
        """`repo.init`: make PATH (default serve's current directory) a repository."""
        return cast(
            r.RepoInit, self._ask("repo.init", None, path=None if path is None else str(_absolute(path)))
        )

    # -- serve ------------------------------------------------------------------------------------------

    def store_status(self) -> r.StoreStatus:
        """`store.status`: which run store serve's repository uses, and its schema version."""
        return cast(r.StoreStatus, self.request("store.status"))

    def store_migrate(self) -> r.StoreMigrated:
        """`store.migrate`: apply the PostgreSQL store's missing migrations."""
        return cast(r.StoreMigrated, self.request("store.migrate"))

    def store_copy(
        self, to: str, from_: str | None = None, *, repo_dir: PathArg | None = None
    ) -> r.StoreCopied:
        """`store.copy`: copy every run of the repository's store (or `from_`) into the empty store
        `to` (`file` or a PostgreSQL address), then verify both sides (STORE-031..035)."""
        return cast(r.StoreCopied, self._ask("store.copy", None, to=to, from_=from_, repo_dir=repo_dir))

    def protocol_version(self) -> r.ProtocolVersion:
        """`protocol.version`: the spec and protocol versions, and every request type served."""
        return cast(r.ProtocolVersion, self.request("protocol.version"))

    def serve_status(self) -> r.ServeStatus:
        """`serve.status`: serve's pid, uptime, runs and requests in flight."""
        return cast(r.ServeStatus, self.request("serve.status"))

    def cancel_request(self, *, id: str | None = None, run: str | None = None) -> r.Cancelled:
        """serve's `cancel`: stop this connection's request `id` (a `Call.id`), or whichever request
        executes `run`. `Call.cancel()` and `Subscription.close()` use it for you."""
        return cast(r.Cancelled, self.request("cancel", self._payload({"id": id, "run": run})))

    # -- events --------------------------------------------------------------------------------------------

    def subscribe(
        self,
        *,
        after: str | None = None,
        kinds: Sequence[str] | None = None,
        runs: Sequence[str] | None = None,
        timeout: float | None = None,
        repo_dir: PathArg | None = None,
    ) -> Subscription:
        """`events.subscribe`: the repository's events (`wait_opened`, `wait_settled`,
        `run_suspended`, `run_finished`), from any process, as an iterator.

        Without `after` it starts at the end of the log; with `after` (a cursor from an earlier
        subscription) it first replays what came since. `timeout` seconds (0: replay and end).

        >>> with client.subscribe(kinds=["wait_opened"]) as events:
        ...     for event in events:
        ...         print(event["waitId"], event["step"])
        >>> events.cursor                    # pass as `after` to carry on where this ended
        """
        payload = self._payload(
            {
                "after": after,
                "kinds": list(kinds) if kinds is not None else None,
                "runs": list(runs) if runs is not None else None,
                "timeout": timeout,
                "repo_dir": repo_dir,
            }
        )
        return Subscription(self.start("events.subscribe", payload), after)


class Subscription:
    """The events of one `events.subscribe`, in log order, until it ends.

    Iterate it for the events; when the iteration ends, `outcome` says why (`timeout`, `cancelled`,
    `closed`, `shutdown`) and `cursor` is where to carry on (`client.subscribe(after=sub.cursor)`).
    Events left unread too long are dropped for one `{"event": "events_dropped", "dropped": N,
    "after": CURSOR}`: subscribing again after CURSOR gets them back (PROTO-034).
    `cursor` is also kept up to date while iterating, so after a `ConnectionLost` it names the last
    event this program saw. `close()` (or leaving a `with` block) stops it on serve.
    """

    def __init__(self, call: Call, after: str | None):
        self.call = call
        self.cursor: str | None = after
        self.outcome: str | None = None
        self.end: r.SubscriptionEnd | None = None

    def __iter__(self) -> Iterator[Event]:
        for event in self.call.events():
            if event.get("event") == DROPPED:  # events not read in time (PROTO-034): where to get them
                event = {**event, "after": self.cursor}
            cursor = event.get("cursor")
            if isinstance(cursor, str):
                self.cursor = cursor
            yield event
        self._ended()

    def _ended(self) -> None:
        end = cast(r.SubscriptionEnd, self.call.result())
        self.end = end
        self.outcome = end.get("outcome")
        if end.get("cursor") is not None and not self.call.unread():
            self.cursor = end["cursor"]

    def close(self) -> None:
        """Stop the subscription on serve (serve's `cancel`) and wait for its end; events not read
        yet are dropped, and `cursor` stays at the last one read."""
        try:
            self.call.cancel()
        except ConnectionLost:
            return
        with contextlib.suppress(SwampError):  # a refusal (cursor_invalid, ...) is raised by iterating
            self._ended()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def trusted_serve(path: str, owner: int) -> bool:
    """Whether a serve whose process runs as uid `owner` may be sent requests (SERVE-046,
    ACCESS-082): yours, root's, or that of the account owning the folder that holds the socket.
    Anyone may leave a socket in a folder others can write (/tmp); a service account's serve is
    trusted in a folder it owns."""
    if owner in (os.getuid(), 0):
        return True
    try:
        folder = os.stat(os.path.dirname(os.path.abspath(path))).st_uid
    except OSError:
        return False
    return folder == owner


def peer_uid(sock: socket.socket) -> int | None:
    """The user ID of the process at the other end of a connected Unix socket, from the kernel
    (Linux: SO_PEERCRED; macOS and the BSDs: LOCAL_PEERCRED's xucred); None where neither exists."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is not None:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    bsd = sys.platform == "darwin" or sys.platform.startswith("freebsd")
    local_peercred = getattr(socket, "LOCAL_PEERCRED", 1 if bsd else None)
    if local_peercred is None:
        return None
    # struct xucred (76 bytes): u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]
    raw = sock.getsockopt(0, local_peercred, 76)  # level SOL_LOCAL, which is 0
    _version, uid = struct.unpack_from("2I", raw)
    return int(uid)


def _absolute(path: PathArg | None) -> Path | None:
    return None if path is None else Path(os.path.abspath(os.fspath(path)))


def _keep_lines(stream: IO[bytes], kept: collections.deque[str]) -> None:
    """Read serve's stderr to its end, keeping its last lines (so it never blocks on a full pipe)."""
    try:
        for line in stream:
            kept.append(line.decode("utf-8", "replace").rstrip("\n"))
    except (OSError, ValueError):
        pass
