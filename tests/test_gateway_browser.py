"""A real browser answers a one-time link (issue 29's "done when"): the release example's hook posts
a link, headless Chromium (Debian's `chromium`, driven by Selenium through `chromium-driver`) opens
it, sees the form, sends a wrong answer and sees the error beside its field, sends a right one and
sees the receipt, opens the link again and sees "Already answered"; and the run continues. On the
file store, and on PostgreSQL when SWAMP_TEST_PG is set.

The screenshots (at a phone's width) are kept as test artifacts, under $SWAMP_TEST_ARTIFACTS or
.artifacts/ (git-ignored); the test prints where."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import SWAMP, clean_env, run_swamp

pytest.importorskip("starlette")

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
PG = os.environ.get("SWAMP_TEST_PG", "")
PHONE = (390, 844)

# The hook stands in for a chat: it writes the wait's `link` (or nothing, when there is none).
POST_LINK = """\
import json, sys
wait = json.loads(sys.stdin.readline())
with open("posted-links.txt", "a", encoding="utf-8") as out:
    out.write((wait.get("link") or "") + "\\n")
"""


@pytest.fixture(params=["file", "postgresql"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    if request.param == "file":
        return None
    if not PG.startswith(("postgresql://", "postgres://")):
        pytest.skip("SWAMP_TEST_PG (a PostgreSQL address, as `scripts/pg start DIR` prints) is not set")
    url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3Dt_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("SWAMP_STORE_URL", url)
    return url


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("Chromium is not installed: apt-get install chromium chromium-driver (scripts/test does)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    # A phone's screen (a headless window is never narrower than 500 pixels; emulation is).
    metrics = {"width": PHONE[0], "height": PHONE[1], "pixelRatio": 2}
    options.add_experimental_option("mobileEmulation", {"deviceMetrics": metrics})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def gateway_of() -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start(repo: Path) -> str:
        proc = subprocess.Popen(
            [str(SWAMP), "gateway", "--listen", "127.0.0.1:0", "--repo-dir", str(repo)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=clean_env(),
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


def artifacts(name: str) -> Path:
    base = Path(os.environ.get("SWAMP_TEST_ARTIFACTS") or ROOT / ".artifacts")
    folder = base / "gateway-browser" / name
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {folder}", file=sys.stderr)
    return folder


def posted_link(repo: Path, wait_id: str, gateway: str) -> str:
    """The link the release example's hook posted; where the hooks give none, a one-use grant
    made into the same URL."""
    posted = repo / "posted-links.txt"
    deadline = time.monotonic() + 30  # the hook runs detached: wait for its line, never on a clock
    while time.monotonic() < deadline and not (posted.exists() and posted.read_text().strip()):
        time.sleep(0.05)
    lines = posted.read_text().split() if posted.exists() else []
    if lines:
        return lines[0]
    granted = run_swamp("workflow", "wait", "grant", wait_id, "--uses", "1", "--json", cwd=repo)
    assert granted.code == 0, granted.err
    return f"{gateway}/a/{granted.json['permission']['token']}"


def submit(browser: Any) -> None:
    """Press the form's button and wait for the page the POST answers with."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # The form's page is marked; the answer is a new document without the mark. Watching the old
    # page's node go stale instead races the navigation: ChromeDriver can answer a query on a node
    # of a document being torn down with "Node with given id does not belong to the document".
    browser.execute_script("window.swampFormPage = true")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 60, ignored_exceptions=(WebDriverException,)).until(
        lambda driver: driver.execute_script(
            "return document.readyState === 'complete' && window.swampFormPage !== true"
        )
    )


def test_a_person_answers_the_release_verdict_in_chromium(
    tmp_path: Path, store: str | None, browser: Any, gateway_of: Any
) -> None:
    from selenium.webdriver.common.by import By

    repo = tmp_path / "release"
    shutil.copytree(ROOT / "examples" / "release", repo)
    assert run_swamp("repo", "init", ".", "--json", cwd=repo).code == 0
    gateway = gateway_of(repo)
    (repo / "hooks").mkdir()
    (repo / "hooks" / "post-link.py").write_text(POST_LINK)
    (repo / ".swamp.yaml").write_text(
        "version: 1\n"
        f"gateway: {{publicUrl: {gateway!r}}}\n"
        'hooks: {waitOpened: {command: "python3 hooks/post-link.py", timeout: 10}}\n'
    )
    started = run_swamp("workflow", "run", "release", "--json", cwd=repo)
    assert started.code == 0, started.err
    run_id, (wait,) = started.json["id"], started.json["waits"]
    link = posted_link(repo, wait["waitId"], gateway)
    assert link.startswith(f"{gateway}/a/")
    shots = artifacts(store and "postgresql" or "file")

    browser.get(link)  # the form, from the captured schema
    assert "Verdict on release 1.4.0" in browser.find_element(By.ID, "description").text
    radios = browser.find_elements(By.CSS_SELECTOR, 'input[type=radio][name="$/verdict"]')
    assert [r.get_attribute("value") for r in radios] == ["ship", "fix", "abandon"]
    width = browser.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
    assert width == [PHONE[0], PHONE[0]]  # readable at a phone's width: nothing wider than the screen
    browser.save_screenshot(str(shots / "1-form.png"))

    note = browser.find_element(By.NAME, "$/note")  # a wrong answer: no verdict chosen
    note.send_keys("changelog entry is missing")
    submit(browser)
    beside = browser.find_element(By.CSS_SELECTOR, '[data-field="$/verdict"] .error')
    assert "required" in beside.text
    assert browser.find_element(By.NAME, "$/note").get_attribute("value") == "changelog entry is missing"
    browser.save_screenshot(str(shots / "2-error.png"))

    browser.find_element(By.CSS_SELECTOR, 'label.choice input[value="ship"]').click()
    submit(browser)
    assert "Answer received" in browser.find_element(By.ID, "outcome").text
    signal_id = browser.find_element(By.ID, "signal-id").text
    assert signal_id and '"ship"' in browser.find_element(By.ID, "payload").text
    assert "The run continued" in browser.find_element(By.ID, "continuation").text
    browser.save_screenshot(str(shots / "3-receipt.png"))

    browser.get(link)  # the link again: what happened, and no form
    assert "Already answered" in browser.find_element(By.ID, "outcome").text
    assert browser.find_element(By.ID, "signal-id").text == signal_id
    assert not browser.find_elements(By.TAG_NAME, "form")
    browser.save_screenshot(str(shots / "4-already-answered.png"))

    run = run_swamp("workflow", "history", "get", run_id, "--json", cwd=repo)
    assert run.code == 0, run.err
    assert run.json["status"] == "succeeded", run.json
    steps = {s["name"]: s["status"] for j in run.json["jobs"] for s in j["steps"]}
    assert steps["ship"] == "succeeded" and steps["review"] == "succeeded"
