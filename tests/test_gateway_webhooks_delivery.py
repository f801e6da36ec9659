"""Webhook delivery IDs (GATEWAY-079..085, WAIT-086..089): how a route finds a delivery's ID, how
the gateway tells a replay from another delivery, and, in process against a real repository, that
the store (not the gateway's memory) decides: a new gateway answers a replay with the first receipt.
Signed with GitHub's published X-Hub-Signature-256 test vector secret."""

from __future__ import annotations

import hashlib
import hmac
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, job

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # Starlette's notice that its TestClient will move to httpx2
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from swamp.domain.errors import ExpressionError, InvalidRequest, SettingsInvalid, SwampError  # noqa: E402
from swamp.domain.waits import check_delivery_id  # noqa: E402
from swamp.domain.webhook_routes import load_routes  # noqa: E402
from swamp.gateway.webhooks import _replayed, signature_problem  # noqa: E402

# GitHub, "Validating webhook deliveries": the documented example.
GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"  # GitHub's example X-GitHub-Delivery
ENV = {"S": GITHUB_SECRET}


def route(tmp_path: Path, **raw: Any) -> Any:
    base = {"verify": "github", "secret": {"env": "S"}, "wait": "${{ body.w }}"}
    if raw.get("verify") == "hmac-sha256":
        base["header"] = "X-Signature"
    return load_routes({"r": {**base, **raw}}, str(tmp_path), ENV)["r"]


def test_github_names_the_delivery_by_its_header_once_the_signature_holds(tmp_path: Path):
    github = route(tmp_path)
    headers = {"x-hub-signature-256": GITHUB_SIGNATURE, "x-github-delivery": DELIVERY}
    assert signature_problem(github, GITHUB_BODY, headers) is None
    assert github.delivery_id(None, headers) == DELIVERY
    assert github.delivery_id(None, {}) is None  # no header: no ID, the payload decides


def test_slack_names_an_events_api_delivery_by_its_event_id(tmp_path: Path):
    slack = route(tmp_path, verify="slack")
    assert slack.delivery_id({"type": "event_callback", "event_id": "Ev08MFMKH6"}, {}) == "Ev08MFMKH6"
    assert slack.delivery_id({"payload": {"type": "block_actions"}}, {}) is None  # an interaction
    assert slack.delivery_id(None, {}) is None


def test_hmac_has_none_unless_the_route_names_one(tmp_path: Path):
    assert route(tmp_path, verify="hmac-sha256").delivery_id({"id": "x"}, {"x-github-delivery": "y"}) is None
    named = route(tmp_path, verify="hmac-sha256", delivery="${{ body.id }}")
    assert named.delivery_id({"id": "scan-7"}, {}) == "scan-7"
    assert named.delivery_id({"id": 42}, {}) == "42"  # an integer is its digits
    assert named.delivery_id({"id": ""}, {}) is None
    assert named.delivery_id({"id": None}, {}) is None
    off = route(tmp_path, delivery=False)  # github, told to use none
    assert off.delivery_id(None, {"x-github-delivery": DELIVERY}) is None


@pytest.mark.parametrize("given", ["has space", "x" * 129, True, 1.5, ["a"], {"a": 1}, "é"])
def test_a_delivery_id_that_is_not_one_is_an_expression_error(tmp_path: Path, given: Any):
    named = route(tmp_path, delivery="${{ body.id }}")
    with pytest.raises(ExpressionError) as caught:
        named.delivery_id({"id": given}, {})
    assert caught.value.details == {"route": "r", "key": "delivery"}
    with pytest.raises(InvalidRequest):
        check_delivery_id(given)


def test_check_delivery_id_takes_its_whole_alphabet_up_to_128():
    for good in ["a", "x" * 128, "ev:9/A+b=c@d_e.f-0", DELIVERY]:
        assert check_delivery_id(good) == good
    assert check_delivery_id(None) is None
    for bad in ["", "a b", "a\n", "a;b", "x" * 129]:
        with pytest.raises(InvalidRequest):
            check_delivery_id(bad)


@pytest.mark.parametrize("given", [3, "", "   ", True, ["${{ body.id }}"]])
def test_a_delivery_setting_is_an_expression_or_false(tmp_path: Path, given: Any):
    with pytest.raises(SettingsInvalid) as caught:
        route(tmp_path, delivery=given)
    assert caught.value.details["key"] == "gateway.routes.r.delivery"


def test_a_delivery_expression_must_compile_at_start(tmp_path: Path):
    with pytest.raises(SettingsInvalid, match="does not compile") as caught:
        route(tmp_path, delivery="${{ inputs.id }}")
    assert caught.value.details["key"] == "gateway.routes.r.delivery"


def settled(**details: Any) -> SwampError:
    error = SwampError("settled", {"waitId": "wait_x", "receipt": {"id": "sig_1"}, **details})
    error.code = "wait_settled"
    return error


@pytest.mark.parametrize(
    "details, delivery, replay",
    [
        ({"samePayload": True, "sameDelivery": True}, "d1", True),
        ({"samePayload": False, "sameDelivery": True}, "d1", True),  # the ID decides, not the payload
        ({"samePayload": True, "sameDelivery": False}, "d2", False),  # another delivery, same payload
        ({"samePayload": True}, None, True),  # no ID: the payload decides (GATEWAY-079)
        ({"samePayload": False}, None, False),
    ],
)
def test_a_replay_is_what_the_store_says(details: dict[str, Any], delivery: str | None, replay: bool):
    assert (_replayed(settled(**details), delivery) is not None) is replay


SCHEMA = {"type": "object", "required": ["passed"], "properties": {"passed": {"type": "boolean"}}}
SETTINGS = """version: 1
gateway:
  routes:
    ci:
      verify: github
      secret: {env: DELIVERY_TEST_SECRET}
      wait: "${{ headers['x-swamp-wait'] }}"
      payload: {passed: "${{ body.conclusion == 'success' }}"}
"""


def client(repo: Repo) -> TestClient:
    from swamp.gateway.app import build_app
    from swamp.gateway.inward import Gateway
    from swamp.gateway.server import AccessLog

    return TestClient(AccessLog(build_app(Gateway(repo_dir=str(repo.root)))))


def deliver(http: TestClient, wait_id: str, body: dict[str, Any], delivery: str) -> Any:
    raw = json.dumps(body).encode()
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature,
        "X-GitHub-Delivery": delivery,
        "X-Swamp-Wait": wait_id,
    }
    return http.post("/hooks/ci", content=raw, headers=headers)


def test_the_store_remembers_a_delivery_across_gateways(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("DELIVERY_TEST_SECRET", GITHUB_SECRET)
    (repo.root / ".swamp.yaml").write_text(SETTINGS)
    step = {"name": "checks", "task": {"type": "wait_for_signal", "timeout": 3600, "schema": SCHEMA}}
    repo.write_workflow("hooked", [job("main", step)])
    run = repo.swamp("workflow", "run", "hooked", "--json").json
    wait_id = run["waits"][0]["waitId"]

    first = deliver(client(repo), wait_id, {"conclusion": "success"}, DELIVERY)
    assert first.status_code == 200, first.text
    receipt = first.json()["signal"]
    assert receipt["deliveryId"] == DELIVERY and first.json()["replayed"] is False

    # Another gateway (a restart, or a second one on the store): its memory is empty.
    again = deliver(client(repo), wait_id, {"conclusion": "failure"}, DELIVERY)
    assert again.status_code == 200, again.text
    assert again.json() == {"route": "ci", "replayed": True, "waitId": wait_id, "signal": receipt}
    other = deliver(client(repo), wait_id, {"conclusion": "success"}, "d-other")
    assert other.status_code == 409
    assert other.json()["error"]["details"]["sameDelivery"] is False

    history = repo.swamp("workflow", "history", "get", run["id"], "--json").json
    assert history["jobs"][0]["steps"][0]["outputs"]["payload"] == {"passed": True}
    accepted = [entry for entry in history["audit"] if entry.get("code") == "accepted"]
    assert len(accepted) == 1  # signalled once, whatever was delivered after
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    hooks = [entry for entry in logged if entry.get("path") == "/hooks/ci"]
    assert [(e["code"], e["deliveryId"]) for e in hooks] == [
        ("accepted", DELIVERY),
        ("replayed", DELIVERY),
        ("wait_settled", "d-other"),
    ]
    assert list(hooks[0])[-2:] == ["code", "deliveryId"]
