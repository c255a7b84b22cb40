"""The launcher's stack record: what a launcher that died left running is stopped by the next
one, and nothing else; and a child started to die with its parent does."""

import json
import os
import signal
import subprocess
import sys
import time

from hindsight_site import embedded
from hindsight_site.supervisor import STACK_FILE, take_over, write_stack


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def gone(process: subprocess.Popen[bytes], timeout: float = 5.0) -> bool:
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_a_stale_record_is_taken_over_stopping_only_the_processes_it_names(tmp_path):
    ours, reused = sleeper(), sleeper()
    try:
        write_stack(tmp_path, {"web": ours.pid, "worker": reused.pid, "beat": 2**22 + 7})
        record = json.loads((tmp_path / STACK_FILE).read_text())
        # The worker's pid now belongs to another process (another start time).
        record["processes"]["worker"]["started"] -= 1
        (tmp_path / STACK_FILE).write_text(json.dumps(record))

        assert take_over(tmp_path) == ["web"]

        assert gone(ours) and ours.returncode == -signal.SIGTERM
        assert reused.poll() is None  # not ours: left alone
        assert not (tmp_path / STACK_FILE).exists()
        assert take_over(tmp_path) == []  # nothing recorded any more
    finally:
        for process in (ours, reused):
            process.kill()
            process.wait()


def test_an_unreadable_record_is_dropped(tmp_path):
    (tmp_path / STACK_FILE).write_text("{not json")
    assert take_over(tmp_path) == [] and not (tmp_path / STACK_FILE).exists()


def test_a_child_started_to_die_with_its_parent_does_when_the_parent_is_killed():
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time; from hindsight_site.embedded import "
         "dies_with_this_process as d; c = subprocess.Popen(['sleep', '60'], preexec_fn=d()); "
         "print(c.pid, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    started = embedded.process_start_time(child)
    assert started is not None

    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    deadline = time.monotonic() + 5
    while embedded.process_start_time(child) == started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert embedded.process_start_time(child) != started  # gone (reaped by init)
