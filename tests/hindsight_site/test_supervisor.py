"""The launcher's supervisor starting its children (real processes, no site)."""

import os
import sys
from pathlib import Path

import pytest

from hindsight_site.supervisor import Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def supervisor():
    supervisor = Supervisor(env=dict(os.environ))
    yield supervisor
    supervisor.stop_all()


def _autogroup_nice(pid: int) -> int | None:
    path = Path(f"/proc/{pid}/autogroup")
    if not path.exists():
        return None
    return int(path.read_text().split()[-1])  # "/autogroup-123 nice 5"


def test_a_child_spawned_nice_runs_that_many_steps_below_the_launcher(supervisor):
    supervisor.spawn("web", SLEEPER, nice=5)
    pid = supervisor.children["web"].pid
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)  # 19 is the lowest there is
    assert os.getpriority(os.PRIO_PROCESS, pid) == expected
    # Its session shares the CPU with the others by the session's niceness (autogroups).
    assert _autogroup_nice(pid) in (None, 5)


def test_a_child_spawned_without_nice_keeps_the_launchers_priority(supervisor):
    supervisor.spawn("worker", SLEEPER)
    pid = supervisor.children["worker"].pid
    assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)
    assert _autogroup_nice(pid) in (None, 0)
