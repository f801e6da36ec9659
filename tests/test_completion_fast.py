"""The fast path of completion (cli/tabcomplete.py, CLI-043..049): a Tab completing a wait ID, a
run ID or a --step is answered from the open index without importing click, the same as click's
path would answer it; the index follows every save (a settled wait leaves it), a stale or lost
index sends the Tab the slow way and is rebuilt, and what each command's RUN or --run offers is
what it can take."""

from __future__ import annotations

import os

import pytest
from helpers import job, make_repo, run_swamp, sh

NOW = {"SWAMP_NOW": "2026-01-01T00:00:00Z"}
INDEX = ".swamp/index/open.log"


def tab(words: str, cwd, shell: str = "bash", env: dict[str, str] | None = None) -> tuple[str, bool]:
    """What `swamp` prints for this Tab, and whether click was imported to answer it."""
    parts = words.split(" ")
    result = run_swamp(
        cwd=cwd,
        env={
            **NOW,
            **(env or {}),
            "PYTHONPROFILEIMPORTTIME": "1",
            "_SWAMP_COMPLETE": f"{shell}_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": parts[-1] if shell == "fish" else str(len(parts) - 1),
        },
    )
    assert result.code == 0, result
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.err.splitlines()}
    assert not [line for line in result.err.splitlines() if not line.startswith("import time:")]
    return result.out, "click" in imported


def values(out: str) -> list[str]:
    return [line.split(",", 1)[1].split("  (")[0] for line in out.splitlines() if "," in line]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("fast") / "repo")
    wait = {
        "type": "wait_for_signal",
        "timeout": 3600,
        "description": "QA: ship* or fix?",
        "schema": {"type": "string"},
    }
    repo.write_workflow(
        "release", [job("main", {"name": "verdict", "task": wait}, {"name": "notes", "task": wait})]
    )
    repo.write_workflow("build", [job("main", sh("hello", "true"))])
    first = repo.swamp("workflow", "run", "release", "--json", env=NOW).json
    second = repo.swamp(
        "workflow", "run", "release", "--json", env={"SWAMP_NOW": "2026-01-01T00:00:01Z"}
    ).json
    done = repo.swamp("workflow", "run", "build", "--json", env=NOW).json
    return repo, first, second, done


@pytest.mark.cli
def test_a_wait_id_tab_is_answered_without_click_and_as_click_would(repo):
    r, first, second, _ = repo
    lines = [
        "swamp workflow signal wait_",
        "swamp workflow cancel release --run ",
        f"swamp workflow signal --run {first['id'][:8]} --step ",
        "swamp workflow wait link --step n",
        "swamp workflow watch ",
    ]
    for shell, some in (("bash", lines[:4]), ("zsh", lines[:1]), ("fish", lines[4:])):
        for line in some:
            fast, clicked = tab(line, r.root, shell)
            assert not clicked, (shell, line)
            os.unlink(r.root / INDEX)
            slow, clicked = tab(line, r.root, shell)
            assert clicked and slow == fast, (shell, line, fast, slow)
    waits = values(tab("swamp workflow signal ", r.root)[0])
    assert sorted(waits) == sorted(w["waitId"] for run in (first, second) for w in run["waits"])
    assert values(tab(f"swamp workflow signal --run {first['id'][:8]} --step ", r.root)[0]) == [
        "notes",
        "verdict",
    ]


@pytest.mark.cli
def test_bash_shows_the_help_beside_each_value_only_when_several_are_offered(repo):
    r, first, _, _ = repo
    several = tab("swamp workflow signal ", r.root)[0].splitlines()
    assert all(line.endswith(" main.verdict: QA: ship  or fix )") or "main.notes" in line for line in several)
    one = first["waits"][0]["waitId"]
    assert tab(f"swamp workflow signal {one}", r.root)[0] == f"plain,{one}\n"
    zsh = tab(f"swamp workflow signal {one}", r.root, "zsh")[0].splitlines()
    assert zsh[1:] == [one, f"release main.{first['waits'][0]['stepName']}: QA: ship* or fix?"]


@pytest.mark.cli
def test_each_run_option_offers_what_its_command_takes(repo):
    r, first, second, done = repo
    suspended = [second["id"], first["id"]]  # newest first
    assert values(tab("swamp workflow signal --run ", r.root)[0]) == suspended
    assert values(tab("swamp workflow resume release --run ", r.root)[0]) == suspended
    assert values(tab("swamp workflow resume build --run ", r.root)[0]) == []
    assert done["status"] == "succeeded"
    assert done["id"] not in values(tab("swamp workflow watch ", r.root)[0])
    assert done["id"] in values(tab("swamp workflow history get ", r.root)[0])  # any run


@pytest.mark.cli
def test_a_settled_wait_leaves_the_index_and_a_stale_line_is_never_offered(tmp_path):
    r = make_repo(tmp_path / "repo")
    wait = {"type": "wait_for_signal", "timeout": 3600, "schema": {"type": "string"}}
    r.write_workflow("qa", [job("main", {"name": "a", "task": wait}, {"name": "b", "task": wait})])
    run = r.swamp("workflow", "run", "qa", "--json", env=NOW).json
    a, b = (w["waitId"] for w in run["waits"])
    index = r.root / INDEX
    before = index.read_bytes()
    assert r.swamp("workflow", "signal", a, "--payload", '"ok"', env=NOW).code == 0
    out, clicked = tab("swamp workflow signal ", r.root)
    assert values(out) == [b] and not clicked
    # as if killed between the record and its line: the index still says `a` is open
    index.write_bytes(before)
    out, clicked = tab("swamp workflow signal ", r.root)
    assert values(out) == [b] and clicked  # the stale line was seen; the store answered
    out, clicked = tab("swamp workflow signal ", r.root)
    assert values(out) == [b] and not clicked  # and the index was rebuilt
    # a run whose line was lost (saved while the index was rebuilt): the store answers
    index.write_bytes(
        b"".join(line for line in index.read_bytes().splitlines(True) if run["id"].encode() not in line)
    )
    out, clicked = tab("swamp workflow signal ", r.root)
    assert values(out) == [b] and clicked
    index.write_bytes(b"not an index\n")
    assert values(tab("swamp workflow signal ", r.root)[0]) == [b]
    assert index.read_bytes().startswith(b"# swamp open index")
    assert r.swamp("workflow", "signal", b, "--payload", '"ok"', "--resume", env=NOW).code == 0
    assert tab("swamp workflow signal ", r.root) == ("\n", False)
    assert tab("swamp workflow watch ", r.root) == ("\n", False)


@pytest.mark.cli
def test_expired_waits_and_other_stores_and_repositories(repo, tmp_path):
    r, first, second, _ = repo
    later = {"SWAMP_NOW": "2026-01-01T01:00:00.500Z"}  # first's waits have expired, second's not
    assert sorted(values(tab("swamp workflow signal ", r.root, env=later)[0])) == sorted(
        w["waitId"] for w in second["waits"]
    )
    assert tab("swamp workflow signal ", r.root, env={"SWAMP_NOW": "not a time"})[0] == "\n"
    out, clicked = tab(f"swamp --repo-dir {r.root} workflow signal --run ", tmp_path)
    assert values(out) == [second["id"], first["id"]] and not clicked
    assert tab("swamp workflow signal ", tmp_path)[0] == "\n"  # outside a repository
    # another store: the index is not consulted (click answers, from that store)
    out, clicked = tab("swamp workflow signal ", r.root, env={"SWAMP_STORE_URL": "postgresql://nowhere/x"})
    assert clicked and values(out) == []


def test_the_fast_paths_option_table_is_clicks():
    import click

    from swamp.cli.main import cli
    from swamp.cli.tabcomplete import COMMANDS, VALUE_OPTIONS

    ctx = click.Context(cli)
    group = cli.get_command(ctx, "workflow")
    commands = [cli]
    for words in COMMANDS:
        command = group
        for word in words:
            command = command.get_command(ctx, word)
        commands.append(command)
    for command in commands:
        for param in command.params:
            if isinstance(param, click.Option):
                names = {*param.opts, *param.secondary_opts}
                if param.is_flag:
                    assert not names & VALUE_OPTIONS, (command.name, names)
                else:
                    assert names <= VALUE_OPTIONS, (command.name, names)


def test_the_index_compacts_to_each_runs_last_line(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from swamp.store import openindex

    monkeypatch.setattr(openindex, "COMPACT_EVERY", 1024)
    datastore = str(tmp_path)
    openindex.start_empty(datastore)
    for k in range(100):  # five runs saved twenty times each: about 10 kB of lines
        finished = k >= 95 and k % 5 < 3
        run = SimpleNamespace(
            id=f"run-{k % 5}",
            workflowId="wf",
            workflowName="qa",
            status="succeeded" if finished else "suspended",
            createdAt="2026-01-01T00:00:00.000Z",
            unsettled_waits=list,
        )
        record = openindex.record_path(datastore, "wf", run.id)
        os.makedirs(os.path.dirname(record), exist_ok=True)
        with open(record, "w") as handle:
            handle.write(f"save {k}\n")
        openindex.note_saved(datastore, run, record)  # type: ignore[arg-type]
    data = (tmp_path / "index" / "open.log").read_bytes()
    assert data.startswith(openindex.HEADER) and len(data) < 1024 + 512
    latest = openindex.latest(data)
    assert sorted(latest) == ["run-3", "run-4"]
    for run_id, fields in latest.items():
        assert fields[5] == openindex.stamp_of(openindex.record_path(datastore, "wf", run_id))


PG = os.environ.get("SWAMP_TEST_PG", "")


@pytest.mark.skipif(not PG.startswith("postgresql://"), reason="SWAMP_TEST_PG is not set")
def test_with_postgresql_a_recent_copy_answers_and_saves_here_drop_it(tmp_path, monkeypatch):
    import uuid

    url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3Dt_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("SWAMP_STORE_URL", url)  # the subprocesses inherit it
    here, there = make_repo(tmp_path / "here"), make_repo(tmp_path / "there")  # one store, two folders
    wait = {"type": "wait_for_signal", "timeout": 3600, "schema": {"type": "string"}}
    for r in (here, there):
        r.write_workflow("qa", [job("main", {"name": "a", "task": wait}, {"name": "b", "task": wait})])
    a, b = (w["waitId"] for w in here.swamp("workflow", "run", "qa", "--json", env=NOW).json["waits"])
    first, clicked = tab("swamp workflow signal ", here.root)
    assert sorted(values(first)) == sorted([a, b]) and clicked  # the store, then a copy kept
    assert tab("swamp workflow signal ", here.root) == (first, False)
    assert here.swamp("workflow", "signal", a, "--payload", '"ok"', env=NOW).code == 0
    assert tab("swamp workflow signal ", here.root) == (f"plain,{b}\n", True)  # the save dropped it
    assert there.swamp("workflow", "signal", b, "--payload", '"ok"', env=NOW).code == 0
    assert tab("swamp workflow signal ", here.root) == (f"plain,{b}\n", False)  # elsewhere: not yet
    cache = here.root / ".swamp" / "index" / "open-cache.log"
    old = cache.stat().st_mtime - 31
    os.utime(cache, (old, old))  # CACHE_SECONDS later
    assert tab("swamp workflow signal ", here.root) == ("\n", True)

