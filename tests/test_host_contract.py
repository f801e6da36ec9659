"""IMPLEMENTING.md stays the whole host contract: every command with every option it takes, every
JSON-lines request type, and every environment variable swamp reads appear in it. A command,
option, request type or variable added without a line there fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from swamp.cli.main import cli
from swamp.protocol.requests import REQUEST_TYPES
from swamp.protocol.serve import SERVE_TYPES

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = (ROOT / "IMPLEMENTING.md").read_text(encoding="utf-8")
COMMAND_TABLE = CONTRACT[CONTRACT.index("## 2. The command line") : CONTRACT.index("## 3. ")]
FORMS = {"workflow history get"}  # `history get RUN` is a form of `history`, with a row of its own
COMMON = {"--help", "--json", "--jsonl", "--repo-dir"}  # said once for every command


def commands(group: click.Group, ctx: click.Context, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            yield from commands(command, ctx, path)
        else:
            yield path, command


ALL = sorted(commands(cli, click.Context(cli)), key=lambda pair: pair[0])


def row_of(path: str) -> str:
    rows = [line for line in COMMAND_TABLE.splitlines() if line.startswith(f"| `{path}` |")]
    assert rows, f"IMPLEMENTING.md has no row for `swamp {path}` in its command table"
    return rows[0]


@pytest.mark.parametrize(("path", "command"), ALL, ids=[path for path, _ in ALL])
def test_every_command_and_option_is_in_the_contract(path: str, command: click.Command) -> None:
    row = row_of(path)
    for param in command.params:
        for flag in param.opts if isinstance(param, click.Option) else []:
            if flag.startswith("--") and flag not in COMMON:
                assert f"`{flag}" in row, f"swamp {path} {flag} is not in its row of IMPLEMENTING.md"


def test_the_command_table_has_no_command_swamp_lacks() -> None:
    documented = set(re.findall(r"^\| `([a-z ]+)` \|", COMMAND_TABLE, re.MULTILINE))
    assert documented == {path for path, _ in ALL} | FORMS


@pytest.mark.parametrize("request_type", sorted({*REQUEST_TYPES, *SERVE_TYPES}))
def test_every_request_type_is_in_the_contract(request_type: str) -> None:
    assert f"`{request_type}`" in CONTRACT


def test_every_environment_variable_swamp_reads_is_in_the_contract() -> None:
    read = set()
    for source in (ROOT / "swamp").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        read |= set(re.findall(r"environ(?:\.get)?\(\s*\"([A-Z_]+)\"", text))
        read |= set(re.findall(r"environ\[\s*\"([A-Z_]+)\"\s*\]", text))
    assert {"SWAMP_NOW", "SWAMP_ACTOR", "SWAMP_REPO_DIR"} <= read  # the pattern still finds them
    missing = sorted(name for name in read if f"`{name}`" not in CONTRACT)
    assert not missing, f"IMPLEMENTING.md does not say what these variables mean: {missing}"
