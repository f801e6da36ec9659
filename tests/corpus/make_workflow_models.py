"""Writes tests/corpus/workflow-models.json: workflow documents and what swamp's reader made of them.

It was run once with the pydantic models swamp used to read workflow files (before the
hand-written reader of swamp/domain/definition.py), so the file holds that reader's answers:
for every document the `to_json` dump of a valid one, or the problems of an invalid one.
tests/test_workflow_models.py holds today's reader to them, byte for byte.

The documents: every workflow file of the conformance scenarios and examples/, the bad-input
corpus (tests/corpus/workflows.yaml), the table of tests/test_workflow_schema.py, the raw
workflows tests/test_workflow_files.py and tests/test_payload_warnings.py parse (given as
JSON lines in argv[1], recorded while they ran), a few hand-written oddities, and mutations of
a set of bases that together hold every key: each key removed, each value replaced by null, "",
0, -1, 2.5, 2.0, true, a word, a list, a mapping, [], {}, infinity or NaN.

Run: python tests/corpus/make_workflow_models.py [recorded.jsonl]
"""

# ruff: noqa: E501 - the oddities are one document a line
from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

from swamp.domain.definition import parse_workflow  # noqa: E402
from swamp.domain.errors import WorkflowInvalid  # noqa: E402
from swamp.store.yamlio import YamlError, dump_yaml, load_yaml  # noqa: E402

SOURCE = "workflows/workflow-case.yaml"
VALUES: list[Any] = [
    None,
    "",
    0,
    -1,
    2.5,
    2.0,
    True,
    "word",
    ["x"],
    {"k": "v"},
    [],
    {},
    float("inf"),
    float("nan"),
]
UUIDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

ODDITIES = [
    # keys that are not strings, at each level
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\n1: x\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, 2: y, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, true: 1, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5, 3: 4}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\ntags: {1: a}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\ninputs: {1: {type: string}}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\ninputs: {type: object, 1: 2}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5, schema: {1: 2}}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: model_method, modelIdOrName: a, methodName: b, inputs: {1: 2}}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: model_method, modelIdOrName: a, methodName: b, inputs: {x: null, y: [1, null]}}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, dependsOn: [{step: t, condition: {type: succeeded}, 1: 2}], task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, dependsOn: [{step: t, condition: {type: succeeded, 1: 2}}], task: {type: wait_for_signal, timeout: 5}}]}]\n",
    # a field given by its Python name rather than its key
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5, schema_: {}}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, forEach: {item: x, in_: '${{ [1] }}'}, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, forEach: {item: x, in: '${{ [1] }}', in_: 5}, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    # numbers at their edges
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\nversion: 100000000000000000000000000000\nconcurrency: 3.0\njobs: [{name: m, concurrency: 0, weight: -2, steps: [{name: s, weight: 1e300, task: {type: wait_for_signal, timeout: 315360000.0}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 0.0000001}}, {name: t, task: {type: manual_approval, prompt: p, timeout: 315360000.5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: -.inf}}, {name: t, task: {type: manual_approval, prompt: p, timeout: .inf}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: odd\nversion: 0\nconcurrency: -3\njobs: [{name: m, concurrency: 1.5, weight: .nan, steps: [{name: s, concurrency: 1e3, task: {type: wait_for_signal, timeout: 9e99}}]}]\n",
    # names and expressions
    "id: 10000000-0000-4000-8000-000000000001\nname: a..b\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: 'a\\\\b'\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    'id: 10000000-0000-4000-8000-000000000001\nname: "a\\0b"\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n',
    "id: 10000000-0000-4000-8000-00000000000G\nname: ''\njobs: [{name: m, steps: [{name: s, guard: 'x', forEach: {item: '', in: 'y'}, task: {type: model_method, modelIdOrName: '', methodName: '', inputs: 'z'}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\ninputs: {a: {type: string}, type: 5}\njobs: [{name: m, steps: [{name: s, task: {type: model_method, modelIdOrName: a, methodName: b, inputs: '${{ inputs }}'}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\ninputs: {a: {type: string}, b: 5}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\ninputs: {type: array}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\ninputs: {}\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    # conditions, deep and wrong
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: s, task: {type: wait_for_signal, timeout: 5}}, {name: t, dependsOn: [{step: s, condition: {type: and, conditions: [{type: nope}, {type: not}, {type: or, conditions: []}, {type: not, condition: {type: always}, conditions: [{type: failed}, {type: failed}]}]}}], task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: t, dependsOn: [{step: s, condition: {type: and, conditions: [{type: failed}, {type: failed}], condition: {type: failed}}}, {step: s, condition: {type: or, conditions: {a: 1}}}, {step: s, condition: {type: not, condition: [1]}}, {step: s, condition: 'succeeded'}, {step: s}, {condition: {type: always}}, 5, [1]], task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, dependsOn: [{job: n, condition: {type: succeeded}}, {job: '', condition: {type: failed, conditions: [{type: failed}, {type: failed}]}}], steps: [{name: t, task: {type: wait_for_signal, timeout: 5}}]}, 7, [], {name: n, steps: [5, [], {}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: t, task: [1]}, {name: u, task: 'x'}, {name: v, task: {type: [1]}}, {name: w, task: {type: {a: 1}}}, {name: y, task: {}}, {name: z, task: {type: model_method, arguments: {}, inputs: {}}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: t, task: {type: model_method, modelIdOrName: a, methodName: b, arguments: {}, extra: 1}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: t, task: {type: model_method, modelIdOrName: a, methodName: b, arguments: {}}}], extra: 1}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\ntags: {a: 1, b: null, c: [1], d: ''}\njobs: [{name: m, steps: [{name: t, task: {type: wait_for_signal, timeout: 5}}]}]\n",
    "id: 10000000-0000-4000-8000-000000000001\nname: x\njobs: [{name: m, steps: [{name: t, task: {type: wait_for_signal, timeout: 5}}, {name: a1, task: {type: wait_for_signal, timeout: 5}}, {name: a2, task: {type: wait_for_signal, timeout: 5}}, {name: a3, task: {type: wait_for_signal, timeout: 5}}, {name: a4, task: {type: wait_for_signal, timeout: 5}}, {name: a5, task: {type: wait_for_signal, timeout: 5}}, {name: a6, task: {type: wait_for_signal, timeout: 5}}, {name: a7, task: {type: wait_for_signal, timeout: 5}}, {name: a8, task: {type: wait_for_signal, timeout: 5}}, {name: a9, task: {type: wait_for_signal, timeout: 5}}, {name: a10, task: {type: wait_for_signal, timeout: 'x'}, gaurd: 1}, {name: a11, task: {type: wait_for_signal, timeout: 'x'}}]}]\n",
]


def bases() -> list[tuple[str, str]]:
    import reliability_corpus as corpus
    from test_workflow_schema import TABLE, _scenario_workflows  # the same files that test reads

    found: list[tuple[str, str]] = [(f"table:{i}", t) for i, t, _ in TABLE]
    found += [(f"scenario:{n}", t) for n, t in _scenario_workflows()]
    for path in sorted((ROOT / "examples").rglob("workflows/*.yaml")):
        found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for case in corpus.load_cases():
        if case.kind == "workflow" and "text" in case.spec:
            found.append((f"corpus:{case.id}", corpus.workflow_text(case.spec, "corpus")))
    if len(sys.argv) > 1:
        for n, line in enumerate(Path(sys.argv[1]).read_text(encoding="utf-8").splitlines()):
            found.append((f"tests:{n}", dump_yaml(json.loads(line))))
    found += [(f"odd:{n}", t) for n, t in enumerate(ODDITIES)]
    seen: set[str] = set()
    unique = []
    for name, text in found:
        text = UUIDS.sub("10000000-0000-4000-8000-000000000001", text)
        if text not in seen:
            seen.add(text)
            unique.append((name, text))
    return unique


def judge(raw: Any) -> dict[str, Any]:
    try:
        workflow = parse_workflow(raw, SOURCE)
    except (TypeError, AttributeError) as exc:  # the pydantic-era reader crashed on these
        return {"crash": type(exc).__name__}
    except WorkflowInvalid as exc:
        problems = exc.details["problems"]
        assert str(exc).startswith(f"{SOURCE} is ")
        return {"problems": problems, "message": str(exc)}
    return {"dump": json.dumps(dump(workflow))}


def dump(workflow: Any) -> Any:
    if hasattr(workflow, "to_json"):
        return workflow.to_json()
    return workflow.model_dump(mode="json", by_alias=True, exclude_none=True)


def shape(value: Any, path: str = "") -> set[str]:
    """The generalized paths of a document: `jobs.*.steps.*.task.timeout`."""
    out = {path}
    if isinstance(value, dict):
        for key, item in value.items():
            if path.endswith(("tags", "inputs", "schema")) and path != "":
                continue
            out |= shape(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            out |= shape(item, f"{path}.*")
    return out


def nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((*path, key))
            out += nodes(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.append((*path, i))
            out += nodes(item, (*path, i))
    return out


def mutate(raw: Any, path: tuple[Any, ...], op: str, value: Any = None) -> Any:
    doc = copy.deepcopy(raw)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if op == "del":
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return doc


def main() -> None:
    docs = []
    for name, text in bases():
        try:
            raw = load_yaml(text)
        except YamlError:
            continue
        docs.append((name, text, raw))
    # bases for mutation: greedily, until every generalized path is held by two of them
    covered: dict[str, int] = {}
    chosen = []
    candidates = [d for d in docs if isinstance(d[2], dict)]
    while True:
        best, gain = None, 0
        for doc in candidates:
            g = sum(1 for p in shape(doc[2]) if covered.get(p, 0) < 2)
            if g > gain:
                best, gain = doc, g
        if best is None:
            break
        chosen.append(best)
        candidates.remove(best)
        for p in shape(best[2]):
            covered[p] = covered.get(p, 0) + 1
    strings: dict[str, int] = {}

    def compact(result: dict[str, Any], whole: bool) -> dict[str, Any]:
        if "problems" in result:
            result["problems"] = [strings.setdefault(p, len(strings)) for p in result["problems"]]
            result["message"] = strings.setdefault(result["message"], len(strings))
        if "dump" in result and not whole:  # a mutation's dump: its digest
            result["dump"] = hashlib.sha256(result["dump"].encode()).hexdigest()[:20]
        return result

    documents = [{"id": name, "yaml": text, **compact(judge(raw), True)} for name, text, raw in docs]
    index = {name: n for n, (name, _, _) in enumerate(docs)}
    mutations = []
    for name, _, raw in chosen:
        for path in nodes(raw):
            for op, value in [("del", None)] + [("set", v) for v in VALUES]:
                change = ["del"] if op == "del" else ["set", value]
                mutations.append(
                    [index[name], list(path), change, compact(judge(mutate(raw, path, op, value)), False)]
                )
    out = {"strings": list(strings), "documents": documents, "mutations": mutations}
    target = ROOT / "tests" / "corpus" / "workflow-models.json"
    lines = ['{"strings": [', ",\n".join(json.dumps(s) for s in out["strings"]), '],\n"documents": [']
    lines += [",\n".join(json.dumps(d) for d in out["documents"]), '],\n"mutations": [']
    lines += [",\n".join(json.dumps(m) for m in out["mutations"]), "]}\n"]
    target.write_text("\n".join(lines), encoding="utf-8")
    print(
        f"{len(docs)} documents, {len(chosen)} bases, {len(mutations)} mutations, {len(strings)} strings, "
        f"{target.stat().st_size} bytes"
    )


if __name__ == "__main__":
    main()
