"""Every refusal swamp makes, each with a stable snake_case code.

The code is the contract (other programs branch on it); the message is for people and always says
what to do next. Exit codes follow DESIGN.md: 3 for a refusal by a rule, 75 for a claim that could
not be had in time, 2 for bad usage, 1 for anything unexpected. Every exit code swamp's commands
use is named here (EXIT_*), so a number means the same thing in every file.
"""

from __future__ import annotations

import errno
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_WATCH_TIMEOUT = 4  # a watch's --timeout passed while the run had not ended (WATCH-002)
EXIT_RETRY = 75
EXIT_SIGINT = 130  # stopped by Ctrl-C (128 + SIGINT), also when the run is shown first (CLI-006)
EXIT_SIGTERM = 143  # stopped by SIGTERM (128 + SIGTERM)


class SwampError(Exception):
    """A refusal with a stable code, a one-line message and optional details."""

    code = "swamp_error"
    exit_code = EXIT_REFUSED

    def __init__(self, message: str, details: dict[str, Any] | None = None, *, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class RepoNotFound(SwampError):
    code = "repo_not_found"


class WorkflowNotFound(SwampError):
    code = "workflow_not_found"


class WorkflowInvalid(SwampError):
    code = "workflow_invalid"


class WorkflowExists(SwampError):
    code = "workflow_exists"


class InputInvalid(SwampError):
    code = "input_invalid"


class ExpressionError(SwampError):
    code = "expression_error"


class ModelNotFound(SwampError):
    code = "model_not_found"


class ModelInvalid(SwampError):
    code = "model_invalid"


class ModelExists(SwampError):
    code = "model_exists"


class RunNotFound(SwampError):
    code = "run_not_found"


class RunAmbiguous(SwampError):
    code = "run_ambiguous"


class RunUnreadable(SwampError):
    """A run record this version cannot read (unknown formatVersion, status or wait kind)."""

    code = "run_unreadable"


class SettingsInvalid(SwampError):
    """`.swamp.yaml` says something swamp does not understand (settings.py, webhook_routes.py)."""

    code = "settings_invalid"


class InvalidRequest(SwampError):
    code = "invalid_request"
    exit_code = EXIT_USAGE


class UsageError(SwampError):
    code = "usage_error"
    exit_code = EXIT_USAGE


class InternalError(SwampError):
    code = "internal_error"
    exit_code = EXIT_FAILED


class RunNotSuspended(SwampError):
    code = "run_not_suspended"


class RunTerminal(SwampError):
    code = "run_terminal"


class ClaimTimeout(SwampError):
    code = "claim_timeout"
    exit_code = EXIT_RETRY


class ApprovalPending(SwampError):
    code = "approval_pending"


class ApprovalExpired(SwampError):
    code = "approval_expired"


class AnswererNotAllowed(SwampError):
    """The acting account may not answer this wait or gate: its policy does not admit it, or it
    asked for an override it may not make (spec/access.md)."""

    code = "answerer_not_allowed"


class AlreadyApproved(SwampError):
    """The account's approval already counts towards the gate's `required` (ACCESS-015)."""

    code = "already_approved"


class StepNotWaiting(SwampError):
    code = "step_not_waiting"


class StepNotFound(SwampError):
    code = "step_not_found"


class ServiceUnavailable(SwampError):
    """service install/uninstall: systemd cannot take the unit here (spec/service.md; SERVICE-009)."""

    code = "service_unavailable"


class ServiceSecret(SwampError):
    """service install: a password would be written into a unit file (SERVICE-008)."""

    code = "service_secret"


class TooManyRequests(SwampError):
    code = "too_many_requests"


class ShuttingDown(SwampError):
    code = "shutting_down"


class ServeError(SwampError):
    code = "serve_error"


class CursorInvalid(SwampError):
    """An event cursor the repository's event log never gave (EVENT-012)."""

    code = "cursor_invalid"


class CursorExpired(SwampError):
    """An event cursor whose following events are no longer kept (EVENT-013); details name the
    oldest cursor still usable."""

    code = "cursor_expired"


class StorageError(SwampError):
    """The datastore could not be read or written (disk full, read-only, permissions, a symbolic
    link where swamp follows none)."""

    code = "storage_error"
    exit_code = EXIT_FAILED

    @classmethod
    def from_os_error(cls, exc: OSError, doing: str = "use") -> StorageError:
        """The refusal for an OSError met on the datastore: it names the path and what to do."""
        path = exc.filename if isinstance(exc.filename, str) else None
        shown = path or "the repository's .swamp folder"
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ELOOP:
            reason, fix = "it is a symbolic link", "remove the link (swamp follows none under .swamp)"
        elif exc.errno == errno.EROFS:
            fix = "put the repository on a writable file system"
        elif exc.errno == errno.ENOTDIR:
            fix = "remove what stands where swamp expects a folder"
        elif exc.errno == errno.ENOSPC:
            fix = "free disk space"
        else:
            fix = "make .swamp readable and writable by this user (or run as its owner)"
        return cls(
            f"Could not {doing} {shown}: {reason}; {fix}, then retry",
            {"path": path, "errno": exc.errno},
        )


class StoreUnavailable(SwampError):
    """The configured run store cannot be used from here: its driver is not installed, or the
    address names no store this swamp knows."""

    code = "store_unavailable"
    exit_code = EXIT_FAILED


class StoreSchemaMismatch(SwampError):
    """The database's schema is older or newer than this swamp (`swamp store migrate`)."""

    code = "store_schema_mismatch"
    exit_code = EXIT_FAILED


class UnsafeShellText(SwampError):
    """An expression in a shell argument sits where its value cannot be kept as data (MODEL-015)."""

    code = "shell_text_unsafe"


class StoreNotEmpty(SwampError):
    """`store copy`: the target store already holds runs; a copy never overwrites one."""

    code = "store_not_empty"


class StoreBusy(SwampError):
    """`store copy`: a run of the source is being changed (its claim is held)."""

    code = "store_busy"


class StoreSame(SwampError):
    """`store copy`: the source and the target are the same store."""

    code = "store_same"


class StoreCopyMismatch(SwampError):
    """`store copy`: the target read back differs from the source (counts or digest)."""

    code = "store_copy_mismatch"
    exit_code = EXIT_FAILED


class PermissionDenied(SwampError):
    """swamp serve: a peer of another account asked for a request that only serve's own account
    may make (spec/access.md, serve as the gatekeeper)."""

    code = "permission_denied"
