"""Webhook routes (GATEWAY-070..089), in process: signatures against the providers' published test
vectors, the routes' settings, and the expressions that find a wait and build its payload.
The real gateway process is tests/test_gateway_webhooks_e2e.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swamp.domain.errors import SettingsInvalid
from swamp.domain.settings import parse_settings
from swamp.domain.webhook_routes import load_routes
from swamp.gateway.signatures import slack_problem, verify_github, verify_hmac_sha256

# GitHub, "Validating webhook deliveries": the documented example.
GITHUB_SECRET = b"It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

# Slack, "Verifying requests from Slack": the documented example (a slash command's form body).
SLACK_SECRET = b"8f742231b10e8888abcd99yyyzzz85a5"
SLACK_TIMESTAMP = "1531420618"
SLACK_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
SLACK_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_github_documented_example_verifies():
    assert verify_github(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE)
    assert verify_github(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE.upper().replace("SHA256=", "sha256="))


@pytest.mark.parametrize(
    "secret, body, signature",
    [
        (b"It's a secret to everybody", GITHUB_BODY, GITHUB_SIGNATURE),  # another secret
        (GITHUB_SECRET, b"Hello, World?", GITHUB_SIGNATURE),  # another body
        (GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE[:-1] + "f"),  # one hex digit off
        (GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE.removeprefix("sha256=")),  # no scheme
        (GITHUB_SECRET, GITHUB_BODY, "sha1=" + GITHUB_SIGNATURE[7:]),  # another scheme
        (GITHUB_SECRET, GITHUB_BODY, ""),
        (GITHUB_SECRET, GITHUB_BODY, None),
        (GITHUB_SECRET, GITHUB_BODY, "sha256=é"),  # not ASCII: refused, not an exception
    ],
)
def test_github_refuses_anything_else(secret: bytes, body: bytes, signature: str | None):
    assert not verify_github(secret, body, signature)


def test_slack_documented_example_verifies_within_its_window():
    now = int(SLACK_TIMESTAMP)
    assert slack_problem(SLACK_SECRET, SLACK_BODY, SLACK_SIGNATURE, SLACK_TIMESTAMP, now) is None
    assert slack_problem(SLACK_SECRET, SLACK_BODY, SLACK_SIGNATURE, SLACK_TIMESTAMP, now + 300) is None
    assert slack_problem(SLACK_SECRET, SLACK_BODY, SLACK_SIGNATURE, SLACK_TIMESTAMP, now - 300) is None


@pytest.mark.parametrize("skew", [301, -301, 86400])
def test_slack_refuses_a_timestamp_more_than_five_minutes_away(skew: int):
    problem = slack_problem(
        SLACK_SECRET, SLACK_BODY, SLACK_SIGNATURE, SLACK_TIMESTAMP, int(SLACK_TIMESTAMP) + skew
    )
    assert problem is not None and "300 seconds" in problem


@pytest.mark.parametrize(
    "body, signature, timestamp",
    [
        (SLACK_BODY + b"x", SLACK_SIGNATURE, SLACK_TIMESTAMP),
        (SLACK_BODY, SLACK_SIGNATURE, str(int(SLACK_TIMESTAMP) + 1)),  # the timestamp is signed too
        (SLACK_BODY, SLACK_SIGNATURE.replace("v0=", "v1="), SLACK_TIMESTAMP),
        (SLACK_BODY, None, SLACK_TIMESTAMP),
        (SLACK_BODY, SLACK_SIGNATURE, None),
        (SLACK_BODY, SLACK_SIGNATURE, "1531420618.5"),
    ],
)
def test_slack_refuses_a_wrong_signature(body: bytes, signature: str | None, timestamp: str | None):
    assert slack_problem(SLACK_SECRET, body, signature, timestamp, int(SLACK_TIMESTAMP)) is not None


def test_hmac_sha256_with_and_without_a_prefix():
    hex_part = GITHUB_SIGNATURE.removeprefix("sha256=")
    assert verify_hmac_sha256(GITHUB_SECRET, GITHUB_BODY, hex_part)
    assert verify_hmac_sha256(GITHUB_SECRET, GITHUB_BODY, "hmac " + hex_part, "hmac ")
    assert not verify_hmac_sha256(GITHUB_SECRET, GITHUB_BODY, hex_part, "hmac ")
    assert not verify_hmac_sha256(GITHUB_SECRET, GITHUB_BODY, None)


# -- the routes' settings ----------------------------------------------------------------------

GOOD = {
    "verify": "github",
    "secret": {"env": "HOOK_SECRET"},
    "wait": "${{ body.client_payload.waitId }}",
    "payload": {
        "passed": "${{ body.client_payload.conclusion == 'success' }}",
        "by": "${{ body.sender.login }}",
    },
}


def refusal(routes: Any) -> SettingsInvalid:
    with pytest.raises(SettingsInvalid) as caught:
        parse_settings({"version": 1, "gateway": {"routes": routes}})
    return caught.value


def test_a_good_route_is_kept_as_written_and_survives_the_settings_copy():
    settings = parse_settings({"version": 1, "gateway": {"routes": {"ci": GOOD}}})
    assert settings.gateway_routes == {"ci": GOOD}
    from swamp.store.settings import settings_document

    assert parse_settings(settings_document(settings)) == settings


@pytest.mark.parametrize(
    "change, key, words",
    [
        ({"secret": "hunter2"}, "gateway.routes.ci.secret", "written in the repository"),
        ({"secret": {"value": "x"}}, "gateway.routes.ci.secret", "secret: {env: NAME}"),
        ({"secret": {"env": ""}}, "gateway.routes.ci.secret", "names no variable"),
        ({"verify": "gitlab"}, "gateway.routes.ci.verify", "github, slack, hmac-sha256"),
        ({"verfy": "github"}, "gateway.routes.ci.verfy", "did you mean verify"),
        ({"header": "X-Sig"}, "gateway.routes.ci.header", "only for `verify: hmac-sha256`"),
        ({"verify": "hmac-sha256"}, "gateway.routes.ci.header", "name the header"),
        ({"run": "${{ body.run }}"}, "gateway.routes.ci", "`run` and `step`"),
        ({"resume": "yes"}, "gateway.routes.ci.resume", "true or false"),
        ({"wait": 12}, "gateway.routes.ci.wait", "must be a string"),
    ],
)
def test_a_bad_route_is_refused_naming_its_key_and_the_fix(change: dict[str, Any], key: str, words: str):
    error = refusal({"ci": {**GOOD, **change}})
    assert error.code == "settings_invalid"
    assert error.details["key"] == key
    assert words in str(error)


def test_a_route_needs_a_wait_or_a_run_and_step_and_a_usable_name():
    without = {k: v for k, v in GOOD.items() if k != "wait"}
    assert "`run` and `step`" in str(refusal({"ci": without}))
    by_run = {**without, "run": "r", "step": "s"}
    assert parse_settings({"gateway": {"routes": {"ci": by_run}}}).gateway_routes
    assert "route name" in str(refusal({"a/b": GOOD}))
    assert "mapping" in str(refusal([GOOD]))
    with pytest.raises(SettingsInvalid, match="gateway has publicUrl, routes"):
        parse_settings({"gateway": {"route": {}}})


def test_load_routes_compiles_expressions_and_reads_the_secret(tmp_path: Path):
    routes = load_routes({"ci": GOOD}, str(tmp_path), {"HOOK_SECRET": "s3"})
    route = routes["ci"]
    assert route.secret == b"s3" and "s3" not in repr(route)
    body = {"client_payload": {"waitId": "wait_abcd", "conclusion": "success"}, "sender": {"login": "octo"}}
    assert route.address(body, {}) == {"waitId": "wait_abcd"}
    assert route.build_payload(body, {}) == {"passed": True, "by": "octo"}


def test_load_routes_refuses_a_route_that_cannot_work(tmp_path: Path):
    with pytest.raises(SettingsInvalid, match="HOOK_SECRET, which is not set") as caught:
        load_routes({"ci": GOOD}, str(tmp_path), {})
    assert caught.value.details["key"] == "gateway.routes.ci.secret"
    with pytest.raises(SettingsInvalid, match="does not compile") as caught:
        load_routes(
            {"ci": {**GOOD, "payload": {"x": "${{ inputs.x }}"}}}, str(tmp_path), {"HOOK_SECRET": "s"}
        )
    assert caught.value.details["key"] == "gateway.routes.ci.payload.x"
    with pytest.raises(SettingsInvalid, match="cannot be read"):
        load_routes({"ci": {**GOOD, "secret": {"file": "missing"}}}, str(tmp_path), {})
    (tmp_path / "hook.secret").write_text("from-a-file\n")
    route = load_routes({"ci": {**GOOD, "secret": {"file": "hook.secret"}}}, str(tmp_path), {})["ci"]
    assert route.secret == b"from-a-file"


def test_expressions_see_headers_and_run_and_step(tmp_path: Path):
    raw = {
        "verify": "slack",
        "secret": {"env": "S"},
        "run": "${{ headers['x-run'] }}",
        "step": "review",
        "payload": "${{ body.payload.actions[0].value == 'approve' }}",
    }
    route = load_routes({"slack": raw}, str(tmp_path), {"S": "x"})["slack"]
    body = {"payload": {"actions": [{"value": "approve"}]}}
    assert route.address(body, {"x-run": "3f2a"}) == {"run": "3f2a", "step": "review"}
    assert route.build_payload(body, {}) is True


def test_an_expression_that_finds_no_wait_says_so(tmp_path: Path):
    from swamp.domain.errors import ExpressionError

    route = load_routes({"ci": GOOD}, str(tmp_path), {"HOOK_SECRET": "s"})["ci"]
    with pytest.raises(ExpressionError):
        route.address({"client_payload": {}}, {})
    with pytest.raises(ExpressionError, match="not a wait ID"):
        route.address({"client_payload": {"waitId": 7}}, {})


def test_form_bodies_are_fields_and_a_json_payload_field_is_parsed():
    from swamp.gateway.webhooks import parse_body

    form = "application/x-www-form-urlencoded"
    assert parse_body(SLACK_BODY, form)["command"] == "/webhook-collect"
    assert parse_body(b"payload=%7B%22a%22%3A1%7D", form) == {"payload": {"a": 1}}
    assert parse_body(b'{"a": 1}', "application/json") == {"a": 1}
    assert parse_body(b"", "application/json") is None


@pytest.mark.parametrize("source", ["${{ env.HOOK_SECRET }}", "${{ inputs.x }}", "${{ steps.a.outputs }}"])
def test_a_route_sees_nothing_but_body_and_headers(tmp_path: Path, source: str):
    """Not the gateway's environment (where the secrets are), nor a run's context."""
    with pytest.raises(SettingsInvalid, match="does not compile"):
        load_routes({"ci": {**GOOD, "wait": source}}, str(tmp_path), {"HOOK_SECRET": "s"})
