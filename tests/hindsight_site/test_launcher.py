"""`hindsight run` end to end: a real launcher process on a temp data dir and a free port.

Each launcher start takes several seconds, so the module shares one run (started once) and one
restart; the restart is a module fixture too, used by the tests that look at the stop and at what
survives it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import trajectory
from tests.support.launcher import SiteProcess
from tests.support.ports import free_port

pytestmark = pytest.mark.launcher

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = shutil.which("hindsight", path=str(Path(sys.executable).parent)) or "hindsight"


def child_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The test's environment, pointed at `data_dir` and without external services (for the
    commands run beside the site: a second launcher, manage.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(HINDSIGHT_DATA_DIR=str(data_dir), **extra)
    return env


def processes_of(data_dir: Path) -> list[str]:
    """Live processes whose command line or environment mentions `data_dir` (PostgreSQL,
    Redis, gunicorn, Celery and their children all inherit the launcher's environment)."""
    needle = str(data_dir).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # exited meanwhile, or not ours to read
        if not cmdline:
            continue  # a zombie waiting for its parent
        if needle in cmdline or needle in environ:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {command}")
    return found


def http(method: str, url: str, key: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[SiteProcess]:
    launcher = SiteProcess(tmp_path_factory.mktemp("launcher") / "data", beat=True)
    launcher.start()
    yield launcher
    launcher.stop()


@dataclass(frozen=True)
class Restart:
    exit_status: int | None
    running_before: list[str]
    leftovers: list[str]
    trace_id: int
    key_before: str
    reader_key: str


@pytest.fixture(scope="module")
def restarted(site: SiteProcess) -> Restart:
    """Ingest a trace, stop the launcher with SIGTERM, start it again on the same data dir."""
    key, reader = site.key(), site.pipeline_key()
    status, body = http("POST", f"{site.url}/api/v1/traces", key, trajectory("survivor"))
    assert status == 201, body
    # An experience embedded by another model (as after an upgrade): the restart must say so.
    stale = (
        "from experiences.models import Experience; from accounts.models import Project; "
        "Experience.objects.create(project=Project.objects.get(name='demo'), advice='a', "
        "polarity='success', source='heuristic', embedding=[0.1] * 384, embedding_model='old')"
    )
    command = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", stale],
        env=child_env(site.data_dir), cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert command.returncode == 0, command.stderr
    running_before = processes_of(site.data_dir)
    exit_status = site.stop()
    deadline = time.monotonic() + 3  # grandchildren are reaped by init a moment later
    while (leftovers := processes_of(site.data_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    site.start()
    return Restart(exit_status, running_before, leftovers, body["id"], key, reader)


# ---------------------------------------------------------------------------- one run


def test_it_prints_the_url_the_login_and_the_demo_key(site):
    assert f"http://localhost:{site.port}/" in site.output
    assert re.search(r"login: admin / \S+", site.output)
    printed = re.search(r"demo key\s+(hs_\S+)", site.output)
    assert printed and printed.group(1) == site.key()


def test_web_workers_load_the_embedding_model_when_they_start(site):
    # HINDSIGHT_WEB_WORKERS=1 in these tests: one worker, ready before the first recall.
    model = "all-MiniLM-L6-v2/int8-dynamic/single"
    assert site.output.count(f": embedding model {model} ready") == 1


def test_the_demo_key_recalls_over_http_and_reads_nothing(site):
    status, body = http("POST", f"{site.url}/api/v1/recall", site.key(), {"task": "x"})
    assert status == 200 and body["items"] == []

    status, body = http("GET", f"{site.url}/api/v1/traces", site.key())
    assert status == 403 and "'read'" in body["detail"]


def test_a_wrong_key_is_refused_over_http(site):
    status, body = http("GET", f"{site.url}/api/v1/traces", "hs_not-a-key")
    assert (status, body) == (401, {"detail": "Unauthorized"})


def test_a_second_launcher_on_the_same_data_dir_refuses_to_start(site):
    env = child_env(site.data_dir, HINDSIGHT_PORT=str(free_port()))
    second = subprocess.run(
        [HINDSIGHT, "run"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert second.returncode != 0
    said = second.stdout + second.stderr
    assert site.process is not None
    assert f"already running on data dir {site.data_dir} (launcher pid {site.process.pid}, " \
        f"serving http://127.0.0.1:{site.port})" in said  # fmt: skip
    assert "port" not in said.split("serving")[0]  # never the advice to take another port
    assert site.process.poll() is None  # the first one runs on


def test_create_api_key_reaches_the_running_launchers_database(site):
    command = subprocess.run(
        [sys.executable, "manage.py", "create_api_key", "--project", "demo", "--scopes", "read"],
        env=child_env(site.data_dir),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert command.returncode == 0, command.stderr
    key = command.stdout.strip()

    assert key.startswith("hs_") and key != site.key()
    status, _ = http("GET", f"{site.url}/api/v1/traces", key)
    assert status == 200


# ---------------------------------------------------------------------------- stop and restart


def test_sigterm_stops_it_with_exit_status_0(restarted):
    assert restarted.exit_status == 0


def test_sigterm_leaves_no_process_of_its_data_dir(restarted):
    # PostgreSQL, Redis, gunicorn (master + worker), Celery (main + pool) and beat were found.
    assert len(restarted.running_before) >= 7, restarted.running_before
    assert restarted.leftovers == []


def test_traces_survive_a_restart(site, restarted):
    status, body = http(
        "GET", f"{site.url}/api/v1/traces/{restarted.trace_id}", restarted.reader_key
    )

    assert status == 200
    assert body["external_id"] == "survivor" and len(body["steps"]) == 3


def test_a_restart_names_vectors_of_another_embedding_model(site, restarted):
    assert "1 experience(s) hold vectors of another embedding model" in site.output
    assert "manage.py reembed" in site.output


def test_the_demo_key_survives_a_restart(site, restarted):
    assert site.key() == restarted.key_before


# ---------------------------------------------------------------------------- a crash


@dataclass(frozen=True)
class Crash:
    launcher_pid: int
    left_running: list[str]


@pytest.fixture(scope="module")
def crashed(site: SiteProcess, restarted: Restart) -> Crash:
    """SIGKILL the launcher (as the OOM killer would), then start one on another port."""
    assert site.process is not None
    killed = site.process.pid
    site.process.kill()
    site.process.wait()
    deadline = time.monotonic() + 30  # the children get SIGTERM: gunicorn's grace is 10 s
    while (left := [p for p in processes_of(site.data_dir) if "postgres" not in p]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)
    site.port = free_port()
    site.start()
    return Crash(killed, left)


def test_a_launcher_killed_by_sigkill_takes_web_worker_beat_and_redis_with_it(crashed):
    # Before: gunicorn, Celery and Redis kept serving, unsupervised, and the next launcher
    # said the port was in use.
    assert crashed.left_running == []


def test_the_next_launcher_on_another_port_takes_over_the_data_dir(site, restarted, crashed):
    status, body = http(
        "GET", f"{site.url}/api/v1/traces/{restarted.trace_id}", restarted.reader_key
    )
    assert status == 200 and body["external_id"] == "survivor"
    # No port advice ("port N on HOST is in use"), no second stack. (Not the bare word "port":
    # Celery's banner says "transport", and it comes before "ready" when gunicorn starts later.)
    assert "is in use" not in site.output.split("ready")[0]
