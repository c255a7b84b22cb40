"""What the benchmarks share: the real site as a subprocess, free ports, percentiles."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HINDSIGHT = ROOT / ".venv" / "bin" / "hindsight"
READY_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Site:
    """`hindsight run --no-beat` on a fresh data dir; stopped with SIGTERM."""

    def __init__(self, data_dir: Path, port: int, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
        self.env = {**os.environ, **env, "HINDSIGHT_DATA_DIR": str(data_dir),
                    "HINDSIGHT_PORT": str(port)}  # fmt: skip
        for name in ("DATABASE_URL", "REDIS_URL", "HINDSIGHT_EMBEDDED"):
            self.env.pop(name, None)
        self.process: subprocess.Popen[bytes] | None = None
        self.paused: list[int] = []

    def start(self) -> str:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(HINDSIGHT), "run", "--no-beat"], env=self.env, cwd=ROOT,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + READY_TIMEOUT
        while b"[hindsight] ready" not in self.log_path.read_bytes():
            if self.process.poll() is not None:
                raise RuntimeError("the launcher exited:\n" + self.log_tail())
            if time.monotonic() > deadline:
                raise RuntimeError("the launcher was not ready in time:\n" + self.log_tail())
            time.sleep(0.2)
        return (self.data_dir / "demo-api-key").read_text().strip()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def pause_worker(self) -> int:
        """SIGSTOP the Celery worker and its pool, so reviews do not compete for the CPU."""
        table = _proc_table()
        launcher = self.process.pid if self.process else -1
        workers = [
            pid
            for pid, (parent, _, cmdline) in table.items()
            if parent == launcher and "celery" in cmdline and " worker " in cmdline
        ]
        self.paused = workers + [pid for pid, row in table.items() if row[0] in workers]
        for pid in self.paused:
            os.kill(pid, signal.SIGSTOP)
        return len(self.paused)

    def resume_worker(self) -> None:
        for pid in self.paused:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = []

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.resume_worker()  # a stopped process would not act on the launcher's SIGTERM
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _proc_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds so far, command line), from /proc (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (
            int(fields[1]),
            # utime + stime, plus cutime + cstime: the CPU of children already gone (PostgreSQL
            # backends whose connection was recycled) moves into their parent's count.
            sum(int(f) for f in fields[11:15]) / ticks,
            cmdline,
        )
    return table


# ---------------------------------------------------------------------------- where the CPU goes


def cpu_by_group(site: Site) -> dict[str, float]:
    """CPU seconds used so far by the launcher's web, worker, Redis, PostgreSQL and this client."""
    if not Path("/proc/self/stat").exists():
        return {}
    table = _proc_table()
    launcher = site.process.pid if site.process else -1
    postmaster_flag = f"-D {site.data_dir.resolve() / 'postgres'}"
    groups: dict[str, float] = {}
    for pid, (_, seconds, cmdline) in table.items():
        group = None
        ancestor: int | None = pid
        while ancestor and ancestor in table and group is None:
            parent, _, line = table[ancestor]
            if ancestor == os.getpid():
                group = "client"
            elif postmaster_flag in line:
                group = "postgres"
            elif ancestor == launcher:
                group = "launcher" if pid == launcher else _launcher_child_group(cmdline)
            ancestor = parent
        if group:
            groups[group] = groups.get(group, 0.0) + seconds
    return groups


def _launcher_child_group(cmdline: str) -> str:
    for needle, group in (("gunicorn", "web"), ("celery", "worker"), ("redis-server", "redis")):
        if needle in cmdline:
            return group
    return "launcher"
