"""The result documents of swamp's requests, as TypedDicts.

A result is the plain `dict` decoded from the frame (the raw document, every field swamp sent kept);
these types only tell a type checker and a reader which keys to expect. They follow
spec/schemas/results.schema.json, which rules where they differ: every key here is a property of the
type's schema entry, and the keys marked required are those it always requires
(tests/test_client_types.py checks both; tests/test_client.py validates real results with it).
Nested documents that the spec shapes in detail (a run's jobs and steps, audit entries, receipts)
are left as `dict[str, Any]`; see spec/schemas/run-record.schema.json for them.

(No `from __future__ import annotations` here: a TypedDict tells its `NotRequired` keys apart at
run time only from evaluated annotations, and the tests read `__required_keys__`.)
"""

from typing import Any, Literal, NotRequired, TypedDict

RunStatus = Literal["pending", "running", "suspended", "succeeded", "failed", "cancelled"]


class RunDocument(TypedDict):
    """A run record as results carry it (RUN-001): `workflow.cancel` and the base of the others."""

    formatVersion: int
    id: str
    workflowId: str
    workflowName: str
    status: RunStatus
    createdAt: str
    jobs: list[dict[str, Any]]
    path: str
    startedAt: NotRequired[str | None]
    completedAt: NotRequired[str | None]
    durationMs: NotRequired[int | None]
    inputs: NotRequired[dict[str, Any]]
    resumeInputs: NotRequired[dict[str, Any]]
    tags: NotRequired[dict[str, Any]]
    initiatedBy: NotRequired[str]
    startedBy: NotRequired[str]
    onBehalfOf: NotRequired[str]
    failedStep: NotRequired[str | None]
    failureReason: NotRequired[str | None]
    cancelReason: NotRequired[str | None]
    interruption: NotRequired[dict[str, Any]]
    stepProgress: NotRequired[dict[str, Any]]
    retiredWaitIds: NotRequired[list[str]]
    gates: NotRequired[list[dict[str, Any]]]
    waits: NotRequired[list[dict[str, Any]]]
    next: NotRequired[list[str]]
    deadlineEnforced: NotRequired[bool]  # WAIT-090: a suspended run with a waiting step


class RunResult(RunDocument):
    """`workflow.run`: the run document and what it did to runs it superseded (RESUME-014)."""

    superseded: list[dict[str, Any]]
    hookWarnings: NotRequired[list[dict[str, Any]]]  # hooks that failed at once (HOOK-016)


class ResumeResult(RunDocument):
    """`workflow.resume`: the run document and whether its definition changed (RESUME-022)."""

    definitionChanged: bool
    definitionChanges: NotRequired[list[str]]
    hookWarnings: NotRequired[list[dict[str, Any]]]  # hooks that failed at once (HOOK-016)


class WatchOutcome(TypedDict):
    outcome: Literal["finished", "timeout", "interrupted", "cancelled"]


class WatchResult(RunDocument):
    """`workflow.watch`: the run document when the watch ended, and how it ended (WATCH-004)."""

    watch: WatchOutcome


class RunHistory(RunDocument):
    """`workflow.history.get` (RUN-012): the run document, `interrupted`, the audit trail and what
    each wait and gate was told (`answers`, RUN-031: kind, outcome, payload, by, at, ...)."""

    interrupted: bool
    audit: list[dict[str, Any]]
    answers: list[dict[str, Any]]


class RunSummary(TypedDict):
    runId: str
    workflowId: str
    workflowName: str
    status: RunStatus
    createdAt: str
    startedAt: str | None
    completedAt: str | None
    durationMs: int | None
    inputs: dict[str, Any]
    failedStep: str | None
    failureReason: str | None
    stepProgress: Any
    interrupted: bool


class History(TypedDict):
    """`workflow.history` (RUN-013): the runs, newest first, and the records that could not be read."""

    runs: list[RunSummary]
    unreadable: list[dict[str, Any]]


class WaitEntry(TypedDict):
    """One open wait (WAIT-009)."""

    waitId: str
    workflowName: str
    workflowId: str
    runId: str
    jobName: str
    stepName: str
    openedAt: str
    deadline: str
    secondsLeft: float
    expired: bool
    description: str | None
    schema: dict[str, Any] | bool
    answerers: NotRequired[dict[str, Any]]  # who may answer (ACCESS-001); absent: anyone
    hookFailed: NotRequired[dict[str, Any]]  # its waitOpened hook's last attempt failed (HOOK-017)


class Waits(TypedDict):
    """`workflow.waits`."""

    waits: list[WaitEntry]
    deadlineEnforced: NotRequired[bool]  # WAIT-090


class PermissionShown(TypedDict):
    """A signal permission as `wait show` and `revoke` show it (ACCESS-062): never its token."""

    id: str
    state: Literal["live", "expired", "revoked", "used_up", "ended"]
    grantedBy: str
    grantedAt: str
    expiresAt: NotRequired[str]
    uses: NotRequired[int]
    usesLeft: NotRequired[int]
    note: NotRequired[str]
    onBehalfOf: NotRequired[str]
    revokedAt: NotRequired[str]
    revokedBy: NotRequired[str]
    endedAt: NotRequired[str]
    usedBy: NotRequired[str]


class WaitShow(TypedDict):
    """`workflow.wait.show`: one wait, open or settled (with its receipt once answered, and what its
    hooks did), or a reserved one its step has not opened (`status` `reserved` or `closed`, with the
    early signal it holds)."""

    waitId: str
    workflowName: str
    workflowId: str
    runId: str
    jobName: str
    stepName: str
    schema: dict[str, Any] | bool
    status: str
    stepStatus: str
    openedAt: NotRequired[str]
    deadline: NotRequired[str]
    secondsLeft: NotRequired[float]
    expired: NotRequired[bool]
    description: NotRequired[str | None]
    hooks: NotRequired[list[dict[str, Any]]]
    hookFailed: NotRequired[dict[str, Any]]  # HOOK-017
    receipt: NotRequired[dict[str, Any]]
    payload: NotRequired[Any]
    examplePayload: NotRequired[Any]
    next: NotRequired[list[str]]
    deadlineEnforced: NotRequired[bool]  # WAIT-090: a wait whose step is waiting
    runStatus: NotRequired[RunStatus]
    held: NotRequired[dict[str, Any]]
    heldAt: NotRequired[str]
    heldRefused: NotRequired[dict[str, Any]]
    answerers: NotRequired[dict[str, Any]]
    permissions: NotRequired[list[PermissionShown]]


class SignalResult(TypedDict):
    """`workflow.signal`: with `check`, only `valid`, `waitId`, `runId`, `jobName`, `stepName`;
    otherwise the accepted signal, and with `resume` what the continuation did (`continued`, `run`
    or `stillOpen`); through serve with --auto-continue, `autoResume`."""

    waitId: str
    runId: str
    jobName: str
    stepName: str
    valid: NotRequired[bool]
    workflowName: NotRequired[str]
    payload: NotRequired[Any]
    signal: NotRequired[dict[str, Any]]
    runStatus: NotRequired[RunStatus]
    openWaits: NotRequired[list[str]]
    next: NotRequired[list[str]]
    autoResume: NotRequired[dict[str, Any]]
    continued: NotRequired[bool]
    run: NotRequired[RunDocument]
    stillOpen: NotRequired[list[dict[str, Any]]]
    permissionId: NotRequired[str]
    hookWarnings: NotRequired[list[dict[str, Any]]]  # HOOK-016


class GrantedPermission(TypedDict):
    """The permission a grant made, with its token: the only time swamp shows it (ACCESS-043)."""

    id: str
    token: str
    waitId: str
    runId: str
    grantedBy: str
    grantedAt: str
    expiresAt: str | None
    uses: int | None
    note: NotRequired[str]


class PermissionGranted(TypedDict):
    """`workflow.wait.grant`."""

    permission: GrantedPermission
    next: list[str]


class LinkMade(TypedDict):
    """`workflow.wait.link`: the link (holding the token: shown this once) and its permission."""

    url: str
    permission: GrantedPermission
    next: list[str]


class LinkPermission(PermissionShown):
    waitId: str
    runId: str


class LinkShown(TypedDict):
    """`workflow.link.show`: the permission a token is, and its wait as `wait show` gives it."""

    permission: LinkPermission
    wait: WaitShow


class RevokedPermission(PermissionShown):
    waitId: str
    runId: str


class PermissionRevoked(TypedDict):
    """`workflow.wait.revoke`."""

    permission: RevokedPermission


class ApproveResult(TypedDict):
    """`workflow.approve` (GATE rules), with `continued`/`run`/`stillOpen` after `resume`."""

    runId: str
    workflowName: str
    jobName: str
    stepName: str
    approved: bool
    decidedBy: str
    decidedAt: str
    reason: str | None
    runStatus: RunStatus
    openGates: list[str]
    openWaits: list[str]
    onBehalfOf: NotRequired[str]
    override: NotRequired[str]  # an admin approved past the policy (ACCESS-021)
    approvers: NotRequired[dict[str, Any]]  # with a policy: who may approve, and the count so far
    required: NotRequired[int]
    approvals: NotRequired[list[dict[str, Any]]]
    remaining: NotRequired[int]  # above 0: the gate stays open (ACCESS-016)
    next: NotRequired[list[str]]
    autoResume: NotRequired[dict[str, Any]]
    continued: NotRequired[bool]
    run: NotRequired[RunDocument]
    stillOpen: NotRequired[list[dict[str, Any]]]
    hookWarnings: NotRequired[list[dict[str, Any]]]  # HOOK-016


class RejectResult(TypedDict):
    """`workflow.reject`: a gate's rejection (GATE-013) or, with `waitId`, a signal wait's."""

    runId: str
    workflowName: str
    jobName: str
    stepName: str
    approved: bool
    decidedBy: str
    reason: str | None
    runStatus: RunStatus
    decidedAt: NotRequired[str]
    onBehalfOf: NotRequired[str]
    openGates: NotRequired[list[str]]
    waitId: NotRequired[str]
    override: NotRequired[str]
    approvers: NotRequired[dict[str, Any]]
    required: NotRequired[int]
    approvals: NotRequired[list[dict[str, Any]]]
    remaining: NotRequired[int]
    hookWarnings: NotRequired[list[dict[str, Any]]]  # HOOK-016


class Approvals(TypedDict):
    """`workflow.approvals` (GATE-016): the open gates."""

    approvals: list[dict[str, Any]]


class WorkflowSummary(TypedDict):
    id: str
    name: str
    description: str | None
    version: int
    path: str
    jobs: int
    steps: int


class WorkflowList(TypedDict):
    """`workflow.list` (WF-019)."""

    workflows: list[WorkflowSummary]
    broken: list[dict[str, Any]]


class WorkflowDetail(WorkflowSummary):
    """`workflow.get` (WF-020): the list entry and the definition with defaults filled in."""

    definition: dict[str, Any]


class WorkflowCreated(TypedDict):
    """`workflow.create` (WF-018)."""

    name: str
    path: str


class Validation(TypedDict):
    """`workflow.validate`: one workflow's checks (WF-015) or, without `workflow`, every file's
    (`workflows`, `totalPassed`, `totalFailed`, WF-016). `passed` is in both."""

    passed: bool
    workflowId: NotRequired[str | None]
    workflowName: NotRequired[str | None]
    path: NotRequired[str]
    validations: NotRequired[list[dict[str, Any]]]
    problems: NotRequired[list[str]]
    warnings: NotRequired[list[dict[str, Any]]]
    workflows: NotRequired[list[dict[str, Any]]]
    totalPassed: NotRequired[int]
    totalFailed: NotRequired[int]


class ModelDefinition(TypedDict):
    """`model.create` (MODEL-006) and each entry of `model.list`."""

    id: str
    name: str
    type: str
    globalArguments: dict[str, Any]
    methods: dict[str, Any]
    path: str


class ModelDetail(ModelDefinition):
    """`model.get` (MODEL-007): the definition and its type's entry, or why it could not load."""

    typeInfo: NotRequired[dict[str, Any]]
    typeError: NotRequired[str]


class ModelList(TypedDict):
    models: list[ModelDefinition]
    problems: list[dict[str, Any]]


class ModelTypeList(TypedDict):
    types: list[dict[str, Any]]
    problems: list[dict[str, Any]]


class RepoInit(TypedDict):
    """`repo.init` (REPO-001)."""

    path: str
    created: bool
    gitignore: Literal["created", "upgraded", "kept"]
    storeMigrated: NotRequired[dict[str, Any]]


class StoreStatus(TypedDict):
    """`store.status` (STORE-004)."""

    kind: Literal["file", "postgresql"]
    location: str
    schema: str | None
    schemaVersion: int | None
    expected: int | None
    current: bool
    runs: int


# `store.migrate` (STORE-006): the functional form, since `from` is a Python keyword.
StoreMigrated = TypedDict(
    "StoreMigrated",
    {
        "kind": Literal["file", "postgresql"],
        "location": str,
        "schema": str | None,
        "from": int | None,
        "to": int | None,
        "applied": list[int],
    },
)


class StoreCopySide(TypedDict):
    """One side of `store.copy`: what the store holds after the copy."""

    store: Literal["file", "postgresql"]
    location: str
    runs: int
    waits: int
    audit: int
    held: int
    digest: str


# `store.copy` (STORE-034, STORE-050): the functional form, since `from` is a Python keyword.
StoreCopied = TypedDict("StoreCopied", {"from": StoreCopySide, "to": StoreCopySide, "verified": bool})


class ServeStatus(TypedDict):
    """`serve.status` (SERVE-014)."""

    version: str
    pid: int
    uptimeSeconds: float
    runsInFlight: list[str]
    requestsInFlight: int
    openWaits: int | None
    socket: str | None
    autoContinue: bool
    enforceDeadlines: bool
    shuttingDown: bool


class Cancelled(TypedDict):
    """serve's `cancel` (SERVE-016): the requests it stopped."""

    cancelled: list[dict[str, Any]]


class ProtocolVersion(TypedDict):
    """`protocol.version` (PROTO-020)."""

    spec: str
    protocol: int
    requestTypes: list[str]


class SubscriptionEnd(TypedDict):
    """`events.subscribe`: where the stream ended and why."""

    cursor: str
    outcome: Literal["timeout", "cancelled", "closed", "shutdown"]


# Which type each request's result has (tests check each against results.schema.json).
RESULT_TYPES: dict[str, type] = {
    "repo.init": RepoInit,
    "store.status": StoreStatus,
    "store.migrate": StoreMigrated,
    "store.copy": StoreCopied,
    "workflow.list": WorkflowList,
    "workflow.get": WorkflowDetail,
    "workflow.create": WorkflowCreated,
    "workflow.validate": Validation,
    "workflow.run": RunResult,
    "workflow.resume": ResumeResult,
    "workflow.cancel": RunDocument,
    "workflow.watch": WatchResult,
    "workflow.history": History,
    "workflow.history.get": RunHistory,
    "workflow.approve": ApproveResult,
    "workflow.reject": RejectResult,
    "workflow.approvals": Approvals,
    "workflow.signal": SignalResult,
    "workflow.waits": Waits,
    "workflow.wait.show": WaitShow,
    "workflow.wait.grant": PermissionGranted,
    "workflow.wait.revoke": PermissionRevoked,
    "workflow.wait.link": LinkMade,
    "workflow.link.show": LinkShown,
    "model.list": ModelList,
    "model.get": ModelDetail,
    "model.create": ModelDefinition,
    "model.type.list": ModelTypeList,
    "serve.status": ServeStatus,
    "cancel": Cancelled,
    "protocol.version": ProtocolVersion,
    "events.subscribe": SubscriptionEnd,
}
