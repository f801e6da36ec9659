"""The gateway's process and JSON API against a real `swamp gateway` on a loopback port
(GATEWAY-001..009, GATEWAY-050..069, GATEWAY-090..099)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from gateway_support import everything_stored, gateway, grant, public, waiting
from helpers import Repo, make_repo

pytestmark = pytest.mark.cli


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = make_repo(tmp_path / "repo")
    public(made)
    return made


def test_it_answers_healthz_without_naming_its_server_and_stops_on_sigterm(repo: Repo) -> None:
    with gateway(repo) as gw:
        assert gw.url.startswith("http://127.0.0.1:")
        got = httpx.get(gw.url + "/healthz")
        assert got.status_code == 200 and got.json() == {"status": "ok"}
        assert "server" not in got.headers
        assert httpx.get(gw.url + "/nothing-here").status_code == 404
        assert gw.stop() == 0
    (entry, *_) = gw.entries()
    assert entry["method"] == "GET" and entry["path"] == "/healthz" and entry["status"] == 200
    assert entry["client"] == "127.0.0.1" and isinstance(entry["ms"], float)
    assert gw.entries()[-1].get("stopped") is True


def test_a_token_answers_its_wait_once_and_every_refusal_has_its_status(repo: Repo) -> None:
    run_id, wait_id = waiting(repo)
    token = grant(repo, wait_id)
    auth = {"Authorization": f"Bearer {token}"}
    with gateway(repo) as gw:
        to = f"{gw.url}/v1/waits/{wait_id}/signal"
        missing = httpx.post(to, content=b'{"verdict":"ship"}')
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert missing.json()["error"]["code"] == "permission_invalid"
        unknown = httpx.post(
            to, content=b'{"verdict":"ship"}', headers={"Authorization": "Bearer swp_" + "a" * 32}
        )
        assert unknown.status_code == 403 and unknown.json()["error"]["details"]["reason"] == "unknown"
        malformed = httpx.post(to, content=b'{"verdict":', headers=auth)
        assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "payload_malformed"
        invalid = httpx.post(to, content=b'{"verdict":"maybe"}', headers=auth)
        assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "payload_invalid"
        assert (
            httpx.post(f"{gw.url}/v1/waits/wait_{'a' * 26}/signal", content=b"1", headers=auth).status_code
            == 404
        )
        sent = httpx.post(to, content=b'{"verdict":"ship"}', headers=auth)
        assert sent.status_code == 200, sent.text
        doc = sent.json()
        assert doc["signal"]["permissionId"] and doc["payload"] == {"verdict": "ship"}
        assert doc["continued"] is True and doc["run"] == {"id": run_id, "status": "succeeded"}
        again = httpx.post(to, content=b'{"verdict":"ship"}', headers=auth)
        assert again.status_code == 409
        assert again.json()["error"]["details"]["receipt"]["id"] == doc["signal"]["id"]
        gw.stop()
    log = "\n".join(gw.log)
    assert token not in log and token not in everything_stored(repo.root)


def test_a_used_link_is_refused_for_its_use_not_for_the_wait(repo: Repo) -> None:
    """The link's one use is spent: a second POST with it is 403 used_up (GATEWAY-051)."""
    _, wait_id = waiting(repo)
    made = repo.swamp("workflow", "wait", "link", wait_id, "--json").json
    token = made["permission"]["token"]
    with gateway(repo, "--no-continue") as gw:
        to = f"{gw.url}/v1/waits/{wait_id}/signal"
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.post(to, content=b'{"verdict":"fix"}', headers=auth).status_code == 200
        second = httpx.post(to, content=b'{"verdict":"fix"}', headers=auth)
        assert second.status_code == 403 and second.json()["error"]["details"]["reason"] == "used_up"


def test_get_shows_the_wait_of_its_own_token_only(repo: Repo) -> None:
    _, wait_id = waiting(repo)
    _, other = waiting(repo, "qa2")
    token = grant(repo, wait_id, "--expires", "1h")
    with gateway(repo) as gw:
        got = httpx.get(f"{gw.url}/v1/waits/{wait_id}", headers={"Authorization": f"Bearer {token}"})
        assert got.status_code == 200 and got.headers["cache-control"] == "no-store"
        wait = got.json()["wait"]
        assert wait["waitId"] == wait_id and wait["status"] == "open" and wait["examplePayload"]
        assert wait["schema"]["required"] == ["verdict"] and wait["deadline"]
        assert not {"hooks", "permissions", "next"} & set(wait)
        assert got.json()["permission"]["state"] == "live"
        refused = httpx.get(f"{gw.url}/v1/waits/{other}", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 403 and refused.json()["error"]["details"]["reason"] == "other_wait"
        assert httpx.get(f"{gw.url}/v1/waits/{wait_id}").status_code == 401


def test_the_body_is_capped_before_it_is_read(repo: Repo) -> None:
    _, wait_id = waiting(repo)
    token = grant(repo, wait_id)
    auth = {"Authorization": f"Bearer {token}"}
    with gateway(repo) as gw:
        to = f"{gw.url}/v1/waits/{wait_id}/signal"
        declared = httpx.post(to, content=b"x" * 40000, headers=auth)
        assert declared.status_code == 413 and declared.json()["error"]["code"] == "payload_too_large"

        def chunks():  # no Content-Length: read until the cap, then refused
            for _ in range(100):
                yield b" " * 1024

        streamed = httpx.post(to, content=chunks(), headers=auth)
        assert streamed.status_code == 413
        assert httpx.post(to, content=b'{"verdict":"ship"}', headers=auth).status_code == 200


def test_the_log_never_holds_a_token(repo: Repo) -> None:
    _, wait_id = waiting(repo)
    token = grant(repo, wait_id)
    with gateway(repo) as gw:
        httpx.get(f"{gw.url}/a/{token}")
        httpx.get(f"{gw.url}/a/{token}x/more?token={token}")
        httpx.get(f"{gw.url}/v1/waits/{token}", headers={"Authorization": f"Bearer {token}"})
        gw.stop()
    paths = [e["path"] for e in gw.entries() if "path" in e]
    assert "/a/<token>" in paths and "/v1/waits/<token>" in paths
    assert token not in "\n".join(gw.log) and "swp_" not in "\n".join(gw.log)


def test_rate_limits_answer_429_with_retry_after(repo: Repo) -> None:
    _, wait_id = waiting(repo)
    # --rate 0.5: one request at once, then one every 2 s. Whatever the machine's load, a request
    # soon comes before the bucket refilled (the bucket's arithmetic: test_gateway_limits.py).
    with gateway(repo, "--rate", "0.5") as gw:
        assert httpx.get(f"{gw.url}/v1/waits/{wait_id}").status_code == 401
        for _ in range(50):
            limited = httpx.get(f"{gw.url}/v1/waits/{wait_id}")
            if limited.status_code != 401:
                break
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["code"] == "too_many_requests"


def test_refused_tokens_are_slowed_then_refused_for_a_while(repo: Repo) -> None:
    _, wait_id = waiting(repo)
    token = grant(repo, wait_id)
    with gateway(repo, "--rate", "1000") as gw:
        wrong = {"Authorization": "Bearer swp_" + "b" * 32}
        codes = [httpx.get(f"{gw.url}/v1/waits/{wait_id}", headers=wrong).status_code for _ in range(11)]
        assert codes[:10] == [403] * 10 and codes[10] == 429
        # the right token from that address waits too: guessing is slowed whatever is guessed
        right = httpx.get(f"{gw.url}/v1/waits/{wait_id}", headers={"Authorization": f"Bearer {token}"})
        assert right.status_code == 429
        gw.stop()
    refused = [e for e in gw.entries() if e.get("code") == "permission_invalid"]
    assert len(refused) == 10 and all(e["status"] == 403 for e in refused)


def test_tls_with_a_certificate_and_its_key(repo: Repo, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    with gateway(repo, "--certfile", str(cert), "--keyfile", str(key)) as gw:
        assert gw.url.startswith("https://127.0.0.1:")
        import ssl

        got = httpx.get(gw.url + "/healthz", verify=ssl.create_default_context(cafile=str(cert)))
        assert got.status_code == 200 and got.json() == {"status": "ok"}


@pytest.mark.parametrize(
    "args",
    [("--public-url", "ftp://x"), ("--certfile", "cert.pem"), ("--listen", "nowhere")],
)
def test_wrong_options_are_usage_errors(repo: Repo, args: tuple[str, ...]) -> None:
    listen = () if "--listen" in args else ("--listen", "127.0.0.1:0")
    done = repo.swamp("--json", "gateway", *listen, *args)
    assert done.code == 2, done
    assert json.loads(done.out)["error"]["code"] == "usage_error"


def test_sigterm_answers_the_request_in_flight_before_it_exits(repo: Repo) -> None:
    """GATEWAY-003: a request whose body is still arriving when SIGTERM comes is answered, and the
    log says the stop began with it in flight."""
    import threading

    _, wait_id = waiting(repo)
    token = grant(repo, wait_id)
    started, go_on = threading.Event(), threading.Event()
    answers: list[httpx.Response] = []

    def body():
        yield b'{"verdict":'
        started.set()
        go_on.wait(30)
        yield b'"ship"}'

    with gateway(repo, "--no-continue") as gw:

        def send() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            answers.append(httpx.post(f"{gw.url}/v1/waits/{wait_id}/signal", content=body(), headers=headers))

        sender = threading.Thread(target=send)
        sender.start()
        assert started.wait(30)
        import signal as signals

        gw.process.send_signal(signals.SIGTERM)
        assert gw.process.stderr is not None
        stopping = json.loads(gw.process.stderr.readline())  # before the body ends: still in flight
        go_on.set()
        sender.join(60)
        assert gw.ended() == 0
    assert stopping["stopping"] is True and stopping["inFlight"] == 1, stopping
    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()["signal"]["permissionId"]
    answered, stopped = gw.entries()
    assert answered["status"] == 200 and stopped["stopped"] is True


def test_what_is_not_http_is_refused_and_logged_as_json(repo: Repo) -> None:
    """GATEWAY-017: a request line no HTTP server can read (which no client library sends) is
    answered 400 and logged as a JSON line, and the log holds nothing else."""
    import socket

    with gateway(repo) as gw:
        host, port = gw.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as client:
            client.sendall(b"NOT HTTP \x00\x01\r\n\r\n")
            assert client.recv(4096).startswith(b"HTTP/1.1 400 ")
        assert gw.stop() == 0
    assert all(line.startswith("{") for line in gw.log), gw.log
    refused = gw.entries()[0]
    assert refused == {"at": refused["at"], "client": "127.0.0.1", "status": 400, "closed": "invalid_http"}


def test_the_http_servers_own_messages_are_json_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """GATEWAY-017: uvicorn's messages (here an application error) in the log's own shape."""
    import logging
    import sys

    from swamp.gateway import server

    written: list[dict[str, object]] = []
    monkeypatch.setattr(server, "write_log", written.append)
    try:
        raise ValueError("boom")
    except ValueError:
        failed = sys.exc_info()
    message = "Exception in ASGI application\n"
    server.JsonLogHandler().emit(
        logging.LogRecord("uvicorn.error", logging.ERROR, "", 0, message, None, failed)
    )
    at = written[0]["at"] if written else None
    assert written == [
        {"at": at, "level": "error", "message": message.strip(), "exception": "ValueError: boom"}
    ]


def test_a_long_path_is_logged_cut_and_never_shows_part_of_a_token() -> None:
    """GATEWAY-004: tokens are replaced before the path is cut at 1024 characters."""
    from swamp.gateway.server import MAX_LOGGED_PATH, redact

    token = "swp_" + "Q" * 32
    straddling = "/" + "x" * (MAX_LOGGED_PATH - 6) + "/" + token
    shown = redact(straddling)
    assert shown == "/" + "x" * (MAX_LOGGED_PATH - 6) + "/<tok..." and "Q" not in shown
    assert redact("/x" * 10) == "/x" * 10
    assert len(redact("/" + "y" * 5000)) == MAX_LOGGED_PATH + 3
