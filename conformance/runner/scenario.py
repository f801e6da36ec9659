"""Loading a scenario file and checking it statically (before anything runs)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import yaml

from .matching import ScenarioError, captured_names, check_expected, is_matcher, references

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "scenario.schema.json"

# step key -> step kind ($defs name in scenario.schema.json)
STEP_KEYS = {
    "run": "run",
    "jsonl": "jsonl",
    "raw": "jsonl",
    "files": "files",
    "write": "write",
    "session": "session",
    "http": "http",
}
# the sub-steps of a session: the ordinary steps, and these (`expect` alone is a sub-step too)
SESSION_KEYS = {
    "send": "send",
    "close": "close",
    "drop": "drop",
    "signal": "signal",
    "sleep": "sleep",
    "connect": "connect",
}
# The features a scenario may need (README "Features"); `core` is every implementation's.
FEATURES = (
    "core",
    "file-store",
    "serve",
    "unix-socket",
    "posix-signals",
    "python-extensions",
    "postgresql-store",
    "jsonl",
    "gates",
    "foreach",
    "resume-from",
    "watch",
    "events",
    "hooks",
    "held-signals",
    "access",
    "os-accounts",
    "gateway",
    "shell-completion",
)
# Features a runner selects only when asked (--features): the run store being PostgreSQL is a
# property of how the implementation is set up for the run (--env-hook), not of the implementation;
# other OS accounts need a runner running as root to create them.
OPT_IN_FEATURES = ("postgresql-store", "os-accounts")
DEFAULT_FEATURES = tuple(name for name in FEATURES if name not in OPT_IN_FEATURES)
STDIO = "stdio"  # the channel of the session's own process: its stdin and stdout


@dataclass(frozen=True)
class Step:
    index: int
    kind: str  # run | jsonl | files | write | session; in a session also send | expect | close | ...
    data: dict[str, Any]
    parent: int | None = None  # the index of the session step this sub-step belongs to
    substeps: tuple[Step, ...] = ()

    @property
    def where(self) -> str:
        return f"steps[{self.index}]" if self.parent is None else f"steps[{self.parent}].steps[{self.index}]"

    @property
    def label(self) -> str:
        name = self.data.get("name")
        return f"{self.where} ({self.kind}{': ' + name if name else ''})"


@dataclass(frozen=True)
class Scenario:
    path: Path
    id: str
    title: str
    requirements: tuple[str, ...]
    features: frozenset[str]
    init: bool
    env: dict[str, Any]
    files: dict[str, Any]
    steps: tuple[Step, ...]
    accounts: tuple[str, ...] = ()  # roles, each an OS account the runner makes (os-accounts)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)  # role group -> member roles


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML without timestamp conversion (SWAMP_NOW stays a string), refusing duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep)

    # Plain scalars whose value differs between YAML 1.1 (PyYAML) and YAML 1.2 core are refused, so a
    # scenario means the same to every runner's YAML library (FORMAT.md "From YAML to JSON").
    def construct_yaml_bool(self, node: yaml.ScalarNode) -> bool:
        if node.value not in ("true", "false", "True", "False", "TRUE", "FALSE"):
            raise _ambiguous(node, "a boolean only in YAML 1.1; write true/false, or quote it for a string")
        return bool(super().construct_yaml_bool(node))

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = node.value.lstrip("+-")
        if (
            "_" in text
            or ":" in text
            or text.startswith("0b")
            or (len(text) > 1 and text[0] == "0" and text[1:2] != "x")
        ):
            raise _ambiguous(
                node, "a number whose value differs between YAML 1.1 and 1.2; quote it or write it plainly"
            )
        return int(super().construct_yaml_int(node))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        if "_" in node.value or ":" in node.value:
            raise _ambiguous(
                node, "a number whose value differs between YAML 1.1 and 1.2; quote it or write it plainly"
            )
        return float(super().construct_yaml_float(node))


def _ambiguous(node: yaml.ScalarNode, why: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, f"{node.value!r} is {why}", node.start_mark)


for _tag, _method in (
    ("bool", _Loader.construct_yaml_bool),
    ("int", _Loader.construct_yaml_int),
    ("float", _Loader.construct_yaml_float),
):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _method)  # type: ignore[arg-type]

_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader


@cache
def _validator(kind: str | None) -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    if kind is not None:
        schema = {"$ref": f"#/$defs/{kind}Step", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def _schema_check(data: Any, kind: str | None, where: str) -> None:
    error = jsonschema.exceptions.best_match(_validator(kind).iter_errors(data))
    if error is not None:
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ScenarioError(f"{where}{at}: {error.message}")


def repo_path(repo: Path, rel: str, where: str) -> Path:
    """``rel`` (a relative POSIX path or glob) resolved inside ``repo``; refuses escapes."""
    pure = PurePosixPath(rel)
    if not rel.strip() or pure.is_absolute() or ".." in pure.parts or "\\" in rel:
        raise ScenarioError(f"{where}: {rel!r} must be a relative path that stays inside the repo dir")
    return repo.joinpath(*pure.parts)


def load_scenario(path: Path) -> Scenario:
    """Read and statically check one scenario file; raises ScenarioError naming the problem."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"cannot read the scenario: {exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"the scenario is not valid YAML: {exc}") from None
    _schema_check(data, None, "scenario")
    steps = tuple(_load_step(i, raw) for i, raw in enumerate(data["steps"]))
    scenario = Scenario(
        path=path,
        id=data["id"],
        title=data["title"],
        requirements=tuple(data["requirements"]),
        features=frozenset(data["features"]),
        init=data.get("init", True),
        env=data.get("env", {}),
        files=data.get("files", {}),
        steps=steps,
        accounts=tuple(data.get("accounts", ())),
        groups={name: tuple(members) for name, members in data.get("groups", {}).items()},
    )
    _check_roles(scenario)
    _check_paths(scenario)
    _check_captures(scenario)
    _check_snapshots(scenario)
    return scenario


def _load_step(index: int, raw: dict[str, Any], parent: int | None = None) -> Step:
    where = f"steps[{index}]" if parent is None else f"steps[{parent}].steps[{index}]"
    if parent is None:
        kinds = {STEP_KEYS[k] for k in raw if k in STEP_KEYS}
        if len(kinds) != 1:
            raise ScenarioError(
                f"{where}: a step needs exactly one of `run`, `jsonl` (and/or `raw`), `files`, `write`, "
                f"`http`, `session`; got keys {sorted(raw)}"
            )
    else:
        kinds = _sub_kinds(raw, where)
    kind = kinds.pop()
    _schema_check(raw, kind, where)
    if kind == "session":
        subs = tuple(_load_step(i, sub, index) for i, sub in enumerate(raw["steps"]))
        _check_channels(subs)
        return Step(index, kind, raw, parent, subs)
    step = Step(index, kind, raw, parent)
    if kind == "connect" and not references(raw["connect"]):
        repo_path(Path("/repo"), raw["connect"], where)
    expect = raw.get("expect", {})
    for key, value in expect.items():
        if key == "only":
            continue
        if key == "frames":
            for i, frame in enumerate(value):
                check_expected(frame, f"{where}.expect.frames[{i}]")
        elif key == "headers":
            _check_headers(value, f"{where}.expect.headers")
        else:
            _check_value(value, f"{where}.expect.{key}", scalar_dict_ok=key == "json")
    if kind == "files":
        for i, check in enumerate(raw["files"]):
            for key in ("count", "json", "text"):
                if key in check:
                    _check_value(check[key], f"{where}.files[{i}].{key}", scalar_dict_ok=key == "json")
    return step


def _sub_kinds(raw: dict[str, Any], where: str) -> set[str]:
    """The kind of a session's sub-step: an ordinary step kind, a session key, or `expect` alone."""
    if "session" in raw:
        raise ScenarioError(f"{where}: sessions cannot be nested; end this one first")
    keys = set(raw) - ({"raw"} if "send" in raw else set())
    kinds = {STEP_KEYS[k] for k in keys if k in STEP_KEYS}
    kinds |= {SESSION_KEYS[k] for k in keys if k in SESSION_KEYS}
    if not kinds and "expect" in raw:
        kinds = {"expect"}
    if len(kinds) != 1:
        raise ScenarioError(
            f"{where}: a session's step needs exactly one of `send`, `expect`, `close`, `drop`, "
            "`signal`, `sleep`, `connect`, or an ordinary step (`run`, `jsonl`, `files`, `write`, `http`); "
            f"got keys {sorted(raw)}"
        )
    return kinds


def _check_channels(subs: tuple[Step, ...]) -> None:
    """`to`, `from`, `close` and `drop` must name `stdio` or a connection opened by an earlier `connect`."""
    open_: set[str] = {STDIO}
    for sub in subs:
        if sub.kind == "connect":
            name = sub.data["as"]
            if name in open_:
                raise ScenarioError(f"{sub.where}: a channel named {name!r} is already open in this session")
            open_.add(name)
            continue
        key = {"send": "to", "expect": "from", "close": "close", "drop": "drop"}.get(sub.kind)
        name = sub.data.get(key, STDIO) if key else None
        if name is not None and name not in open_:
            known = ", ".join(sorted(open_))
            raise ScenarioError(
                f"{sub.where}: {key}: {name!r} is not an open channel of this session (open: {known}); "
                "open a socket connection first with `connect: PATH` and `as: NAME`"
            )
        if sub.kind == "drop":
            if name == STDIO:
                raise ScenarioError(f"{sub.where}: drop takes a connection; end the process with `signal`")
            open_.discard(name)


def _check_headers(expected: dict[str, Any], where: str) -> None:
    """An `http` step's expected headers: names case-insensitive (so two that differ only in case
    are one too many), each value a value or a matcher."""
    seen: dict[str, str] = {}
    for name, value in expected.items():
        if name.lower() in seen:
            raise ScenarioError(f"{where}: {seen[name.lower()]!r} and {name!r} name the same header")
        seen[name.lower()] = name
        if isinstance(value, dict) and not is_matcher(value):
            raise ScenarioError(f"{where}.{name}: expected a value or a matcher such as {{$regex: ...}}")
    check_expected(expected, where)


def _check_value(value: Any, where: str, *, scalar_dict_ok: bool) -> None:
    if isinstance(value, dict) and not scalar_dict_ok and not is_matcher(value):
        raise ScenarioError(f"{where}: expected a value or a matcher such as {{$regex: ...}}, got an object")
    check_expected(value, where)


def _check_paths(scenario: Scenario) -> None:
    dummy = Path("/repo")
    for rel in scenario.files:
        repo_path(dummy, rel, "files")
    for step in flat_steps(scenario.steps):
        if step.kind == "write":
            names = list(step.data["write"])
        elif step.kind == "files":
            names = [check.get("glob") or check.get("path") for check in step.data["files"]]
        else:
            continue
        for rel in names:
            if not references(rel):
                repo_path(dummy, rel, step.where)


def flat_steps(steps: tuple[Step, ...]) -> list[Step]:
    """Every step in the order it runs: a session step, then its sub-steps."""
    out: list[Step] = []
    for step in steps:
        out.append(step)
        out += list(step.substeps)
    return out


# the keys of an `expect` whose matchers may capture
CAPTURING_KEYS = ("json", "stdout", "stderr", "exit", "frames", "status", "headers", "body")
PREDEFINED = frozenset({"account"})  # ${account}: the OS account the implementation runs as


def role_captures(scenario: Scenario) -> set[str]:
    """The captures the runner predefines for a scenario's roles (os-accounts): the OS name of
    each account (`${account_qa}`) and of each group (`${group_release}`)."""
    return {f"account_{role}" for role in scenario.accounts} | {f"group_{name}" for name in scenario.groups}


def step_role(step: Step) -> str | None:
    """The account role a step's process runs as (`as:` of a run or jsonl step, of a session)."""
    if step.kind == "session":
        return step.data["session"].get("as")  # type: ignore[no-any-return]
    return step.data.get("as") if step.kind in ("run", "jsonl") else None


def _check_roles(scenario: Scenario) -> None:
    """`as:` names an account of `accounts`; a group's members are accounts of `accounts`."""
    declared = set(scenario.accounts)
    if len(declared) != len(scenario.accounts):
        raise ScenarioError("accounts: a role is listed twice")
    for name, members in scenario.groups.items():
        unknown = sorted(set(members) - declared)
        if unknown:
            raise ScenarioError(
                f"groups.{name}: {', '.join(unknown)} is not in `accounts` "
                f"({', '.join(scenario.accounts) or 'none'}); a group's members are accounts the "
                "scenario declares"
            )
    for step in flat_steps(scenario.steps):
        role = step_role(step)
        if role is not None and role not in declared:
            raise ScenarioError(
                f"{step.label}: as: {role!r} is not an account of this scenario "
                f"(accounts: {', '.join(scenario.accounts) or 'none'}); declare it in `accounts`"
            )


def _check_captures(scenario: Scenario) -> None:
    """Every ``${name}`` must refer to a ``$capture`` of an earlier step, or to one the runner
    defines before the first step (PREDEFINED)."""
    defined: set[str] = set(PREDEFINED) | role_captures(scenario)
    top = {"env": scenario.env, "files": scenario.files}
    early = sorted(references(top) - defined)
    if early:
        raise ScenarioError(
            f"the scenario's env/files refer to ${{{early[0]}}}, but nothing is captured before the steps; "
            "write $${name} for a literal ${name}"
        )
    for step in flat_steps(scenario.steps):
        own = {"session": step.data["session"]} if step.kind == "session" else step.data
        missing = sorted(references(own) - defined)
        if missing:
            known = ", ".join(sorted(defined)) or "none"
            raise ScenarioError(
                f"{step.label} refers to unknown capture(s) {', '.join('${' + n + '}' for n in missing)} "
                f"(captured by earlier steps: {known}); write $${{name}} for a literal ${{name}}"
            )
        expect = step.data.get("expect", {})
        defined |= captured_names([expect.get(k) for k in CAPTURING_KEYS])
        for check in step.data.get("files", []) if step.kind == "files" else []:
            defined |= captured_names([check.get(k) for k in ("count", "json", "text")])


def _check_snapshots(scenario: Scenario) -> None:
    """`unchanged: NAME` must name a `snapshot: NAME` taken by an earlier step."""
    taken: set[str] = set()
    for step in flat_steps(scenario.steps):
        if step.kind != "files":
            continue
        for i, check in enumerate(step.data["files"]):
            name = check.get("unchanged")
            if name is not None and name not in taken:
                known = ", ".join(sorted(taken)) or "none"
                raise ScenarioError(
                    f"{step.where}.files[{i}]: unchanged: {name!r} names no snapshot taken earlier "
                    f"(taken so far: {known}); take it first with {{path: ..., snapshot: {name}}}"
                )
        for check in step.data["files"]:
            if "snapshot" in check:
                taken.add(check["snapshot"])


def raw_text(value: Any) -> str:
    """A step's `raw`: a string, or a list of pieces, each a string or `{repeat: S, times: N}`
    (S written N times), so a scenario can send a line far longer than it could spell out."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else p["repeat"] * p["times"] for p in value)
