"""Help says each value the way the usage line and the host contract say it: an option's metavar in
`--help` is the one IMPLEMENTING.md shows for it (`--repo-dir DIR`, `--limit N`), and the help
shows no argument under a name the usage line does not use (rich-click's arguments panel said
`TYPE_NAME` where the usage said `TYPE`)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from helpers import run_swamp
from test_host_contract import ALL, row_of

CONTRACT = (Path(__file__).resolve().parents[1] / "IMPLEMENTING.md").read_text(encoding="utf-8")
VALUED = [
    (path, command, param)
    for path, command in ALL
    for param in command.params
    if isinstance(param, click.Option) and not param.is_flag and param.opts[0] != "--help"
]


@pytest.mark.parametrize(
    ("path", "command", "option"), VALUED, ids=[f"{p} {o.opts[0]}" for p, _, o in VALUED]
)
def test_an_options_metavar_is_the_one_the_contract_shows(path, command, option):
    metavar = option.make_metavar(click.Context(command))
    name = option.opts[0]
    text = CONTRACT if name == "--repo-dir" else row_of(path)  # --repo-dir is said once for all
    shown = re.findall(rf"`{re.escape(name)}(?:/-\w)? ([^`]+)`", text)
    assert shown, f"swamp {path}: {name} has no `{name} VALUE` in IMPLEMENTING.md"
    assert metavar in shown and set(shown) <= {metavar, "-"}, (  # `--payload -` is a value, not a metavar
        f"swamp {path} --help says {name} {metavar}; IMPLEMENTING.md {shown}"
    )


def renamed(command: click.Command) -> list[str]:
    """The arguments whose Python name (upper-cased) is not what the usage line calls them."""
    return [
        p.name.upper()
        for p in command.params
        if isinstance(p, click.Argument)
        and p.name
        and p.make_metavar(click.Context(command)).strip("[]") != p.name.upper()
    ]


RENAMED = [path for path, command in ALL if renamed(command)]


@pytest.mark.cli
@pytest.mark.parametrize("path", RENAMED)
def test_help_names_arguments_only_as_the_usage_line_does(path, tmp_path):
    result = run_swamp(*path.split(), "--help", cwd=tmp_path)  # a real process: rich-click's help
    assert result.code == 0, result
    usage = next(line for line in result.out.splitlines() if "Usage:" in line)
    for internal in renamed(dict(ALL)[path]):
        if internal not in usage:
            assert not re.search(rf"\b{internal}\b", result.out), f"swamp {path} --help shows {internal}"
