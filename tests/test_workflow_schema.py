"""spec/schemas/workflow.schema.json and swamp's loader give one verdict on every workflow file.

The corpus: every workflow file the conformance scenarios write, the examples, the bad-input
corpus (tests/corpus/workflows.yaml) and a table of shapes below. All of them are written into one
repository and `swamp workflow validate --json` (a real process) judges them at once; a file
loads when its `Schema validation` check passed (WF-024). The schema judges the same parsed YAML.
Files that are not YAML at all (a tab, an alias bomb) have no JSON value and are left out.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from helpers import built_once, make_repo, run_swamp

from swamp.store.yamlio import YamlError, load_yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "spec" / "schemas" / "workflow.schema.json").read_text(encoding="utf-8"))

sys.path.insert(0, str(ROOT / "scripts"))
import reliability_corpus as corpus  # noqa: E402

HEAD = "id: 10000000-0000-4000-8000-0000000000f0\nname: table\n"


def W(task: str, step: str = "", job: str = "", top: str = "") -> str:
    """A workflow with one job `main` holding one step `s` with `task` (and extra keys)."""
    return HEAD + top + f"jobs:\n  - name: main\n{job}    steps:\n      - {{name: s, task: {task}{step}}}\n"


def M(keys: str) -> str:
    """W with a model_method task that has `keys` beside its model and method."""
    return W("{type: model_method, modelIdOrName: sh, methodName: execute, " + keys[:-1] + "}")


SH = "{type: model_method, modelIdOrName: sh, methodName: execute}"
WAIT = "{type: wait_for_signal, timeout: 60}"

# (id, text, loads) - the shapes where a loose loader and a loose schema would part ways
TABLE: list[tuple[str, str, bool]] = [
    ("plain", W(SH), True),
    (
        "every-key",
        W(
            SH,
            ", description: d, dependsOn: [], guard: '${{ false }}', allowFailure: true, "
            "weight: 1.5, concurrency: 2",
            "    description: j\n    weight: 2\n    concurrency: 0\n    dependsOn: []\n",
            "description: w\nversion: 3\ntags: {team: a}\nconcurrency: 1\ninputs: {type: object}\n",
        ),
        True,
    ),
    ("flat-inputs", W(SH, top="inputs: {env: {type: string}}\n"), True),
    ("foreach", W(SH, ", forEach: {item: r, in: \"${{ ['a'] }}\"}"), True),
    (
        "wait-all-keys",
        W("{type: wait_for_signal, timeout: 0.5, schema: {type: object}, description: d}"),
        True,
    ),
    ("wait-schema-true", W("{type: wait_for_signal, timeout: 60, schema: true}"), True),
    ("wait-schema-false", W("{type: wait_for_signal, timeout: 60, schema: false}"), True),
    ("wait-ten-years", W("{type: wait_for_signal, timeout: 315360000}"), True),
    ("gate", W("{type: manual_approval, prompt: ok?}"), True),
    ("gate-timeout", W("{type: manual_approval, prompt: ok?, timeout: 30}"), True),
    ("inputs-expression", M("inputs: '${{ {} }}'}"), True),
    (
        "condition-tree",
        W(
            SH,
            ", dependsOn: [{step: s, condition: {type: not, condition: {type: and, conditions: "
            "[{type: succeeded}, {type: or, conditions: [{type: failed}, {type: skipped}]}]}}}]",
        ),
        True,
    ),
    # unknown keys, every entity
    ("wait-typo", W("{type: wait_for_signal, timeot: 60}"), False),
    ("wait-typo-and-timeout", W("{type: wait_for_signal, timeout: 60, timeot: 60}"), False),
    ("gate-typo", W("{type: manual_approval, prompt: ok?, promt: x}"), False),
    ("gate-schema", W("{type: manual_approval, prompt: ok?, schema: {}}"), False),
    ("method-typo", M("input: {}}"), False),
    ("method-arguments", M("arguments: {}}"), False),
    ("unknown-task-type", W("{type: shell, run: x}"), False),
    ("task-type-number", W("{type: 5}"), False),
    ("step-key", W(SH, ", retries: 2"), False),
    ("job-key", W(SH, job="    when: x\n"), False),
    ("top-key", W(SH, top="owner: me\n"), False),
    ("foreach-key", W(SH, ', forEach: {item: r, in: "${{ [1] }}", as: x}'), False),
    ("dependency-key", W(SH, ", dependsOn: [{step: s, condition: {type: always}, when: x}]"), False),
    ("condition-key", W(SH, ", dependsOn: [{step: s, condition: {type: always, negate: true}}]"), False),
    # the wait task's own values
    ("wait-schema-number", W("{type: wait_for_signal, timeout: 60, schema: 5}"), False),
    ("wait-schema-string", W("{type: wait_for_signal, timeout: 60, schema: object}"), False),
    ("wait-schema-list", W("{type: wait_for_signal, timeout: 60, schema: [1]}"), False),
    ("wait-schema-one", W("{type: wait_for_signal, timeout: 60, schema: 1}"), False),
    ("wait-no-timeout", W("{type: wait_for_signal}"), False),
    ("wait-timeout-string", W("{type: wait_for_signal, timeout: '60'}"), False),
    ("wait-timeout-bool", W("{type: wait_for_signal, timeout: true}"), False),
    ("wait-timeout-zero", W("{type: wait_for_signal, timeout: 0}"), False),
    ("wait-timeout-too-long", W("{type: wait_for_signal, timeout: 315360001}"), False),
    ("wait-description-number", W("{type: wait_for_signal, timeout: 60, description: 5}"), False),
    ("gate-no-prompt", W("{type: manual_approval}"), False),
    ("gate-empty-prompt", W("{type: manual_approval, prompt: ''}"), False),
    ("gate-prompt-number", W("{type: manual_approval, prompt: 5}"), False),
    ("gate-timeout-zero", W("{type: manual_approval, prompt: ok?, timeout: 0}"), False),
    # no coercion (WF-025)
    ("allow-failure-string", W(SH, ", allowFailure: 'yes'"), False),
    ("allow-failure-number", W(SH, ", allowFailure: 1"), False),
    ("version-string", W(SH, top="version: '2'\n"), False),
    ("version-float", W(SH, top="version: 2.5\n"), False),
    ("version-integral-float", W(SH, top="version: 2.0\n"), True),
    ("version-bool", W(SH, top="version: true\n"), False),
    ("weight-string", W(SH, ", weight: '1'"), False),
    ("weight-bool", W(SH, ", weight: true"), False),
    ("concurrency-float", W(SH, ", concurrency: 1.5"), False),
    ("concurrency-integral-float", W(SH, ", concurrency: 1.0"), True),
    ("timeout-nan-is-not-json", W("{type: wait_for_signal, timeout: .nan}"), False),
    ("concurrency-negative", W(SH, ", concurrency: -1"), False),
    ("tag-number", W(SH, top="tags: {n: 1}\n"), False),
    ("description-number", W(SH, top="description: 5\n"), False),
    ("model-name-number", W("{type: model_method, modelIdOrName: 5, methodName: execute}"), False),
    ("inputs-list", W(SH, top="inputs: [a]\n"), False),
    ("inputs-not-object", W(SH, top="inputs: {type: string}\n"), False),
    ("method-inputs-text", M("inputs: 'run: x'}"), False),
    ("method-inputs-list", M("inputs: [1]}"), False),
    # null is not absent (WF-026)
    ("null-description", W(SH, top="description:\n"), False),
    ("null-step-guard", W(SH, ", guard: null"), False),
    ("null-gate-timeout", W("{type: manual_approval, prompt: ok?, timeout: null}"), False),
    ("null-wait-description", W("{type: wait_for_signal, timeout: 60, description: null}"), False),
    ("null-wait-schema", W("{type: wait_for_signal, timeout: 60, schema: null}"), False),
    ("null-inputs", W(SH, top="inputs:\n"), False),
    ("null-concurrency", W(SH, job="    concurrency:\n"), False),
    ("null-condition", W(SH, ", dependsOn: [{step: s, condition: {type: always, condition: null}}]"), False),
    # shapes
    ("guard-not-whole", W(SH, ", guard: 'x ${{ true }}'"), False),
    ("guard-two", W(SH, ", guard: '${{ a }} ${{ b }}'"), False),
    ("foreach-item-bad", W(SH, ', forEach: {item: 1x, in: "${{ [1] }}"}'), False),
    (
        "condition-and-one",
        W(SH, ", dependsOn: [{step: s, condition: {type: and, conditions: [{type: always}]}}]"),
        False,
    ),
    (
        "condition-leaf-nested",
        W(SH, ", dependsOn: [{step: s, condition: {type: always, condition: {type: failed}}}]"),
        False,
    ),
    ("dependency-string", W(SH, ", dependsOn: [s]"), False),
    ("bad-uuid", W(SH).replace("10000000-0000-4000-8000-0000000000f0", "nope"), False),
    ("name-slash", W(SH).replace("name: table", "name: a/b"), False),
]


def _scenario_workflows() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "conformance" / "scenarios").rglob("*.yaml")):
        scenario = yaml.safe_load(path.read_text(encoding="utf-8"))
        sources = [scenario.get("files") or {}]
        sources += [step.get("write") or {} for step in scenario.get("steps") or [] if isinstance(step, dict)]
        for files in sources:
            for name, text in files.items():
                if "workflows/workflow-" in name and name.endswith(".yaml") and isinstance(text, str):
                    found.append((f"{path.relative_to(ROOT)}:{name}", text))
    return found


def _corpus() -> list[tuple[str, str, bool | None]]:
    cases: list[tuple[str, str, bool | None]] = [(i, t, expected) for i, t, expected in TABLE]
    cases += [(name, text, None) for name, text in _scenario_workflows()]
    for path in sorted((ROOT / "examples").rglob("workflows/*.yaml")):
        cases.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), None))
    for case in corpus.load_cases():
        if case.kind == "workflow" and "text" in case.spec:
            cases.append((f"corpus:{case.id}", corpus.workflow_text(case.spec, "corpus"), None))
    return cases


def _json_value(text: str) -> Any:
    """The file's value, or ... when it has none in JSON (not YAML; a date, NaN or infinity in it)."""
    try:
        value = load_yaml(text)
        json.dumps(value, allow_nan=False)
    except (YamlError, TypeError, ValueError):
        return ...
    return value


def _schema_verdict(value: Any) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(value)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Any, bool | None, bool]]:
    """case id -> (text, parsed value, expected verdict or None, swamp's verdict)."""
    return built_once(tmp_path_factory, "workflow-schema-verdicts", lambda: _verdicts(tmp_path_factory))


def _verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Any, bool | None, bool]]:
    repo = make_repo(tmp_path_factory.mktemp("schema-agreement"))
    written: dict[str, tuple[str, str, Any, bool | None]] = {}
    for number, (case_id, text, expected) in enumerate(_corpus()):
        value = _json_value(text)
        if value is ... and expected is None:
            continue
        path = f"workflows/workflow-c{number}.yaml"
        (repo.root / path).write_text(text.replace("10000000-0000-4000-8000-0000000000f0", str(uuid.uuid4())))
        written[path] = (case_id, text, value, expected)
    result = run_swamp("workflow", "validate", "--json", cwd=repo.root, timeout=300)
    assert result.json is not None, result.stderr[-2000:]
    out = {}
    for entry in result.json["workflows"]:
        case_id, text, value, expected = written[entry["path"]]
        schema_check = [v for v in entry["validations"] if v["name"] == "Schema validation"]
        out[case_id] = (text, value, expected, bool(schema_check and schema_check[0]["passed"]))
    missing = {written[p][0] for p in set(written) - {e["path"] for e in result.json["workflows"]}}
    assert not missing, missing
    return out


def test_the_corpus_is_broad(verdicts: dict[str, tuple[str, Any, bool | None, bool]]) -> None:
    """Scenario files, examples and the bad-input corpus are all in, good and bad ones."""
    ids = list(verdicts)
    assert sum(1 for i in ids if i.startswith("conformance/")) >= 100
    assert sum(1 for i in ids if i.startswith("corpus:")) >= 30
    assert any(i.startswith("examples/") for i in ids)
    loads = [v[3] for v in verdicts.values()]
    assert loads.count(True) >= 100 and loads.count(False) >= 60


def test_the_table_says_what_swamp_does(verdicts: dict[str, tuple[str, Any, bool | None, bool]]) -> None:
    wrong = {i: v[3] for i, v in verdicts.items() if v[2] is not None and v[2] != v[3]}
    assert not wrong, f"swamp's verdict differs from the table: {wrong}"


def test_swamp_and_the_schema_agree_on_every_file(
    verdicts: dict[str, tuple[str, Any, bool | None, bool]],
) -> None:
    disagree = {
        case_id: ("swamp loads it, the schema refuses" if loads else "the schema accepts it, swamp refuses")
        for case_id, (_, value, _, loads) in verdicts.items()
        if value is not ... and _schema_verdict(value) != loads
    }
    assert not disagree, json.dumps(disagree, indent=1)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$id"] == "workflow.schema.json"
