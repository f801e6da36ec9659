"""Issue 30 (items 3, 8, 10, 11): errors and reports in the user's terms, tested in process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import run_swamp

from swamp.domain.errors import ExpressionError
from swamp.domain.expressions import ExpressionEngine
from swamp.domain.payloadpaths import yaml_line
from swamp.store.yamlio import YamlError, load_yaml


@pytest.mark.parametrize(
    "text",
    [
        '${{ has(steps.q.outputs.payload.v) ? steps.q.outputs.payload.v : "" }}',
        "echo \"it's ${{ x == 'a: b' }}\"",
        "- starts like a list item: # and a comment",
        "two\nlines\n\nand a tab\there ",
        "'quoted' \"both\" \\ back",
        "  leading and trailing spaces  ",
        "ünïcode → ✓",
    ],
)
@pytest.mark.parametrize("field", ["guard", "task.inputs.run", "forEach.in", "task.inputs.list[2]"])
def test_a_fix_as_yaml_reads_back_as_the_text(field: str, text: str) -> None:
    line = yaml_line(field, text)
    loaded = load_yaml(line)
    assert (loaded[0] if field.endswith("]") else loaded[field.rsplit(".", 1)[-1]]) == text


def test_a_hyphenated_name_is_reported_with_the_bracket_form() -> None:
    with pytest.raises(ExpressionError) as caught:
        ExpressionEngine().compile("steps.qa-verdict.outputs.payload.verdict == 'ship'")
    message = caught.value.message
    assert message.startswith("steps.qa-verdict reads as a subtraction")
    assert "steps[\"qa-verdict\"]" in message
    assert "${{ steps[\"qa-verdict\"].outputs.payload.verdict == 'ship' }}" in message
    assert "container" not in message


def test_an_undeclared_name_without_a_hyphen_keeps_cel_text() -> None:
    with pytest.raises(ExpressionError) as caught:
        ExpressionEngine().compile("secrets.token")
    assert "undeclared reference" in caught.value.message


def test_a_subtraction_of_two_declared_paths_still_compiles() -> None:
    ExpressionEngine().compile("inputs.a-inputs.b")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('guard: ${{ has(x) ? x : "" }}\n', "line 1, column 23: ': ' inside a plain (unquoted) value"),
        ("a: 'open\nb: 1\n", "line 3, column 1: found unexpected end of stream (while scanning a quoted"),
        ("a: [1, 2\n", "line 2, column 1: did not find expected ',' or ']'"),
    ],
)
def test_yaml_errors_say_line_and_column_in_swamps_words(text: str, says: str) -> None:
    with pytest.raises(YamlError) as caught:
        load_yaml(text)
    assert str(caught.value).startswith(says)
    assert "unicode string" not in str(caught.value)


def _wait_schemas(value: object) -> list[dict[str, object]]:
    """The `schema` of every wait_for_signal task in a loaded YAML value, at any depth."""
    found: list[dict[str, object]] = []
    if isinstance(value, dict):
        if value.get("type") == "wait_for_signal" and isinstance(value.get("schema"), dict):
            found.append(value["schema"])
        for item in value.values():
            found += _wait_schemas(item)
    elif isinstance(value, list):
        for item in value:
            found += _wait_schemas(item)
    return found


def test_the_readme_and_the_examples_refuse_unlisted_payload_fields() -> None:
    """Issue 30, item 11b: a newcomer copies the README's wait; a typo'd field must be refused."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = [load_yaml(b) for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "wait_for_signal" in b]
    files = sorted(root.glob("examples/**/workflow-*.yaml"))
    examples = [load_yaml(p.read_text(encoding="utf-8")) for p in files]
    schemas = [s for doc in blocks + examples for s in _wait_schemas(doc)]
    assert len(schemas) >= 3
    for schema in schemas:
        if schema.get("type") == "object":
            assert schema.get("additionalProperties") is False, schema


_PG = os.environ.get("SWAMP_TEST_PG", "")


def _record(run_id: str, workflow: str, status: str) -> dict[str, object]:
    return {
        "formatVersion": 1,
        "id": run_id,
        "workflowId": f"70000000-0000-4000-8000-00000000000{workflow[-1]}",
        "workflowName": workflow,
        "status": status,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "inputs": {},
        "tags": {},
        "jobs": [],
    }


@pytest.mark.skipif(not _PG.startswith(("postgresql://", "postgres://")), reason="SWAMP_TEST_PG is not set")
def test_both_stores_list_the_candidates_of_an_ambiguous_run_prefix(tmp_path: Path) -> None:
    """CLI-031 on PostgreSQL as on files (the scenario plants files; here the rows are planted)."""
    import json
    import uuid

    import psycopg
    from helpers import make_repo

    records = [_record("abc-1", "w8", "succeeded"), _record("abc-2", "w9", "failed")]
    files = make_repo(tmp_path / "files")
    for record in records:
        path = files.root / ".swamp/workflow-runs" / str(record["workflowId"]) / f"{record['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
    url = f"{_PG}{'&' if '?' in _PG else '?'}options=-csearch_path%3Dt_{uuid.uuid4().hex[:12]}"
    env = {"SWAMP_STORE_URL": url}
    (tmp_path / "pg").mkdir()
    assert run_swamp("repo", "init", ".", cwd=tmp_path / "pg", env=env).code == 0
    with psycopg.connect(url, autocommit=True) as db:
        for record in records:
            db.execute(
                "INSERT INTO runs (run_id, workflow_id, workflow_name, status, inputs_sha256, created_at,"
                " record) VALUES (%s, %s, %s, %s, '', %s, %s)",
                (record["id"], record["workflowId"], record["workflowName"], record["status"],
                 record["createdAt"], json.dumps(record)),
            )
    errors = [
        run_swamp("workflow", "history", "get", "abc-", "--json", cwd=cwd, env=e).json["error"]
        for cwd, e in ((files.root, None), (tmp_path / "pg", env))
    ]
    assert errors[0] == errors[1]
    assert errors[0]["details"]["runs"] == [
        {"runId": "abc-1", "workflowName": "w8", "status": "succeeded"},
        {"runId": "abc-2", "workflowName": "w9", "status": "failed"},
    ]
