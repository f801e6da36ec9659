"""pytest plugin: run conformance/scenarios/**/*.yaml against an implementation command.

    pytest conformance --impl "mytool"

One test per scenario file. Needs only pytest, pyyaml and jsonschema; never imports swamp.
See conformance/README.md for the scenario format.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
SELFTEST_DIR = "_selftest"
DEFAULT_SCHEMAS = HERE.parent / "spec" / "schemas"
_RUNNER_NAME = "swamp_conformance_runner"


def _load_runner() -> Any:
    """Import conformance/runner/ under a unique name, whatever pytest's import mode."""
    if _RUNNER_NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _RUNNER_NAME, HERE / "runner" / "__init__.py", submodule_search_locations=[str(HERE / "runner")]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_RUNNER_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_RUNNER_NAME]


_load_runner()
from swamp_conformance_runner.accounts import ROOT_ONLY, can_make_accounts  # noqa: E402
from swamp_conformance_runner.envhook import resolve_hook  # noqa: E402
from swamp_conformance_runner.execute import ScenarioFailure, ScenarioRun  # noqa: E402
from swamp_conformance_runner.matching import ScenarioError  # noqa: E402
from swamp_conformance_runner.scenario import DEFAULT_FEATURES, FEATURES, load_scenario  # noqa: E402
from swamp_conformance_runner.schemas import Schemas, SchemaSetupError  # noqa: E402
from swamp_conformance_runner.selection import Selection, split_values  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "swamp conformance suite")
    group.addoption(
        "--impl",
        default=None,
        help="command of the implementation under test, split with shlex "
        "(default: the swamp next to the running python, else swamp on PATH)",
    )
    group.addoption(
        "--include-selftest",
        action="store_true",
        default=False,
        help="also run conformance/scenarios/_selftest/ (scenarios for the runner's own tests)",
    )
    group.addoption(
        "--features",
        default=None,
        help="comma-separated features the implementation has (default: "
        f"{','.join(DEFAULT_FEATURES)}; known: {','.join(FEATURES)}); a scenario needing another is "
        "skipped. `core` is always included; `all` stands for the default set (`all,postgresql-store`)",
    )
    group.addoption(
        "--id",
        action="append",
        default=[],
        dest="conformance_ids",
        metavar="ID",
        help="run only the scenario with exactly this id (repeatable, or a comma list); "
        "with --folder, the scenarios of either",
    )
    group.addoption(
        "--folder",
        action="append",
        default=[],
        dest="conformance_folders",
        metavar="DIR",
        help="run only the scenarios under this folder of conformance/scenarios/, e.g. waits "
        "(repeatable, or a comma list)",
    )
    group.addoption(
        "--exclude",
        action="append",
        default=[],
        dest="conformance_excludes",
        metavar="ID-OR-DIR",
        help="leave out the scenario with this id, or every scenario under this folder "
        "(repeatable, or a comma list)",
    )
    group.addoption(
        "--env-hook",
        default=None,
        metavar="CMD",
        help="before each scenario run `CMD <scenario-id>` (split with shlex, no shell); each "
        "NAME=VALUE line it prints joins the environment of that scenario's processes; a non-zero "
        "exit fails the scenario (e.g. --env-hook scripts/pg-scenario-env)",
    )
    group.addoption(
        "--reuse-init",
        action="store_true",
        default=False,
        help="run `repo init .` once per distinct environment and copy the tree it made to every "
        "later scenario with that environment (FORMAT.md §4: only for an implementation whose "
        "repo init makes the same tree wherever it runs)",
    )
    group.addoption(
        "--results-json",
        default=None,
        metavar="PATH",
        help="write every scenario's outcome and the per-feature table there as JSON",
    )
    group.addoption(
        "--schemas",
        default=None,
        metavar="DIR",
        help="folder of the JSON Schemas every JSON document a scenario sees must pass, with their "
        f"index.json (default: {DEFAULT_SCHEMAS})",
    )
    group.addoption(
        "--frame-schema",
        default=None,
        metavar="PATH",
        help="JSON Schema every JSON-lines frame must pass, instead of the schemas folder's frame schema",
    )


def default_impl() -> list[str] | None:
    name = "swamp.exe" if os.name == "nt" else "swamp"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("swamp")
    return [found] if found else None


def resolve_impl(config: pytest.Config) -> list[str] | None:
    value = config.getoption("impl", default=None)
    if not value:
        return default_impl()
    # Relative paths mean relative to where pytest was started, not to a scenario's repo dir:
    # the program itself if it names a path, and any later word that names an existing file.
    start = Path(config.invocation_params.dir)
    argv = shlex.split(value)
    for i, word in enumerate(argv):
        has_sep = os.sep in word or bool(os.altsep and os.altsep in word)
        if has_sep and not os.path.isabs(word) and (i == 0 or (start / word).exists()):
            argv[i] = str((start / word).absolute())
    return argv


def resolve_env_hook(config: pytest.Config) -> list[str] | None:
    value = config.getoption("env_hook", default=None)
    if not value:
        return None
    try:
        return resolve_hook(value, Path(config.invocation_params.dir))
    except ValueError as exc:
        raise pytest.UsageError(f"--env-hook: {exc}") from None


def selected_features(config: pytest.Config) -> frozenset[str]:
    value = config.getoption("features", default=None)
    if not value:
        return frozenset(DEFAULT_FEATURES)
    names = {name.strip() for name in value.split(",") if name.strip()}
    if "all" in names:  # every feature selected by default, e.g. `all,postgresql-store`
        names = (names - {"all"}) | set(DEFAULT_FEATURES)
    unknown = sorted(names - set(FEATURES))
    if unknown:
        known = ", ".join(FEATURES)
        raise pytest.UsageError(f"--features: unknown feature(s) {', '.join(unknown)}; known: {known}")
    return frozenset(names | {"core"})


def selection(config: pytest.Config) -> Selection:
    return Selection(
        ids=split_values(config.getoption("conformance_ids", default=[])),
        folders=split_values(config.getoption("conformance_folders", default=[])),
        excludes=split_values(config.getoption("conformance_excludes", default=[])),
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--id, --folder, --exclude: the scenarios not chosen are deselected (not in the results)."""
    chosen = selection(config)
    if not chosen.active:
        return
    scenarios = [(item, item.scenario.id, item.path.resolve().relative_to(SCENARIOS).as_posix())
                 for item in items if isinstance(item, ScenarioItem)]  # fmt: skip
    problems = chosen.unknown((sid, file) for _, sid, file in scenarios)
    if problems:
        raise pytest.UsageError("; ".join(problems))
    dropped = {id(item) for item, sid, file in scenarios if not chosen.chooses(sid, file)}
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if id(item) in dropped])
        items[:] = [item for item in items if id(item) not in dropped]


def pytest_configure(config: pytest.Config) -> None:
    config._conformance_outcomes = {}  # type: ignore[attr-defined]
    if config.getoption("features", default=None):
        selected_features(config)  # refuse unknown names before anything runs
    resolve_env_hook(config)  # and an --env-hook that is not a command


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep each scenario's outcome (on the xdist controller too: user_properties travel with the report)."""
    props = dict(report.user_properties)
    if "scenario" not in props:
        return
    config = _CONFIG[0] if _CONFIG else None
    if config is None:
        return
    outcomes = config._conformance_outcomes  # type: ignore[attr-defined]
    scenario_id = props["scenario"]
    sent = list(props.get("sent", []))  # per step that sent something, the digest of what it sent
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcomes[scenario_id] = {"outcome": report.outcome, "features": list(props["features"]), "sent": sent}
    elif report.when == "teardown" and report.outcome == "failed":
        outcomes[scenario_id] = {"outcome": "failed", "features": list(props["features"]), "sent": sent}


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG[:] = [session.config]


def feature_table(outcomes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per feature: how many scenarios needing it passed, failed, were skipped; passed = none failed
    and at least one ran."""
    table: dict[str, dict[str, Any]] = {}
    for name in FEATURES:
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for result in outcomes.values():
            if name in result["features"]:
                counts[result["outcome"]] += 1
        ran = counts["passed"] + counts["failed"]
        verdict = "not run" if not ran else ("passed" if not counts["failed"] else "failed")
        table[name] = {**counts, "verdict": verdict}
    return table


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    outcomes = getattr(config, "_conformance_outcomes", {})
    if not outcomes:
        return
    table = feature_table(outcomes)
    write = terminalreporter.write_line
    terminalreporter.section("conformance features")
    write(f"{'feature':<18} {'passed':>6} {'failed':>6} {'skipped':>7}  verdict")
    for name, row in table.items():
        write(f"{name:<18} {row['passed']:>6} {row['failed']:>6} {row['skipped']:>7}  {row['verdict']}")
    path = config.getoption("results_json", default=None)
    if path:
        document = {
            "impl": shlex.join(resolve_impl(config) or []),
            "features": sorted(selected_features(config)),
            "scenarios": dict(sorted(outcomes.items())),
            "featureTable": table,
        }
        Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    if not getattr(config, "_conformance_collected", False):
        return None
    impl = resolve_impl(config)
    return "conformance impl: " + (shlex.join(impl) if impl else "(none found; pass --impl)")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    try:
        rel = file_path.resolve().relative_to(SCENARIOS)
    except ValueError:
        return None
    if SELFTEST_DIR in rel.parts[:-1] and not parent.config.getoption("include_selftest", default=False):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.File):
    def collect(self) -> list[pytest.Item]:
        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            raise self.CollectError(f"broken scenario {self.path}:\n  {exc}") from None
        self.config._conformance_collected = True  # type: ignore[attr-defined]
        conflict = _group_conflict(self.config, scenario)
        if conflict:
            raise self.CollectError(f"broken scenario {self.path}:\n  {conflict}")
        item = ScenarioItem.from_parent(self, name=scenario.id, scenario=scenario)
        item.extra_keyword_matches.update(scenario.requirements)
        item.extra_keyword_matches.update(scenario.features)
        item.user_properties += [("scenario", scenario.id), ("features", sorted(scenario.features))]
        missing = sorted(scenario.features - selected_features(self.config))
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"needs feature(s) not selected: {', '.join(missing)}"))
        elif "os-accounts" in scenario.features and not can_make_accounts():
            item.add_marker(pytest.mark.skip(reason=f"os-accounts {ROOT_ONLY}"))
        return [item]


def _group_conflict(config: pytest.Config, scenario: Any) -> str | None:
    """A group role is one OS group for the whole run: its members must be the same in every
    scenario that names it (FORMAT.md §2, os-accounts)."""
    seen: dict[str, tuple[tuple[str, ...], str]] = config.__dict__.setdefault("_conformance_groups", {})
    for name, members in scenario.groups.items():
        wanted = tuple(sorted(members))
        first = seen.setdefault(name, (wanted, scenario.id))
        if first[0] != wanted:
            return (
                f"groups.{name}: members [{', '.join(wanted)}], but scenario {first[1]} gives the group "
                f"[{', '.join(first[0])}]; a group's members are the same in every scenario "
                "(name another group)"
            )
    return None


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        impl = resolve_impl(self.config)
        if not impl:
            raise ScenarioFailure(
                f"no implementation to test: no swamp next to {sys.executable} and none on PATH; "
                'pass --impl "<command>"'
            )
        schemas = _schemas(self.config)
        workdir = _workdir(self.config, self.scenario.id, shared=bool(self.scenario.accounts))
        run = ScenarioRun(
            self.scenario,
            impl,
            workdir,
            schemas,
            display_path=self.nodeid.split("::")[0],
            env_hook=resolve_env_hook(self.config),
            reuse_init=bool(self.config.getoption("reuse_init", default=False)),
        )
        try:
            run.run()
        finally:
            self.user_properties.append(("sent", run.sent))
        if _SHARED_ROOT and workdir.parent == _SHARED_ROOT[0]:
            _remove(workdir)  # passed: nothing to inspect (a failure keeps it)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailure):
            return str(excinfo.value)
        if isinstance(excinfo.value, ScenarioError):
            return f"broken scenario {self.nodeid.split('::')[0]}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"scenario {self.name}: {self.scenario.title}"


def _schemas(config: pytest.Config) -> Schemas:
    """The schemas (loaded once per pytest process): --schemas DIR, --frame-schema PATH replacing
    the frame schema (a lone file: its folder's other schemas and index still apply if it has
    them)."""
    cached = getattr(config, "_conformance_schemas", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    frame = config.getoption("frame_schema", default=None)
    directory = config.getoption("schemas", default=None)
    start = Path(config.invocation_params.dir)
    folder = start / directory if directory else DEFAULT_SCHEMAS
    try:
        schemas = Schemas.load(folder, start / frame if frame else None)
    except SchemaSetupError as exc:
        raise ScenarioFailure(f"cannot load the schemas: {exc} (see --schemas and --frame-schema)") from None
    config._conformance_schemas = schemas  # type: ignore[attr-defined]
    return schemas


_SHARED_ROOT: list[Path] = []  # the 0755 folder of os-accounts scenarios, made once per process


def _workdir(config: pytest.Config, scenario_id: str, *, shared: bool = False) -> Path:
    """A fresh directory per scenario, under pytest's --basetemp when available. A scenario acting
    as several OS accounts gets one in a folder they can all reach (pytest's is 0700)."""
    name = re.sub(r"[^a-z0-9-]", "-", scenario_id)[:40]
    if shared:
        if not _SHARED_ROOT:
            _forget_old_roots()
            _SHARED_ROOT.append(Path(tempfile.mkdtemp(prefix="swamp-accounts-")))
            _SHARED_ROOT[0].chmod(0o755)
            atexit.register(_remove_if_empty, _SHARED_ROOT[0])
        # short: a socket's whole path must fit in sun_path (about 100 bytes)
        return Path(tempfile.mkdtemp(prefix=f"{name[:24]}-", dir=_SHARED_ROOT[0]))
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        return Path(factory.mktemp(name, numbered=True))
    return Path(tempfile.mkdtemp(prefix=f"swamp-conformance-{name}-"))


def _forget_old_roots(days: float = 1.0) -> None:
    """The folders failed os-accounts scenarios kept (outside pytest's basetemp, which pytest
    rotates itself) go after a day: each run of scripts/mutants keeps the ones its mutants failed."""
    cutoff = time.time() - days * 86400
    for old in Path(tempfile.gettempdir()).glob("swamp-accounts-*"):
        with contextlib.suppress(OSError):
            info = old.lstat()
            if (
                old.is_dir()
                and not old.is_symlink()
                and info.st_uid == os.getuid()
                and info.st_mtime < cutoff
            ):
                shutil.rmtree(old, ignore_errors=True)


def _remove(folder: Path) -> None:
    """Best effort, as the Node runner: a process the implementation left (a serve's helper, a
    detached hook) may still be writing its last file while the tree goes."""
    for _ in range(20):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.05)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
