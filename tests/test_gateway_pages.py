"""The answer pages against a real `swamp gateway` process on a loopback port and a real store
(GATEWAY-020..049): links granted with `swamp workflow wait grant --uses 1`, pages fetched and forms
posted over HTTP, what was delivered checked with the CLI."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, Repo, clean_env, job, make_repo

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

pytestmark = pytest.mark.cli

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "count"],
    "properties": {
        "verdict": {"type": "string", "enum": ["ship", "fix"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "extra": {"type": "array", "items": {"type": "object"}},
    },
}


@pytest.fixture
def gateway_of() -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start(repo: Repo, env: dict[str, str] | None = None, *args: str) -> str:
        proc = subprocess.Popen(
            [str(SWAMP), "gateway", "--listen", "127.0.0.1:0", "--repo-dir", str(repo.root), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=clean_env(env),
        )
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the gateway ended before saying where it listens"
        return str(json.loads(line)["listening"])

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


def waiting(repo: Repo, description: str = "Ship it?", schema: Any = SCHEMA) -> tuple[str, str]:
    """A run of one wait, then a step after it: (run ID, wait ID)."""
    wait = {"type": "wait_for_signal", "timeout": 3600, "description": description, "schema": schema}
    after = {
        "name": "after",
        "task": {
            "type": "model_method",
            "modelIdOrName": "sh",
            "methodName": "execute",
            "inputs": {"run": "true"},
        },
    }
    repo.write_workflow("ask", [job("main", {"name": "ask", "task": wait}, after)])
    run = repo.swamp("workflow", "run", "ask", "--json").json
    return run["id"], run["waits"][0]["waitId"]


def grant(repo: Repo, wait_id: str, *extra: str) -> tuple[str, str]:
    granted = repo.swamp("workflow", "wait", "grant", wait_id, "--uses", "1", *extra, "--json").json
    return granted["permission"]["token"], granted["permission"]["id"]


def csrf(html: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', html)
    assert found, html
    return found.group(1)


def field_block(html: str, name: str) -> str:
    """The markup of one field (its control and the errors beside it), unescaped."""
    start = html.index(f'data-field="{name}"')
    end = html.index("</fieldset>" if "<legend" in html[start : start + 200] else "</div>", start)
    return unescape(html[start:end])


def wait_doc(repo: Repo, wait_id: str) -> dict[str, Any]:
    return repo.swamp("workflow", "wait", "show", wait_id, "--json").json


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


def test_the_page_of_a_live_link_shows_the_wait_and_its_form(repo: Repo, gateway_of: Any) -> None:
    run_id, wait_id = waiting(repo)
    token, _ = grant(repo, wait_id)
    page = httpx.get(f"{gateway_of(repo)}/a/{token}")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for text in ("ask", run_id, "Ship it?", 'name="$/verdict"', 'type="number"', 'min="1"', 'max="9"'):
        assert text in page.text
    assert re.search(r"\(in (59|60) minutes", page.text)
    assert "<script" not in page.text and '<meta name="viewport"' in page.text
    for control_id in re.findall(r'<(?:input|textarea|select)[^>]* id="([^"]+)"', page.text):
        assert f'for="{control_id}"' in page.text  # a label for every control
    assert token not in page.text  # the page never prints the token it was opened with
    headers = page.headers
    assert headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script" not in csp
    css = httpx.get(f"{gateway_of(repo)}/static/answer.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_a_wrong_answer_is_refused_beside_its_field_and_nothing_is_delivered(
    repo: Repo, gateway_of: Any
) -> None:
    _, wait_id = waiting(repo)
    token, _ = grant(repo, wait_id)
    url = f"{gateway_of(repo)}/a/{token}"
    form = {"_csrf": csrf(httpx.get(url).text), "$/verdict": "ship", "$/count": "12", "$/extra": "[{"}
    page = httpx.post(url, data=form)
    assert page.status_code == 422
    assert "12 is greater than the maximum of 9" in field_block(page.text, "$/count")
    assert "This is not JSON" in field_block(page.text, "$/extra")
    assert 'value="12"' in page.text and ">[{</textarea>" in page.text and 'value="ship" checked' in page.text
    form["$/extra"] = ""
    page = httpx.post(url, data={**form, "$/count": "many"})
    assert page.status_code == 422 and "is not of type 'integer'" in field_block(page.text, "$/count")
    doc = wait_doc(repo, wait_id)
    assert doc["status"] == "open" and doc["permissions"][0]["usesLeft"] == 1


def test_a_right_answer_is_delivered_once_with_the_token_and_the_run_continues(
    repo: Repo, gateway_of: Any
) -> None:
    run_id, wait_id = waiting(repo)
    token, permission_id = grant(repo, wait_id)
    url = f"{gateway_of(repo)}/a/{token}"
    form = {"_csrf": csrf(httpx.get(url).text), "$/verdict": "fix", "$/count": "3", "$/extra": ""}
    page = httpx.post(url, data=form)
    assert page.status_code == 200, page.text
    doc = wait_doc(repo, wait_id)
    assert doc["receipt"]["permissionId"] == permission_id
    assert doc["payload"] == {"verdict": "fix", "count": 3}
    assert doc["receipt"]["id"] in page.text and "Answer received" in page.text
    assert "&#34;count&#34;: 3" in page.text or '"count": 3' in page.text
    assert "The run continued; it is now succeeded." in page.text
    run = repo.swamp("workflow", "history", "get", run_id, "--json").json
    assert run["status"] == "succeeded"

    for again in (httpx.post(url, data={**form, "$/verdict": "ship"}), httpx.get(url)):
        assert again.status_code == 409
        assert "Already answered" in again.text and doc["receipt"]["id"] in again.text
        assert "<form" not in again.text
    assert wait_doc(repo, wait_id)["receipt"] == doc["receipt"]


def test_a_post_without_the_links_form_token_delivers_nothing(repo: Repo, gateway_of: Any) -> None:
    _, wait_id = waiting(repo)
    token, _ = grant(repo, wait_id)
    other_token, _ = grant(repo, wait_id)
    gateway = gateway_of(repo)
    borrowed = csrf(httpx.get(f"{gateway}/a/{other_token}").text)  # another link's form token
    for sent in ({}, {"_csrf": "0" * 64}, {"_csrf": borrowed}):
        page = httpx.post(f"{gateway}/a/{token}", data={**sent, "$/verdict": "ship", "$/count": "2"})
        assert page.status_code == 403
        assert "out of date" in page.text and 'value="ship" checked' in page.text
    assert wait_doc(repo, wait_id)["status"] == "open"
    restarted = gateway_of(repo)  # another gateway (another secret): a form from the first is stale
    assert httpx.post(f"{restarted}/a/{token}", data={"_csrf": borrowed}).status_code == 403


def test_a_hostile_description_and_schema_title_are_printed_as_text(repo: Repo, gateway_of: Any) -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "title": '"><script>alert(1)</script>', "description": "<b>bold</b>"},
            "b": {"enum": ['x" autofocus onfocus="alert(2)', "y"]},
        },
    }
    _, wait_id = waiting(
        repo, description="<script>alert(3)</script><img src=x onerror=alert(4)>", schema=schema
    )
    token, _ = grant(repo, wait_id)
    url = f"{gateway_of(repo)}/a/{token}"
    html = httpx.get(url).text
    assert "<script" not in html and "<img" not in html and "<b>" not in html and 'onfocus="' not in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    sent = httpx.post(url, data={"_csrf": csrf(html), "$/a": "</pre><script>alert(5)</script>"})
    assert sent.status_code == 200 and "<script" not in sent.text


def test_an_unknown_link_is_not_found(repo: Repo, gateway_of: Any) -> None:
    waiting(repo)
    gateway = gateway_of(repo)
    for token in ("swtok_nothing", "not-a-token"):
        for page in (httpx.get(f"{gateway}/a/{token}"), httpx.post(f"{gateway}/a/{token}", data={})):
            assert page.status_code == 404 and "not valid" in page.text and "<form" not in page.text


def test_a_revoked_or_expired_link_says_so_and_takes_nothing(repo: Repo, gateway_of: Any) -> None:
    _, wait_id = waiting(repo)
    revoked, revoked_id = grant(repo, wait_id)
    expiring, _ = grant(repo, wait_id, "--expires", "10m")
    assert repo.swamp("workflow", "wait", "revoke", revoked_id).code == 0
    gateway = gateway_of(repo)
    page = httpx.get(f"{gateway}/a/{revoked}")
    assert page.status_code == 403 and "revoked" in page.text and "<form" not in page.text
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=20)).isoformat()
    gateway_later = gateway_of(repo, {"SWAMP_NOW": later})
    html = httpx.get(f"{gateway}/a/{expiring}").text
    page = httpx.post(f"{gateway_later}/a/{expiring}", data={"_csrf": csrf(html), "$/verdict": "ship"})
    assert page.status_code == 410 and "expired" in page.text and "<form" not in page.text
    assert wait_doc(repo, wait_id)["status"] == "open"
    past_deadline = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).isoformat()
    fresh, _ = grant(repo, wait_id)
    page = httpx.get(f"{gateway_of(repo, {'SWAMP_NOW': past_deadline})}/a/{fresh}")
    assert page.status_code == 410 and "deadline has passed" in page.text and "<form" not in page.text


def test_a_form_past_the_body_cap_is_refused_before_it_is_read(repo: Repo, gateway_of: Any) -> None:
    _, wait_id = waiting(repo)
    token, _ = grant(repo, wait_id)
    page = httpx.post(f"{gateway_of(repo)}/a/{token}", data={"$/verdict": "x" * (1024 * 1024 + 1)})
    assert page.status_code == 413 and "too large" in page.text and "<form" not in page.text
    assert wait_doc(repo, wait_id)["status"] == "open"


def test_guessing_links_is_slowed_then_refused_for_a_while(repo: Repo, gateway_of: Any) -> None:
    waiting(repo)
    gateway = gateway_of(repo)
    statuses = [httpx.get(f"{gateway}/a/swp_{'a' * 31}{c}").status_code for c in "bcdefghijklm"]
    assert statuses[:10] == [404] * 10 and statuses[-1] == 429
    refused = httpx.get(f"{gateway}/a/swp_{'b' * 32}")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "Too many requests" in refused.text


def test_without_continuation_the_answer_stands_and_the_run_waits_to_be_resumed(
    repo: Repo, gateway_of: Any
) -> None:
    run_id, wait_id = waiting(repo)
    token, _ = grant(repo, wait_id)
    url = f"{gateway_of(repo, None, '--no-continue')}/a/{token}"
    form = {"_csrf": csrf(httpx.get(url).text), "$/verdict": "ship", "$/count": "1"}
    page = httpx.post(url, data=form)
    assert page.status_code == 200 and "Answer received" in page.text
    assert "The run stays suspended until someone resumes it" in page.text
    assert wait_doc(repo, wait_id)["status"] != "open"
    assert repo.swamp("workflow", "history", "get", run_id, "--json").json["status"] == "suspended"
