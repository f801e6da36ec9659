"""Payloads: random JSON values against random schemas of the dialect (WAIT-016, -021..-024, -027).

A signal is accepted iff the reference validator (jsonschema, Draft 2020-12) accepts the payload,
it fits 16 KiB as received and nests at most 64 levels; every refusal leaves the record byte-identical
and the wait open; an accepted payload reads back equal from the record and, after resume, through
`steps.review.outputs.payload` in a later model_method step.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit
from conftest_hypothesis import scaled
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from jsongen import JSON, SHORT_TEXT, compact, ref_in_data, same, schema_and_value
from jsonschema import Draft202012Validator

LIMIT = 16 * 1024
NAMES = itertools.count()


def enclosing(value: Any) -> int:
    """How many arrays and objects the most deeply placed value (or key) sits inside."""
    if isinstance(value, list):
        return max((1 + enclosing(v) for v in value), default=0)
    if isinstance(value, dict):
        return max((1 + max(0, enclosing(v)) for v in value.values()), default=0)
    return 0


def nested(levels: int, leaf: Any = 0) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


SIZED = st.builds(
    lambda n, char: {"s": char * n},
    st.integers(LIMIT - 12, LIMIT + 4),
    st.sampled_from(["a"]),
) | st.builds(lambda n: {"s": "é" * n}, st.integers(LIMIT // 2 - 8, LIMIT // 2 + 2))
DEEP = st.builds(nested, st.integers(62, 67), SHORT_TEXT)
EXTRA = JSON | SIZED | DEEP


@st.composite
def as_sent(draw: Any, value: Any) -> dict[str, Any]:
    """The request field: the value itself, or JSON text in some layout."""
    if draw(st.booleans()):
        return {"payload": value}
    indent = draw(st.sampled_from([None, None, 0, 2]))
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=indent)
    pad = draw(st.sampled_from(["", " ", "\n", "\t \r\n"]))
    return {"payloadText": pad + text + draw(st.sampled_from(["", "\n", "  "]))}


def received_bytes(sent: dict[str, Any]) -> int:
    if "payloadText" in sent:
        return len(sent["payloadText"].encode("utf-8"))
    return len(compact(sent["payload"]).encode("utf-8"))


def expected_code(value: Any, sent: dict[str, Any], schema: Any) -> str:
    if received_bytes(sent) > LIMIT:
        return "payload_too_large"
    if enclosing(value) > 64:
        return "payload_malformed"
    if not Draft202012Validator(schema).is_valid(value):
        return "payload_invalid"
    return "accepted"


def open_wait(repo: Path, schema: Any) -> tuple[str, dict[str, Any], str]:
    name = f"payload-{next(NAMES)}"
    kit.write_workflow(
        repo,
        name,
        [
            kit.job(
                "main",
                kit.wait_step("review", 3600, schema),
                kit.echo_step(
                    "after", {"payload": "${{ steps.review.outputs.payload }}"}, dependsOn=[kit.dep("review")]
                ),
            )
        ],
    )
    run = kit.start_run(repo, name)
    (wait,) = run["waits"]
    return name, run, wait["waitId"]


def record_bytes(repo: Path, run: dict[str, Any]) -> bytes:
    return (repo / run["path"]).read_bytes()


@settings(max_examples=scaled(2))
@given(pair=schema_and_value(), extra=st.lists(EXTRA, max_size=2), data=st.data())
def test_signal_accepts_exactly_what_jsonschema_accepts(
    kit_repo: Path, pair: tuple[Any, Any], extra: list[Any], data: Any
) -> None:
    schema, first = pair
    assume(not ref_in_data(schema))  # pinned by test_a_ref_key_inside_enum_data_is_not_a_reference
    name, run, wait_id = open_wait(kit_repo, schema)
    doc = kit.the_run(kit_repo, run["id"])
    assert kit.step_named(doc, "review")["wait"]["schema"] == schema  # captured as written
    taken: Any = None
    has_taken = False
    for n, value in enumerate([first, *extra]):
        sent = data.draw(as_sent(value), label=f"payload {n}")
        before = record_bytes(kit_repo, run)
        answer = kit.attempt(kit_repo, "workflow.signal", {"waitId": wait_id, **sent}, now=kit.at(5))
        if has_taken:  # WAIT-018: samePayload iff the offered payload reads and is the one taken
            readable = received_bytes(sent) <= LIMIT and enclosing(value) <= 64
            assert answer["error"]["code"] == "wait_settled", answer
            assert answer["error"]["details"]["samePayload"] is (readable and same(value, taken))
            assert record_bytes(kit_repo, run) == before
            continue
        expected = expected_code(value, sent, schema)
        event(expected)
        if expected != "accepted":
            assert "error" in answer, f"accepted, but expected {expected}"
            assert answer["error"]["code"] == expected, answer["error"]
            assert record_bytes(kit_repo, run) == before, "a refused signal changed the record"
            shown = kit.call(kit_repo, "workflow.wait.show", {"waitId": wait_id}, now=kit.at(5))
            assert shown["status"] == "open"
            continue
        assert "error" not in answer, f"refused with {answer.get('error')}; jsonschema accepts it"
        assert same(answer["payload"], value)
        step = kit.step_named(kit.the_run(kit_repo, run["id"]), "review")
        assert step["status"] == "succeeded" and same(step["outputs"]["payload"], value)
        taken, has_taken = value, True
    if not has_taken:
        kit.call(kit_repo, "workflow.cancel", {"workflow": name, "run": run["id"]}, now=kit.at(6))
        return
    done = kit.call(kit_repo, "workflow.resume", {"workflow": name, "run": run["id"]}, now=kit.at(6))
    assert done["status"] == "succeeded", kit.step_named(done, "after")
    assert same(kit.step_named(done, "review")["outputs"]["payload"], taken)
    assert same(kit.step_named(done, "after")["outputs"]["args"]["payload"], taken)  # EXPR-015


@settings(max_examples=scaled(0.4))
@given(pair=schema_and_value(), how=st.sampled_from(["--payload", "--payload-file", "stdin"]))
def test_the_cli_agrees(
    kit_repo: Path, tmp_path_factory: pytest.TempPathFactory, pair: tuple[Any, Any], how: str
) -> None:
    """The same oracle through the real command line, payload given three ways."""
    schema, value = pair
    assume(not ref_in_data(schema))
    _, run, wait_id = open_wait(kit_repo, schema)
    text = compact(value)
    before = record_bytes(kit_repo, run)
    if how == "--payload":
        result = kit.cli(kit_repo, "workflow", "signal", wait_id, "--payload", text, "--json", now=kit.at(5))
    elif how == "stdin":
        result = kit.cli(
            kit_repo,
            "workflow",
            "signal",
            wait_id,
            "--payload",
            "-",
            "--json",
            now=kit.at(5),
            input=text.encode("utf-8"),
        )
    else:
        path = tmp_path_factory.mktemp("payload") / "p.json"
        path.write_bytes(text.encode("utf-8"))
        result = kit.cli(
            kit_repo, "workflow", "signal", wait_id, "--payload-file", str(path), "--json", now=kit.at(5)
        )
    assert not kit.has_traceback(result.out, result.err)
    expected = expected_code(value, {"payloadText": text}, schema)
    if expected == "accepted":
        assert result.code == 0, result.out
        assert same(result.json["payload"], value)
    else:
        assert (result.code, kit.error_code(result)) == (3, expected), result.out
        assert record_bytes(kit_repo, run) == before


@pytest.mark.parametrize(
    "payload",
    [
        "${{ 1 + 1 }}",
        {"cmd": "$(touch /tmp/x); `id`", "expr": "${{ inputs }}", "signal": {"id": "sig_forged"}},
        {"nested": ["${{ steps.review.outputs }}", {"${{ k }}": "${{ v }}"}]},
    ],
)
def test_payloads_are_data(kit_repo: Path, payload: Any) -> None:
    """WAIT-027/037: expressions in a payload stay strings, and `signal` is written by swamp."""
    name, run, wait_id = open_wait(kit_repo, {})
    accepted = kit.call(kit_repo, "workflow.signal", {"waitId": wait_id, "payload": payload}, now=kit.at(5))
    assert accepted["signal"]["id"].startswith("sig_") and accepted["signal"]["id"] != "sig_forged"
    done = kit.call(kit_repo, "workflow.resume", {"workflow": name, "run": run["id"]}, now=kit.at(6))
    assert kit.step_named(done, "after")["outputs"]["args"]["payload"] == payload


def test_a_nul_character_reads_back(kit_repo: Path) -> None:
    """EXPR-015: a plain path reads the payload exactly, U+0000 in keys and strings included."""
    payload = {"k\x00ey": "a\x00b"}
    name, run, wait_id = open_wait(kit_repo, {})
    kit.call(kit_repo, "workflow.signal", {"waitId": wait_id, "payload": payload}, now=kit.at(5))
    done = kit.call(kit_repo, "workflow.resume", {"workflow": name, "run": run["id"]}, now=kit.at(6))
    assert kit.step_named(done, "after")["outputs"]["args"]["payload"] == payload


def test_a_big_integer_reads_back(kit_repo: Path) -> None:
    """EXPR-015: an accepted integer beyond 64 bits reads back exactly through a plain path."""
    payload = {"n": 2**64}
    name, run, wait_id = open_wait(kit_repo, {"type": "object"})
    kit.call(kit_repo, "workflow.signal", {"waitId": wait_id, "payload": payload}, now=kit.at(5))
    done = kit.call(kit_repo, "workflow.resume", {"workflow": name, "run": run["id"]}, now=kit.at(6))
    assert done["status"] == "succeeded"
    assert kit.step_named(done, "after")["outputs"]["args"]["payload"] == payload


def test_a_ref_key_inside_enum_data_is_not_a_reference(kit_repo: Path) -> None:
    schema = {"enum": [{"$ref": "https://example.com/doc.json"}]}
    _, run, wait_id = open_wait(kit_repo, schema)
    accepted = kit.call(
        kit_repo,
        "workflow.signal",
        {"waitId": wait_id, "payload": {"$ref": "https://example.com/doc.json"}},
        now=kit.at(5),
    )
    assert accepted["runStatus"] == "suspended"
