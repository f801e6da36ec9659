"""Running one scenario against an implementation command, step by step."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .envhook import EnvHookFailure, run_env_hook
from .globbing import glob
from .http_step import DEFAULT_HTTP_TIMEOUT, HttpError, build_request, send
from .http_step import problems as http_problems
from .http_step import report as http_report
from .matching import json_text, match, match_frames, short, substitute
from .reuse_init import TEMPLATES
from .scenario import Scenario, Step, raw_text, repo_path
from .schemas import Schemas
from .session import Session, SessionFailure

DEFAULT_TIMEOUT = 60.0
DEFAULT_USER = "conformance"
OUTPUT_LIMIT = 8000
# Exit codes whose --json document is a result unless it has `error` (CLI-012): a failed run or
# validate, a watch whose timeout passed (WATCH-004), and a run stopped by SIGINT or SIGTERM (RUN-027).
RESULT_EXITS = (1, 4, 130, 143)


class ScenarioFailure(Exception):
    """The implementation did not do what the scenario expects; the message is the report."""


@dataclass(frozen=True)
class Result:
    argv: list[str]
    env: dict[str, str]
    stdin: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    timeout: float


def base_env(home: Path, user: str, actor: str | None = None) -> dict[str, str]:
    """The clean environment every invocation starts from (nothing else is inherited). USER and
    LOGNAME name `user`, which is not who the process is: the acting account is the OS account
    (${account}), whatever they say. `actor` (a step's `user:`) goes in SWAMP_ACTOR."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "USER": user,
        "LOGNAME": user,
    }
    if actor is not None:
        env["SWAMP_ACTOR"] = actor
    return env


def os_account() -> str:
    """The account the implementation runs as: this process's real user ID in the password
    database, or the ID itself when it has no name there (the `${account}` capture)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def run_process(argv: list[str], cwd: Path, env: dict[str, str], stdin: str, timeout: float) -> Result:
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ScenarioFailure(
            f"could not start the implementation {shlex.join(argv)!r}: {exc}\n"
            'pass the command to test with --impl "<command>"'
        ) from None
    timed_out = False
    try:
        out, err = proc.communicate(stdin.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b"", b"(output lost: a child process kept the pipes open)"
    return Result(
        argv=argv,
        env=env,
        stdin=stdin,
        returncode=None if timed_out else proc.returncode,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        timeout=timeout,
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except ProcessLookupError:
        pass


def _arg(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


SCENARIO_DIR = "<scenario-dir>"  # stands for the scenario's own directory in a step's digest


def sent_digest(record: list[Any], workdir: str) -> str:
    """SHA-256 of what a step sent (FORMAT.md §10): `record` as compact JSON, every occurrence of
    the scenario's directory replaced by <scenario-dir>. The Node runner computes the same."""

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(workdir, SCENARIO_DIR)
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    text = json.dumps(scrub(record), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ScenarioRun:
    """Executes a Scenario in ``workdir`` (which gets ``repo/`` and ``home/``)."""

    def __init__(
        self,
        scenario: Scenario,
        impl: list[str],
        workdir: Path,
        schemas: Schemas | dict[str, Any],
        *,
        display_path: str | None = None,
        env_hook: list[str] | None = None,
        reuse_init: bool = False,
    ) -> None:
        self.scenario = scenario
        self.reuse_init = reuse_init
        self.env_hook = env_hook
        self.hook_env: dict[str, str] = {}  # what --env-hook printed for this scenario
        self.impl = impl
        self.repo = workdir / "repo"
        self.home = workdir / "home"
        # a dict is a lone frame schema (the runner's older API): frames are all it validates
        self.schemas = schemas if isinstance(schemas, Schemas) else Schemas.from_frame_schema(schemas)
        self.written: dict[str, bytes] = {}  # what the scenario itself wrote, by relative path
        self.display_path = display_path or str(scenario.path)
        self.captures: dict[str, Any] = {"account": os_account()}
        self.workdir = workdir
        # per step that sent something: {"step": label, "sha256": digest of what it sent}
        self.sent: list[dict[str, str]] = []
        # `snapshot: NAME` of a files check -> what the file was then (`unchanged: NAME` compares)
        self.snapshots: dict[str, FileSnapshot] = {}
        self._new_snapshots: dict[str, FileSnapshot] = {}

    # ------------------------------------------------------------------ driver

    def run(self) -> None:
        self.repo.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        if self.env_hook:
            try:
                self.hook_env = run_env_hook(self.env_hook, self.scenario.id)
            except EnvHookFailure as exc:
                raise ScenarioFailure(
                    f"env hook: {exc}\n  scenario: {self.scenario.id} ({self.display_path})\n"
                    "nothing of the scenario ran"
                ) from None
        if self.scenario.init:
            self._init_repo()
        self._record_write("files", self.placeholder_sub(self.scenario.files, "files"))
        self._write(self._sub(self.scenario.files, "files"), "files")
        for step in self.scenario.steps:
            getattr(self, f"_step_{step.kind}")(step)

    def _init_repo(self) -> None:
        argv, env = self._command(["repo", "init", "."], {}, None)
        key = TEMPLATES.key(argv, env, self.home)
        if self.reuse_init and TEMPLATES.copy_into(key, self.repo):
            return
        result = run_process(argv, self.repo, env, "", DEFAULT_TIMEOUT)
        if result.timed_out or result.returncode != 0:
            self._fail("init (`repo init .`)", [_exit_problem(result, "exit code 0")], result)
        if self.reuse_init:
            TEMPLATES.keep(key, self.repo)

    def _sub(self, value: Any, where: str) -> Any:
        return substitute(value, self.captures, where)

    def placeholder_sub(self, value: Any, where: str) -> Any:
        """Substitution with every capture standing for itself (`${name}`): what a step sends,
        apart from the values the implementation gave it, for the step's digest."""
        return substitute(value, {name: "${" + name + "}" for name in self.captures}, where)

    def record_sent(self, step: Step | str, record: list[Any]) -> None:
        label = step if isinstance(step, str) else step.label
        self.sent.append({"step": label, "sha256": sent_digest(record, str(self.workdir))})

    def record_process(
        self, step: Step | str, kind: str, args: list[Any], env: dict[str, Any], user: Any, stdin: str
    ) -> None:
        """The digest of a process the step starts: its argv after the implementation's words, the
        environment the scenario and the step set (a name without value: null), the step's user
        and its stdin, every capture as `${name}`."""
        merged = {**self.placeholder_sub(self.scenario.env, "env"), **env}
        pairs = sorted([key, None if value is None else _arg(value)] for key, value in merged.items())
        self.record_sent(step, [kind, [_arg(a) for a in args], pairs, user, stdin])

    def _record_write(self, label: str, files: dict[str, Any]) -> None:
        entries = sorted(
            [rel, None if content is None else _file_text(content)] for rel, content in files.items()
        )
        self.record_sent(label, ["write", entries])

    def _command(
        self, args: list[Any], env: dict[str, Any], user: str | None
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and the environment of one process of the implementation."""
        full_env = base_env(self.home, user or DEFAULT_USER, user)
        full_env.update(self.hook_env)  # the scenario's and the step's env still win over the hook's
        for key, value in {**self._sub(self.scenario.env, "env"), **env}.items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = _arg(value)
        return [*self.impl, *(_arg(a) for a in args)], full_env

    def _base_value(self, key: str) -> str | None:
        return base_env(self.home, DEFAULT_USER).get(key)

    def _invoke(
        self, args: list[Any], env: dict[str, Any], user: str | None, stdin: str, timeout: float | None
    ) -> Result:
        argv, full_env = self._command(args, env, user)
        return run_process(argv, self.repo, full_env, stdin, timeout or DEFAULT_TIMEOUT)

    def _record_step(self, step: Step, args: list[Any], stdin: str) -> None:
        data = step.data
        env = self.placeholder_sub(data.get("env", {}), f"{step.where}.env")
        user = self.placeholder_sub(data.get("user"), f"{step.where}.user")
        self.record_process(step, step.kind, args, env, user, stdin)

    def _invoke_step(self, step: Step, args: list[Any], stdin: str) -> Result:
        data = step.data
        env = self._sub(data.get("env", {}), f"{step.where}.env")
        user = self._sub(data.get("user"), f"{step.where}.user")
        result = self._invoke(args, env, user, stdin, data.get("timeout"))
        if result.timed_out:
            self._fail(step.label, [_exit_problem(result, "the process to finish")], result)
        return result

    # ------------------------------------------------------------------ steps

    def _step_run(self, step: Step) -> None:
        where = step.where
        args = self._sub(step.data["run"], f"{where}.run")
        stdin = self._sub(step.data.get("stdin", ""), f"{where}.stdin")
        self._record_step(step, self.placeholder_sub(step.data["run"], f"{where}.run"),
                          self.placeholder_sub(step.data.get("stdin", ""), f"{where}.stdin"))  # fmt: skip
        result = self._invoke_step(step, args, stdin)
        expect = self._sub(step.data.get("expect", {}), f"{where}.expect")
        problems = self._check_exit(expect, result)
        if "json" in expect:
            try:
                document = json.loads(result.stdout)
            except ValueError as exc:
                problems.append(f"json: stdout is not exactly one JSON document ({exc})")
            else:
                problems += [f"json {m}" for m in match(expect["json"], document, self.captures)]
        if "frames" in expect:  # a command's own --jsonl mode: stdout is frames, as in a jsonl step
            frames, frame_problems = self._parse_frames(result.stdout)
            problems += frame_problems
            problems += match_frames(expect["frames"], frames, self.captures, only=expect.get("only", False))
        else:
            problems += self._output_problems([_arg(a) for a in args], result, reported="json" in expect)
        for stream in ("stdout", "stderr"):
            if stream in expect:
                problems += _text_problems(stream, expect[stream], getattr(result, stream), self.captures)
        if problems:
            self._fail(step.label, problems, result, frames="frames" in expect)

    def _step_jsonl(self, step: Step) -> None:
        where = step.where

        def build(sub: Any) -> str:
            requests = sub(step.data.get("jsonl", []), f"{where}.jsonl")
            raw = raw_text(sub(step.data.get("raw", ""), f"{where}.raw"))
            return "".join(json_text(r) + "\n" for r in requests) + raw

        stdin = build(self._sub)
        self._record_step(step, ["--jsonl"], build(self.placeholder_sub))
        result = self._invoke_step(step, ["--jsonl"], stdin)
        expect = self._sub(step.data.get("expect", {}), f"{where}.expect")
        problems = self._check_exit(expect, result)
        frames, frame_problems = self._parse_frames(result.stdout)
        problems += frame_problems
        if "frames" in expect:
            problems += match_frames(expect["frames"], frames, self.captures, only=expect.get("only", False))
        if "stderr" in expect:
            problems += _text_problems("stderr", expect["stderr"], result.stderr, self.captures)
        if problems:
            self._fail(step.label, problems, result, frames=True)

    def _step_files(self, step: Step) -> None:
        """Check files once, or with `timeout:` again and again until the checks hold."""
        checks = self._sub(step.data["files"], f"{step.where}.files")
        timeout = step.data.get("timeout")
        deadline = time.monotonic() + (timeout or 0)
        saved = self.captures
        while True:
            self.captures = dict(saved)  # captures and snapshots count only when every check holds
            self._new_snapshots = {}
            problems: list[str] = []
            try:
                for i, check in enumerate(checks):
                    problems += self._check_files(f"files[{i}]", check)
            finally:
                trial, self.captures = self.captures, saved
            if not problems:
                self.captures.update(trial)
                self.snapshots.update(self._new_snapshots)
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if timeout:
            problems.append(f"still so after {timeout:g} s of checking again")
        self._fail(step.label, problems, None, listing=True)

    def _step_write(self, step: Step) -> None:
        self._record_write(step.label, self.placeholder_sub(step.data["write"], f"{step.where}.write"))
        self._write(self._sub(step.data["write"], f"{step.where}.write"), f"{step.where}.write")

    def _step_http(self, step: Step) -> None:
        """One HTTP request; the response's status, headers and body matched (FORMAT.md §11)."""
        where = f"{step.where}.http"
        request = build_request(self._sub(step.data["http"], where), raw_text)
        shown = build_request(self.placeholder_sub(step.data["http"], where), raw_text)
        self.record_sent(step, shown.record())
        timeout = float(step.data.get("timeout", DEFAULT_HTTP_TIMEOUT))
        try:
            response = send(request, timeout)
        except HttpError as exc:
            self._fail(step.label, [str(exc)], None, details=http_report(request, None))
            return
        expect = self._sub(step.data.get("expect", {}), f"{step.where}.expect")
        trial = dict(self.captures)
        problems = http_problems(expect, response, trial) + self._http_error_problems(response)
        if problems:
            self._fail(step.label, problems, None, details=http_report(request, response))
        self.captures.update(trial)

    def _http_error_problems(self, response: Any) -> list[str]:
        """A JSON answer with a 4xx or 5xx status is the error document (FORMAT.md §9, §11)."""
        kind = response.header_map().get("content-type", "").split(";")[0].strip().lower()
        ref = self.schemas.error_document
        if response.status < 400 or kind != "application/json" or ref is None:
            return []
        try:
            document = json.loads(response.body)
        except ValueError as exc:
            return [f"the body of a {response.status} answer says application/json but is not JSON ({exc})"]
        problem = self.schemas.problem(document, ref)
        if problem is None:
            return []
        return [f"the body of a {response.status} answer does not match {ref}: {problem}{self._cited()}"]

    def _step_session(self, step: Step) -> None:
        """Start the process, run the sub-steps while it runs, then end whatever is still open."""
        session = Session(self, step)
        failed = True
        try:
            try:
                session.start()
            except SessionFailure as failure:
                self._fail(f"{step.label} (starting the process)", failure.problems, None, session=session)
            for sub in step.substeps:
                try:
                    if sub.kind in ("run", "jsonl", "files", "write", "http"):
                        getattr(self, f"_step_{sub.kind}")(sub)
                    else:
                        session.do(sub)
                except SessionFailure as failure:
                    self._fail(sub.label, failure.problems, None, session=session)
                except ScenarioFailure as failure:
                    extra = "\n".join(
                        [f"while the session of {step.label} was open:", *session.header(), *session.body()]
                    )
                    raise ScenarioFailure(f"{failure}\n{extra}") from None
            failed = False
        finally:
            session.finish(failed=failed)

    # ------------------------------------------------------------------ helpers

    def _check_exit(self, expect: dict[str, Any], result: Result) -> list[str]:
        wanted = expect.get("exit", 0)
        return [f"exit code: {m.message}" for m in match(wanted, result.returncode, self.captures)]

    def _output_problems(self, args: list[str], result: Result, *, reported: bool) -> list[str]:
        """A `--json` command's document against its schema: the error document when it refused
        (any exit code but 0, and exit 1 or 4 only with an `error`: a failed run and a validate that
        found problems exit 1 with their result, a watch whose timeout passed exits 4 with it,
        CLI-006, CLI-012), else its command's entry of the index;
        a command with `--jsonl` writes frames."""
        if not result.stdout.strip() or result.returncode is None:
            return []
        if "--jsonl" in args:
            return self._parse_frames(result.stdout)[1] if result.returncode == 0 else []
        if "--json" not in args or self.schemas.error_document is None:
            return []
        try:
            document = json.loads(result.stdout)
        except ValueError as exc:
            return [] if reported else [f"stdout of a --json command is not one JSON document ({exc})"]
        refused = result.returncode != 0 and (
            result.returncode not in RESULT_EXITS or (isinstance(document, dict) and "error" in document)
        )
        if refused:
            ref, what = self.schemas.error_document, "the error document"
        else:
            key = self.schemas.command_key(args)
            if key is None:
                words = " ".join(a for a in args if not a.startswith("-"))
                return [f"no schema for the output of `{words}`: index.json has no `commands` entry for it"]
            ref, what = self.schemas.commands[key], f"the --json document of `{key}`"
        problem = self.schemas.problem(document, ref)
        return [] if problem is None else [f"{what} does not match {ref}: {problem}{self._cited()}"]

    def frame_problem(self, number: int, frame: Any) -> str | None:
        """The report of a frame that does not match the frame schema (None when it does)."""
        problem = self.schemas.frame_problem(frame)
        if problem is None:
            return None
        return (
            f"frame #{number} does not match {self.schemas.frame}: {problem}\n    frame: {short(frame, 400)}"
            + self._cited()
        )

    def _cited(self) -> str:
        """The line a schema failure ends with: what the scenario says it proves."""
        return f"\n    requirements the scenario cites: {', '.join(self.scenario.requirements)}"

    def _parse_frames(self, stdout: str) -> tuple[list[Any], list[str]]:
        lines = stdout.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        frames: list[Any] = []
        problems: list[str] = []
        for number, line in enumerate(lines, 1):
            try:
                frame = json.loads(line)
            except ValueError as exc:
                problems.append(f"stdout line {number} is not a JSON frame ({exc}): {short(line)}")
                continue
            problem = self.frame_problem(len(frames), frame)
            if problem is not None:
                problems.append(problem)
            frames.append(frame)
        return frames, problems

    def _check_files(self, where: str, check: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        if "glob" in check:
            pattern = check["glob"]
            repo_path(self.repo, pattern, where)
            found = glob(self.repo, pattern)
            names = [p.relative_to(self.repo).as_posix() for p in found]
            label = f"{where} glob {pattern!r}"
            if "count" in check:
                if match(check["count"], len(found), dict(self.captures)):
                    wanted = short(check["count"])
                    problems.append(f"{label}: expected count {wanted}, got {len(found)}: {names}")
            elif not found:
                problems.append(f"{label}: expected at least one match, got none")
        else:
            path = repo_path(self.repo, check["path"], where)
            label = f"{where} path {check['path']!r}"
            wanted = check.get("exists", True)
            if path.exists() != wanted:
                problems.append(f"{label}: expected it {'to exist' if wanted else 'not to exist'}")
            found = [path] if path.exists() and wanted else []
            if found:
                problems += self._check_snapshot(label, path, check)
        for path in found:
            name = path.relative_to(self.repo).as_posix()
            problems += self._check_content(f"{where} {name}", path, check)
            problems += self._file_schema_problems(f"{where} {name}", name, path)
        return problems

    def _file_schema_problems(self, label: str, name: str, path: Path) -> list[str]:
        """A file the implementation wrote, against the schema the index gives its path (a file
        still holding exactly what the scenario wrote there is the scenario's, not checked)."""
        ref = self.schemas.file_schema(name)
        if ref is None or not path.is_file():
            return []
        try:
            data = path.read_bytes()
        except OSError as exc:
            return [f"{label}: cannot read it ({exc})"]
        if self.written.get(name) == data:
            return []
        try:
            document = json.loads(data.decode("utf-8"))
        except ValueError as exc:
            return [f"{label}: not a JSON document ({exc}), and {ref} applies to it"]
        problem = self.schemas.problem(document, ref)
        return [] if problem is None else [f"{label}: does not match {ref}: {problem}{self._cited()}"]

    def _check_snapshot(self, label: str, path: Path, check: dict[str, Any]) -> list[str]:
        """`snapshot: NAME` records the file; `unchanged: NAME` says how it differs from that record."""
        if "snapshot" not in check and "unchanged" not in check:
            return []
        try:
            now = FileSnapshot.of(path)
        except OSError as exc:
            return [f"{label}: cannot read it for a snapshot ({exc})"]
        if now is None:
            return [f"{label}: not a regular file (a snapshot is of a file's bytes)"]
        problems = []
        if "unchanged" in check:
            name = check["unchanged"]
            then = self.snapshots[name]  # the static check made sure an earlier step took it
            changes = then.differences(now)
            if changes:
                problems.append(f"{label}: changed since snapshot {name!r}: " + "; ".join(changes))
        if "snapshot" in check:
            self._new_snapshots[check["snapshot"]] = now
        return problems

    def _check_content(self, label: str, path: Path, check: dict[str, Any]) -> list[str]:
        problems = []
        if "mode" in check:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode != int(check["mode"], 8):
                problems.append(f"{label}: expected mode {int(check['mode'], 8):04o}, got {mode:04o}")
        if "json" not in check and "text" not in check:
            return problems
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return [*problems, f"{label}: cannot read it as UTF-8 text ({exc})"]
        if "text" in check:
            problems += _text_problems(f"{label} text", check["text"], text, self.captures)
        if "json" in check:
            try:
                document = json.loads(text)
            except ValueError as exc:
                return [*problems, f"{label}: not a JSON document ({exc})"]
            problems += [f"{label} json {m}" for m in match(check["json"], document, self.captures)]
        return problems

    def _write(self, files: dict[str, Any], where: str) -> None:
        for rel, content in files.items():
            path = repo_path(self.repo, rel, where)
            name = path.relative_to(self.repo).as_posix()
            self.written.pop(name, None)
            if content is None:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
                continue
            content = _file_text(content)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8"))
            self.written[name] = content.encode("utf-8")

    # ------------------------------------------------------------------ reporting

    def _fail(
        self,
        what: str,
        problems: list[str],
        result: Result | None,
        *,
        frames: bool = False,
        listing: bool = False,
        session: Session | None = None,
        details: list[str] | None = None,
    ) -> None:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        out = [
            f"{what}: {problems[0].splitlines()[0]}{more}",
            f"  scenario: {self.scenario.id} ({self.display_path})",
        ]
        if result is not None:
            extra = {k: v for k, v in result.env.items() if base_env(self.home, DEFAULT_USER).get(k) != v}
            out += [
                f"  command: {shlex.join(result.argv)}",
                f"  cwd: {self.repo}",
                "  env (besides the clean base env): "
                + (" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items())) or "(none)"),
                f"  exit code: {'(timed out)' if result.timed_out else result.returncode}",
            ]
        if session is not None:
            out += session.header()
        out.append("problems:")
        out += [_indent(p, "  - ", "    ") for p in problems]
        out += details or []
        if session is not None:
            out += session.body()
        if result is not None:
            if result.stdin:
                out += ["stdin:", _block(result.stdin)]
            if frames:
                out += ["stdout (frames numbered #0...):", _frames_block(result.stdout)]
            else:
                out += ["stdout:", _block(result.stdout)]
            out += ["stderr:", _block(result.stderr)]
        if listing:
            out += ["files in the repo dir:", _block(_listing(self.repo))]
        if self.captures:
            out += ["captures: " + short(self.captures, 1000)]
        out.append(f"repo dir (kept): {self.repo}")
        raise ScenarioFailure("\n".join(out))


@dataclass(frozen=True)
class FileSnapshot:
    """What `unchanged` compares: the bytes (by sha256), the inode, the size and the mtime in ns.
    A rewrite with the same bytes still shows: through a swap file as a new inode, in place as a
    new mtime."""

    sha256: str
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileSnapshot | None:
        info = path.lstat()  # a symlink is not followed: it is not the file the scenario named
        if not stat.S_ISREG(info.st_mode):
            return None
        data = path.read_bytes()
        return cls(hashlib.sha256(data).hexdigest(), info.st_ino, info.st_size, info.st_mtime_ns)

    def differences(self, now: FileSnapshot) -> list[str]:
        out = []
        if now.sha256 != self.sha256:
            out.append(f"bytes differ (sha256 {self.sha256[:12]}... then, {now.sha256[:12]}... now)")
        if now.inode != self.inode:
            out.append(f"inode {self.inode} then, {now.inode} now (the file was replaced)")
        if now.size != self.size:
            out.append(f"size {self.size} then, {now.size} now")
        if now.mtime_ns != self.mtime_ns:
            out.append(f"mtime_ns {self.mtime_ns} then, {now.mtime_ns} now (the file was written)")
        return out


def _file_text(content: Any) -> str:
    """What a `files:` or `write` entry writes: its text, or a JSON value with indent 2 and a newline."""
    return content if isinstance(content, str) else json_text(content, indent=2) + "\n"


def _exit_problem(result: Result, wanted: str) -> str:
    if result.timed_out:
        return (
            f"timed out after {result.timeout:g} s waiting for {wanted} (the process was killed); "
            "a step may set `timeout:` to allow longer"
        )
    return f"exit code: expected 0, got {result.returncode}"


def _text_problems(label: str, expected: Any, text: str, captures: dict[str, Any]) -> list[str]:
    return [f"{label}: {m.message}" for m in match(expected, text, captures)]


def _indent(text: str, first: str, rest: str) -> str:
    lines = text.split("\n")
    return "\n".join([first + lines[0], *(rest + line for line in lines[1:])])


def _truncate(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n... ({len(text) - OUTPUT_LIMIT} more characters)"


def _block(text: str) -> str:
    if not text:
        return "  | (empty)"
    return "\n".join("  | " + line for line in _truncate(text).rstrip("\n").split("\n"))


def _frames_block(stdout: str) -> str:
    if not stdout:
        return "  | (empty)"
    out, number = [], 0
    for line in _truncate(stdout).rstrip("\n").split("\n"):
        try:
            json.loads(line)
        except ValueError:
            out.append("  !! " + line)
        else:
            out.append(f"  #{number} {line}")
            number += 1
    return "\n".join(out)


def _listing(repo: Path, limit: int = 60) -> str:
    names = sorted(p.relative_to(repo).as_posix() + ("/" if p.is_dir() else "") for p in repo.rglob("*"))
    if len(names) > limit:
        names = [*names[:limit], f"... ({len(names) - limit} more)"]
    return "\n".join(names)
