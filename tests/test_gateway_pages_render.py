"""The answer pages rendered against fixed core documents (a stand-in for the request table): what
each page shows, its headers, escaping, and the form token. The same pages against a real gateway
process and store are in test_gateway_pages.py."""

from __future__ import annotations

import copy
import re
import warnings
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.applications import Starlette  # noqa: E402

with warnings.catch_warnings():  # Starlette's notice that its TestClient will move to httpx2
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from swamp.domain.errors import SwampError  # noqa: E402
from swamp.gateway import pages  # noqa: E402

TOKEN = "swtok_" + "a" * 43
WAIT_ID = "wait_" + "b" * 26
LINK: dict[str, Any] = {
    "permission": {
        "id": "perm_1",
        "grantedBy": "alice",
        "grantedAt": "2026-12-03T12:00:00Z",
        "uses": 1,
        "usesLeft": 1,
        "state": "live",
        "waitId": WAIT_ID,
        "runId": "run-1",
    },
    "wait": {
        "waitId": WAIT_ID,
        "workflowName": "release",
        "runId": "run-1",
        "jobName": "release",
        "stepName": "review",
        "openedAt": "2026-12-03T12:00:00Z",
        "deadline": "2026-12-04T12:00:00Z",
        "secondsLeft": 86400 - 125,
        "expired": False,
        "status": "open",
        "description": "Verdict on release 1.4.0",
        "schema": {
            "type": "object",
            "required": ["verdict"],
            "properties": {
                "verdict": {"type": "string", "enum": ["ship", "fix", "abandon"]},
                "note": {"type": "string"},
            },
        },
    },
}
RECEIPT = {
    "id": "sig_1",
    "waitId": WAIT_ID,
    "receivedAt": "2026-12-03T12:05:00Z",
    "submittedBy": "gateway",
    "permissionId": "perm_1",
    "grantedBy": "alice",
}


class FakeGateway:
    """Answers the two requests the pages make from fixed documents."""

    resume = True

    def __init__(self, link: dict[str, Any]) -> None:
        from swamp.gateway.limits import Limits

        self.limits = Limits.make(1000.0)
        self.link = link
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def ask(self, request_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((request_type, payload))
        if request_type == "workflow.link.show":
            if payload["token"] != TOKEN:
                raise SwampError("unknown", {"reason": "unknown"}, code="permission_invalid")
            return copy.deepcopy(self.link)
        payload_value = payload["payload"]
        if payload_value.get("verdict") not in ("ship", "fix", "abandon"):
            raise SwampError(
                "does not match",
                {"errors": [{"pointer": "/verdict", "message": "'verdict' is a required property"}]},
                code="payload_invalid",
            )
        if payload.get("check"):
            return {"waitId": WAIT_ID, "valid": True}
        self.link["wait"].update(status="signaled", receipt=RECEIPT, payload=payload_value)
        self.link["permission"].update(state="used_up", usesLeft=0)
        run = {"status": "succeeded"}
        return {"signal": RECEIPT, "payload": payload_value, "continued": True, "run": run}


def client(link: dict[str, Any] = LINK) -> tuple[TestClient, FakeGateway]:
    gateway = FakeGateway(copy.deepcopy(link))
    app = Starlette(routes=pages.routes(gateway))  # type: ignore[arg-type]
    return TestClient(app), gateway


def csrf(html: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', html)
    assert found, html
    return found.group(1)


def test_the_page_shows_the_wait_and_its_form() -> None:
    web, _ = client()
    page = web.get(f"/a/{TOKEN}")
    assert page.status_code == 200
    html = page.text
    for text in ("release", "review", "run-1", "Verdict on release 1.4.0", "2026-12-04 12:00 UTC"):
        assert text in html
    assert "in 23 hours 57 minutes" in html
    assert html.count('type="radio"') == 3 and 'name="$/note"' in html
    assert '<meta name="viewport"' in html and "<script" not in html
    for label_for in re.findall(r'<label[^>]* for="([^"]+)"', html):
        assert f'id="{label_for}"' in html
    headers = page.headers
    assert headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert "script-src" not in headers["content-security-policy"]
    assert "default-src 'none'" in headers["content-security-policy"]


def test_a_wrong_answer_comes_back_with_the_error_beside_its_field_and_the_typed_text_kept() -> None:
    web, _ = client()
    token = csrf(web.get(f"/a/{TOKEN}").text)
    page = web.post(f"/a/{TOKEN}", data={"_csrf": token, "$/note": "typed <i>text</i>"})
    assert page.status_code == 422
    block = page.text.split('data-field="$/verdict"')[1].split("</fieldset>")[0]
    assert "is a required property" in block
    assert "typed &lt;i&gt;text&lt;/i&gt;</textarea>" in page.text


def test_a_right_answer_shows_the_receipt_and_a_second_post_shows_what_happened() -> None:
    web, gateway = client()
    token = csrf(web.get(f"/a/{TOKEN}").text)
    page = web.post(f"/a/{TOKEN}", data={"_csrf": token, "$/verdict": "ship", "$/note": ""})
    assert page.status_code == 200
    assert "Answer received" in page.text and "sig_1" in page.text
    assert "The run continued; it is now succeeded." in page.text
    sent = gateway.asked[-1][1]
    assert sent == {"waitId": WAIT_ID, "token": TOKEN, "payload": {"verdict": "ship"}, "resume": True}
    again = web.post(f"/a/{TOKEN}", data={"_csrf": token, "$/verdict": "fix"})
    assert again.status_code == 409
    assert "Already answered" in again.text and "sig_1" in again.text and "<form" not in again.text
    assert gateway.asked[-1][0] == "workflow.link.show"  # nothing sent the second time
    assert web.get(f"/a/{TOKEN}").status_code == 409


def test_a_post_without_the_form_token_of_its_link_sends_nothing() -> None:
    web, gateway = client()
    for data in ({"$/verdict": "ship"}, {"$/verdict": "ship", "_csrf": "0" * 64}):
        page = web.post(f"/a/{TOKEN}", data=data)
        assert page.status_code == 403
        assert "out of date" in page.text and 'value="ship" checked' in page.text
    assert [kind for kind, _ in gateway.asked] == ["workflow.link.show"] * 2


def test_a_hostile_description_and_title_are_printed_as_text() -> None:
    hostile = copy.deepcopy(LINK)
    hostile["wait"]["description"] = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    hostile["wait"]["workflowName"] = "</title><script>alert(3)</script>"
    hostile["wait"]["schema"]["properties"]["verdict"]["title"] = '"><script>alert(4)</script>'
    hostile["wait"]["schema"]["properties"]["verdict"]["enum"] = ['x" onclick="alert(5)', "ok"]
    html = client(hostile)[0].get(f"/a/{TOKEN}").text
    assert "<script" not in html and "<img" not in html and 'onclick="' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_unknown_link_is_a_page_that_says_so() -> None:
    page = client()[0].get("/a/swtok_nope")
    assert page.status_code == 404 and "not valid" in page.text
    assert page.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("permission", "wait", "status", "headline"),
    [
        ({"state": "revoked", "revokedBy": "bob", "revokedAt": "2026-12-03T13:00:00Z"}, {}, 403, "revoked"),
        ({"state": "expired", "expiresAt": "2026-12-03T13:00:00Z"}, {}, 410, "has expired"),
        ({}, {"status": "expired", "expired": True, "secondsLeft": -60}, 410, "deadline has passed"),
        ({"state": "ended"}, {"status": "cancelled"}, 409, "closed"),
    ],
)
def test_a_closed_link_says_what_happened_and_shows_no_form(
    permission: dict[str, Any], wait: dict[str, Any], status: int, headline: str
) -> None:
    link = copy.deepcopy(LINK)
    link["permission"].update(permission)
    link["wait"].update(wait)
    page = client(link)[0].get(f"/a/{TOKEN}")
    assert page.status_code == status
    assert headline in page.text and "<form" not in page.text


def test_relative_deadlines() -> None:
    assert pages.relative(3725) == "in 1 hour 2 minutes"
    assert pages.relative(-90) == "1 minute 30 seconds ago"
    assert pages.relative(86400 * 2) == "in 2 days"
    assert pages.relative(0) == "in 0 seconds"
