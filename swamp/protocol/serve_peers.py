"""swamp serve as the gatekeeper for other accounts (spec/access.md, ACCESS-074..ACCESS-077): what a
peer of the socket whose account is not serve's own may ask. It may read and answer, and nothing
else: whoever can run, resume, cancel or create can act as serve's account, which owns the store.
The dispatcher asks `refusal` of every request before it is handed anywhere (a pool worker, a
helper process, a hosted run)."""

from __future__ import annotations

import os
from typing import Any

from ..domain.actors import Actor
from ..domain.errors import PermissionDenied

# Reading and answering; the protocol's own version request; `cancel` of a request of its own
# connection (by `id`: a watch it no longer wants), never of a run.
PEER_REQUESTS = frozenset(
    {
        "workflow.waits",
        "workflow.wait.show",
        "workflow.watch",
        "workflow.history",
        "workflow.history.get",
        "workflow.approvals",
        "workflow.list",
        "workflow.get",
        "events.subscribe",
        "workflow.signal",
        "workflow.approve",
        "workflow.reject",
        "workflow.wait.grant",
        "workflow.wait.revoke",
        "workflow.wait.link",
        "workflow.link.show",
        "protocol.version",
        "cancel",
    }
)
ANSWERS = frozenset({"workflow.signal", "workflow.approve", "workflow.reject"})
SHOWN = sorted(PEER_REQUESTS - {"protocol.version", "cancel"})


class Peers:
    """Who serve's own account is, and what the others may ask."""

    def __init__(self, repo_dir: str | None):
        from ..store.clock import account_of

        self.own = account_of(os.getuid())
        self.repo = os.path.realpath(repo_dir or os.getcwd())

    def foreign(self, actor: Actor | None) -> bool:
        """A socket peer that is not serve's own account (None: stdin, serve's own)."""
        return actor is not None and actor.account != self.own

    def refusal(self, request_type: str, payload: Any, actor: Actor | None) -> PermissionDenied | None:
        """permission_denied for what a foreign peer may not ask; None when it may (or is serve's own)."""
        if not self.foreign(actor) or not isinstance(payload, dict):
            return None  # a payload that is not an object is refused as usual (invalid_request)
        assert actor is not None
        who = actor.account
        details: dict[str, Any] = {"request": request_type, "account": who}
        if request_type not in PEER_REQUESTS:
            return PermissionDenied(
                f"{who} may not make {request_type} through this swamp serve: it runs as {self.own}, "
                f"and other accounts may only read and answer ({', '.join(SHOWN)}); ask {self.own}'s "
                "owner to do it, or use one of those",
                {**details, "allowed": SHOWN},
            )
        if request_type == "cancel" and "run" in payload:
            return PermissionDenied(
                f"{who} may not cancel runs through this swamp serve (it runs as {self.own}); "
                f"ask {self.own}'s owner to cancel it. A request of your own is cancelled by its 'id'",
                {**details, "field": "run"},
            )
        if request_type in ANSWERS and payload.get("resume"):
            return PermissionDenied(
                f"{who} may answer through this swamp serve but not resume the run (it runs as "
                f"{self.own}): send the answer without resume; the run continues when serve's owner "
                "resumes it, or by itself if serve runs with --auto-continue",
                {**details, "field": "resume"},
            )
        repo = payload.get("repoDir")
        if isinstance(repo, str) and os.path.realpath(repo) != self.repo:
            return PermissionDenied(
                f"{who} may use this swamp serve only on its own repository ({self.repo}); leave "
                "out repoDir (and --repo-dir)",
                {**details, "field": "repoDir"},
            )
        return None
