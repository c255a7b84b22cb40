"""The launcher's children: started in sessions of their own (they die with the launcher),
restarted with a growing delay when one dies, recorded in the data dir's stack record (pid and
start time) so that the next launcher can stop what a launcher killed outright left running,
and stopped in order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from hindsight_site import embedded


def say(message: str) -> None:
    print(f"[hindsight] {message}", flush=True)


STOP_TIMEOUT = 20.0
# A child that dies is restarted after 1, 2, 4 ... seconds, at most this long; a child that ran
# this long before dying starts the count again.
RESTART_MAX_DELAY = 30.0
RESTART_STABLE_AFTER = 60.0


STACK_FILE = "stack.json"


def write_stack(directory: Path, processes: dict[str, int]) -> None:
    """Record this launcher's children (name -> pid) with their start times."""
    record = {
        "launcher": os.getpid(),
        "processes": {
            name: {"pid": pid, "started": embedded.process_start_time(pid)}
            for name, pid in processes.items()
        },
    }
    path = directory / STACK_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(path)


def take_over(directory: Path) -> list[str]:
    """Stop what a launcher that died left running, as its stack record names it; returns what
    was found. Called holding the lock, so that launcher is gone. Only a process with the
    recorded pid *and* start time is signalled: never one that merely reuses a pid."""
    path = directory / STACK_FILE
    try:
        record = json.loads(path.read_text())
        processes = {
            name: (int(entry["pid"]), entry["started"])
            for name, entry in record["processes"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        path.unlink(missing_ok=True)
        return []
    left = {
        name: pid
        for name, (pid, started) in processes.items()
        if started is not None and embedded.process_start_time(pid) == started
    }
    if left:
        names = ", ".join(f"{name} (pid {pid})" for name, pid in left.items())
        say(f"the launcher that ran here (pid {record.get('launcher')}) is gone and left {names} "
            "running: stopping them")  # fmt: skip
        for pid in left.values():
            signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and any(
            embedded.process_start_time(pid) == processes[name][1] for name, pid in left.items()
        ):
            time.sleep(0.1)
        for name, pid in left.items():
            if embedded.process_start_time(pid) == processes[name][1]:
                say(f"{name} (pid {pid}) did not stop in {STOP_TIMEOUT:.0f}s; killing it")
                signal_group(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)
    return list(left)


def child_setup(nice: int, death_signal: int = signal.SIGTERM) -> Callable[[], None]:
    """A child's `preexec_fn`: it gets `death_signal` when the launcher dies, and runs `nice`
    steps below it."""
    dies = embedded.dies_with_this_process(death_signal)

    def setup() -> None:
        dies()
        if nice:
            lower_priority(nice)

    return setup


def lower_priority(nice: int) -> None:
    """Lower this process's CPU priority by `nice` (0-19; anyone may lower their own).

    The niceness alone counts only against processes of the same session: Linux shares the CPU
    between sessions first (autogroups: each child of the launcher leads a session of its own),
    so the session's niceness is set too where the kernel has it."""
    os.nice(nice)
    try:
        Path("/proc/self/autogroup").write_text(str(nice))
    except OSError:
        pass  # no autogroups (another kernel, or a cgroup shares the CPU instead)


def signal_group(pid: int, signum: int) -> None:
    """A child started in its own session leads its process group (gunicorn's workers, Celery's
    pool): signal the group, else the process alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


class Supervisor:
    """Runs web, worker and beat, and restarts any of them that dies (a crash, the OOM killer,
    a broker outage that stops the worker) with a growing delay: 1 s, 2 s, 4 s ... up to
    RESTART_MAX_DELAY, back to 1 s once it ran RESTART_STABLE_AFTER. Services the launcher
    owns (the embedded Redis) are watched the same way. Stopping is only ever asked for."""

    def __init__(self, env: dict[str, str], directory: Path | None = None) -> None:
        self.env = env
        self.directory = directory  # where the stack record goes (None: nowhere)
        self.recorded: dict[str, int] = {}  # services the launcher owns (Redis): name -> pid
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.commands: dict[str, list[str]] = {}
        self.niceness: dict[str, int] = {}
        self.death_signals: dict[str, int] = {}
        self.started_at: dict[str, float] = {}
        self.failures: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        self.services: list[tuple[str, Callable[[], bool], Callable[[], None]]] = []
        self.stopping = False

    def spawn(
        self, name: str, args: list[str], *, nice: int = 0, death_signal: int = signal.SIGTERM
    ) -> None:
        """`death_signal`: what the child gets if the launcher dies without stopping it."""
        self.commands[name] = args
        self.niceness[name] = nice
        self.death_signals[name] = death_signal
        self._start(name)

    def _start(self, name: str) -> None:
        # A new session: Ctrl-C in the terminal reaches only the launcher, which then stops
        # each child exactly once (a second SIGINT would make Celery's shutdown a cold one).
        # And it dies with the launcher: no unsupervised stack after a crash.
        self.children[name] = subprocess.Popen(
            self.commands[name],
            env=self.env,
            start_new_session=True,
            preexec_fn=child_setup(
                self.niceness.get(name, 0), self.death_signals.get(name, signal.SIGTERM)
            ),
        )
        self.started_at[name] = time.monotonic()
        self.record()

    def record(self, name: str | None = None, pid: int | None = None) -> None:
        """Write the stack record (after a spawn, or with a service's new pid)."""
        if name is not None and pid is not None:
            self.recorded[name] = pid
        if self.directory is not None:
            pids = {**self.recorded, **{n: c.pid for n, c in self.children.items()}}
            write_stack(self.directory, pids)

    def watch_service(
        self, name: str, alive: Callable[[], bool], restart: Callable[[], None]
    ) -> None:
        self.services.append((name, alive, restart))

    def request_stop(self, signum: int, _frame) -> None:
        self.stopping = True

    def _delay(self, name: str, now: float) -> float:
        if now - self.started_at.get(name, now) >= RESTART_STABLE_AFTER:
            self.failures[name] = 0
        self.failures[name] = self.failures.get(name, 0) + 1
        return min(RESTART_MAX_DELAY, 2.0 ** (self.failures[name] - 1))

    def watch(self) -> int:
        while not self.stopping:
            now = time.monotonic()
            for name, alive, restart in self.services:
                if not alive():
                    say(f"{name} is not running; restarting it")
                    try:
                        restart()
                    except Exception as error:  # noqa: BLE001 - tried again next round
                        say(f"{name} did not restart: {error}")
            for name, child in self.children.items():
                if name in self.restart_at:
                    if now >= self.restart_at[name] and not self.stopping:
                        del self.restart_at[name]
                        say(f"restarting {name}")
                        self._start(name)
                    continue
                code = child.poll()
                if code is not None:
                    delay = self._delay(name, now)
                    say(f"{name} exited with status {code}; restarting it in {delay:.0f} s "
                        f"(restart {self.failures[name]})")  # fmt: skip
                    self.restart_at[name] = now + delay
            time.sleep(0.3)
        return 0

    def stop_all(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, child in self.children.items():
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop in {STOP_TIMEOUT:.0f}s; killing it")
                child.kill()
                child.wait()
