"""The fast path of shell completion: wait IDs, run IDs and step names from the open index.

Why: a Tab runs `swamp` with _SWAMP_COMPLETE set (click's protocol, see cli/complete.py). Going
through click, the store and the records costs many times what Python's start-up does; this module
answers the Tabs that complete a wait ID, a run ID or a --step from `.swamp/index/open.log`
(store/openindex.py) importing nothing but os, and leaves every other Tab to click (`answer`
returns False). It also leaves the Tab to click whenever the line is one it does not understand,
the store is not the file store, the index is missing or unreadable, or a line it would use is
stale (its record's stat is not the stamp the line holds); then it asks click's path to rebuild
the index (`REBUILD_ENV`). So it never answers differently from click's path, only sooner.
"""

from __future__ import annotations

import os
import sys

REBUILD_ENV = "_SWAMP_REBUILD_OPEN_INDEX"

# Options that take a value, of the root group and of the commands below (the others are flags);
# tests/test_completion_fast.py checks this against click's definitions.
VALUE_OPTIONS = frozenset(
    {
        "--claim-timeout", "--connect", "--delivery-id", "--expires", "--from", "--input", "--input-file",
        "-i", "--job", "--note", "--override", "--payload", "--payload-file", "--reason", "--repo-dir",
        "--run", "--step", "--timeout", "--token", "--token-file", "--uses",
    }
)  # fmt: skip
SUSPENDED = ("suspended",)
ACTIVE = ("pending", "running", "suspended")
# command words after `workflow` -> (what its first argument completes to, runs its --run takes)
COMMANDS: dict[tuple[str, ...], tuple[str | None, tuple[str, ...]]] = {
    ("signal",): ("wait", SUSPENDED),
    ("wait", "show"): ("wait", SUSPENDED),
    ("wait", "grant"): ("wait", SUSPENDED),
    ("wait", "link"): ("wait", SUSPENDED),
    ("approve",): (None, SUSPENDED),
    ("reject",): (None, SUSPENDED),
    ("resume",): (None, SUSPENDED),
    ("cancel",): (None, ACTIVE),
    ("watch",): ("run", ACTIVE),
}


def answer() -> bool:
    """Print this Tab's candidates and return True, or return False for click to answer it."""
    try:
        shell = os.environ.get("_SWAMP_COMPLETE", "").removesuffix("_complete")
        if shell not in ("bash", "zsh", "fish"):
            return False
        line = os.environ.get("COMP_WORDS", "")
        if any(c in line for c in "'\"\\="):  # quoting or --opt=value: click's parser
            return False
        words = line.split()
        if shell == "fish":
            incomplete = os.environ.get("COMP_CWORD", "")
            args = words[1:]
            if incomplete and args and args[-1] == incomplete:
                args.pop()
        else:
            cword = int(os.environ.get("COMP_CWORD", ""))
            args = words[1:cword]
            incomplete = words[cword] if cword < len(words) else ""
        found = _candidates(args, incomplete)
    except Exception:  # anything unexpected: click's path answers
        return False
    if found is None:
        return False
    sys.stdout.write(format_items(shell, found))
    return True


def _candidates(args: list[str], incomplete: str) -> list[tuple[str, str]] | None:
    if incomplete.startswith("-"):
        return None
    repo_dir = None
    words: list[str] = []  # the command words and arguments, options and their values taken out
    given: dict[str, str] = {}  # --run and --step as given
    wants = None  # the option whose value is being completed
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" or word == "--connect":
            return None
        if word in VALUE_OPTIONS:
            if i + 1 == len(args):
                wants = word
                break
            if word == "--repo-dir":
                repo_dir = args[i + 1]
            given[word] = args[i + 1]
            i += 2
            continue
        if not word.startswith("-"):
            words.append(word)
        i += 1
    if len(words) < 2 or words[0] != "workflow":
        return None
    command = tuple(words[1:3]) if words[1] == "wait" else (words[1],)
    if command not in COMMANDS:
        return None
    first, run_statuses = COMMANDS[command]
    positional = words[1 + len(command) :]
    if wants == "--run":
        workflow = positional[0] if positional and first is None else None
        kind = ("run", run_statuses, workflow)
    elif wants == "--step" and first == "wait":
        kind = ("step", SUSPENDED, given.get("--run", ""))
    elif wants is None and not positional and first == "wait" and "--run" not in given:
        kind = ("wait", SUSPENDED, None)
    elif wants is None and not positional and first == "run":
        kind = ("run", run_statuses, None)
    else:
        return None
    if os.environ.get("SWAMP_CONNECT"):
        return None
    found = _store(repo_dir)
    if found is None:
        return None
    return _from_index(*found, kind, incomplete)


def _store(repo_dir: str | None) -> tuple[str, str | None] | None:
    """The repository's `.swamp` folder, and None when its runs are in the file store, else what
    names its other store (SWAMP_STORE_URL, or the `store:` line of .swamp.yaml); None outside a
    repository."""
    address = os.environ.get("SWAMP_STORE_URL", "file")
    key = None if address == "file" else f"env {address}"
    directory = repo_dir or os.environ.get("SWAMP_REPO_DIR")
    if directory:
        root = os.path.abspath(directory)
    else:
        here = os.path.abspath(os.getcwd())
        while not os.path.isfile(os.path.join(here, ".swamp.yaml")):
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent
        root = here
    if key is None:
        with open(os.path.join(root, ".swamp.yaml"), "rb") as handle:
            for text in handle.read().splitlines():
                if text.startswith(b"store") and text[5:].lstrip().startswith(b":"):
                    key = "file " + text.decode("utf-8", "replace")
    return os.path.join(root, ".swamp"), key


class _Stale(Exception):
    pass


def _from_index(
    datastore: str, store: str | None, kind: tuple[str, tuple[str, ...], str | None], incomplete: str
) -> list[tuple[str, str]] | None:
    """`store`: None for the file store (its index, each line checked against its record), else
    what names the other store (the cache of it, when it is recent and of that store). `kind`: what
    to offer (run, wait or step), the run statuses it takes, and the workflow name a run must have
    or the start of the run ID a step's run must have."""
    from ..store import openindex as index

    if store is None:
        path, header = index.index_path(datastore), index.HEADER
    else:
        path, header = index.cache_path(datastore), index.cache_header(store)
    try:
        with open(path, "rb") as handle:
            if store is not None and os.fstat(handle.fileno()).st_mtime < _wall() - index.CACHE_SECONDS:
                raise OSError("old")
            data = handle.read()
    except OSError:
        data = b""
    if not data.startswith(header):
        os.environ[REBUILD_ENV] = datastore if store is None else f"{datastore}\n{store}"
        return None
    latest = index.latest(data)
    if store is None and _missing(datastore, latest):
        os.environ[REBUILD_ENV] = datastore
        return None
    runs = latest.values()

    def fresh(fields: list[str]) -> list[str]:
        if store is not None:
            return fields
        try:
            if index.stamp_of(index.record_path(datastore, fields[1], fields[0])) == fields[5]:
                return fields
        except OSError:
            pass
        raise _Stale

    what, statuses, narrow = kind
    try:
        if what == "run":
            rows = [
                fresh(f)
                for f in runs
                if f[0].startswith(incomplete) and f[3] in statuses and narrow in (None, f[2])
            ]
            rows.sort(key=lambda f: (f[4], f[0]), reverse=True)
            return [(f[0], f"{f[2]} {f[3]} {f[4]}") for f in rows]
        waits = [
            (fresh(f), w.split("\x1f"))
            for f in runs
            if f[3] in statuses and f[6] and f[0].startswith(narrow or "")
            for w in f[6].split("\x1e")
        ]
    except _Stale:
        os.environ[REBUILD_ENV] = datastore
        return None
    now = _now()
    opened = [(f, w) for f, w in waits if float(w[4]) >= now]
    opened.sort(key=lambda fw: (fw[1][3], fw[1][0]))
    if what == "step":
        if any("\\" in w[2] for _, w in opened):
            return None  # a name with a backslash may be an escaped control character: click decides
        steps: dict[str, str] = {}
        for f, w in opened:
            if w[2].startswith(incomplete):
                steps.setdefault(w[2], step_help(f[2], w[1], w[0]))
        return sorted(steps.items())
    offered = [(f, w) for f, w in opened if w[0].startswith(incomplete)]
    return [(w[0], wait_help(f[2], w[1], w[2], w[5], cut=False)) for f, w in offered]


def _missing(datastore: str, latest: dict[str, list[str]]) -> bool:
    """Whether a run the active-run index names (store/runs.py writes its entry before the record)
    has no line: one saved while the index was rebuilt, or by an account that cannot write it."""
    try:
        names = os.listdir(f"{datastore}/index/active")
    except OSError:
        return False
    return any(n[:-5] not in latest for n in names if n.endswith(".json") and not n.startswith("."))


def wait_help(workflow: str, job: str, step: str, description: str | None, *, cut: bool = True) -> str:
    """What is shown beside a wait ID (cli/complete.py gives the same, then escapes its control
    characters; the index holds them escaped). `cut=False`: the index has cut the description
    already (at DESCRIPTION_CHARS, before escaping it)."""
    from ..store.openindex import DESCRIPTION_CHARS

    text = f"{workflow} {job}.{step}"
    if not description:
        return text
    return f"{text}: {description[:DESCRIPTION_CHARS] if cut else description}"


def step_help(workflow: str, job: str, wait_id: str) -> str:
    return f"{workflow} {job}, wait {wait_id}"


def _wall() -> float:
    import time

    return time.time()


def _now() -> float:
    """Seconds since the epoch: SWAMP_NOW's (cli/clock's reading of it) or the clock's."""
    fixed = os.environ.get("SWAMP_NOW")
    if not fixed:
        import time

        return time.time()
    import datetime as dt

    moment = dt.datetime.fromisoformat(fixed.strip().replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


def format_items(shell: str, items: list[tuple[str, str]]) -> str:
    """What click prints for each shell (each item, then a newline at the end): zsh and fish show
    the help beside the value; in bash it goes beside the value only when several are offered, as
    `VALUE  (help)`: bash then only lists them, and inserts their common start, inside the values.
    A help comes from the index, its control characters already escaped (CLI-030) as click's path
    escapes them."""
    if shell == "zsh":
        lines = [f"plain\n{value}\n{about or '_'}" for value, about in items]
    elif shell == "fish":
        lines = [f"plain,{value}\t{about}" if about else f"plain,{value}" for value, about in items]
    else:
        lines = [f"plain,{value}" for value, _ in items]
        if len(items) > 1:
            lines = [f"plain,{bash_line(value, about)}" for value, about in items]
    return "\n".join(lines) + "\n"


def bash_line(value: str, about: str) -> str:
    return f"{value}  ({bash_safe(about)})" if about else value


def bash_safe(text: str) -> str:
    """click's bash script word-splits and globs what it reads: no glob characters nor backslashes."""
    return text.translate(_GLOBS)


_GLOBS = {ord(c): " " for c in "*?[]\\"}
