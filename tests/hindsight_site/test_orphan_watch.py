"""The worker's watch of its launcher, on real processes: a stand-in launcher starts a stand-in
worker (its own session, a "pool" child, a shutdown that never comes: SIGTERM and SIGQUIT
ignored), then is SIGKILLed."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_site import orphan_watch

ROOT = Path(__file__).resolve().parents[2]

WORKER = """
import os, signal, subprocess, sys, time
from hindsight_site import orphan_watch
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGQUIT, signal.SIG_IGN)
pool = subprocess.Popen(["sleep", "600"])
orphan_watch.watch(int(sys.argv[1]), grace=0.5)
print(os.getpid(), pool.pid, flush=True)
time.sleep(600)
"""

LAUNCHER = """
import os, subprocess, sys, time
worker = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], str(os.getpid())],
    start_new_session=True, stdout=subprocess.PIPE, text=True,
)
print(worker.stdout.readline().strip(), flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie waits for a parent that may never reap it here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def launched() -> Iterator[tuple[subprocess.Popen[str], int, int]]:
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, WORKER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert launcher.stdout is not None
    worker, pool = (int(pid) for pid in launcher.stdout.readline().split())
    yield launcher, worker, pool
    launcher.kill()
    launcher.wait()
    for pid in (worker, pool):
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_launcher_is_killed_is_killed_with_its_pool(launched):
    launcher, worker, pool = launched
    launcher.kill()
    launcher.wait()

    deadline = time.monotonic() + 10  # a poll (1 s) and the grace (0.5 s here)
    while (running(worker) or running(pool)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(worker) and not running(pool)


def test_a_worker_whose_launcher_runs_is_left_alone(launched):
    _launcher, worker, pool = launched
    time.sleep(2 * orphan_watch.POLL_SECONDS + 0.5)
    assert running(worker) and running(pool)


def test_a_living_process_that_is_not_the_parent_is_not_watched():
    # A worker given such a name by hand, beside a process of that pid.
    other = subprocess.Popen(["sleep", "60"])
    try:
        assert orphan_watch.watch(other.pid) is None
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize(
    ("hostname", "pid"),
    [("worker-4242@box", 4242), ("celery@box", None), ("worker-x@box", None), ("", None)],
)
def test_the_launcher_pid_comes_from_the_worker_name(hostname, pid):
    assert orphan_watch.launcher_pid(hostname) == pid
    if pid is not None:
        assert orphan_watch.worker_hostname(pid).replace("%h", "box") == hostname
