"""`hindsight run`: one process that owns the embedded services and runs web, worker and beat.

It takes an exclusive lock on the data dir (a second launcher on the same data dir stops with
the running one's pid and URL, whatever its own port), starts PostgreSQL and Redis unless
DATABASE_URL / REDIS_URL are set, records their addresses for other commands, migrates, makes
sure an admin and a demo API key exist, and supervises gunicorn, a Celery worker and Celery
beat, restarting any that dies. SIGINT / SIGTERM stop everything in order.

Its children die with it: each asks for SIGTERM when the launcher dies (Linux's parent-death
signal), so a launcher killed with SIGKILL or by the OOM killer leaves no unsupervised web,
worker, beat or Redis serving on (the embedded PostgreSQL, a daemon of pg_ctl, stays up and is
joined by the next launcher). The launcher records its children (pid and start time) in
`stack.json`; the next launcher on the data dir, holding the lock its predecessor lost with
its life, stops whatever of that record still runs (the same processes: a pid reused by
another process has another start time) before it starts its own.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

from hindsight_site import bootstrap, embedded
from hindsight_site.env import env_int, env_str
from hindsight_site.launch_plan import (
    EmbeddedServices,
    beat_command,
    web_command,
    web_nice,
    worker_command,
)

STOP_TIMEOUT = 20.0
# A child that dies is restarted after 1, 2, 4 ... seconds, at most this long; a child that ran
# this long before dying starts the count again.
RESTART_MAX_DELAY = 30.0
RESTART_STABLE_AFTER = 60.0


def say(message: str) -> None:
    print(f"[hindsight] {message}", flush=True)


class AlreadyRunning(SystemExit):
    pass


def acquire_lock(directory: Path, url: str) -> IO[str]:
    """The data dir's lock, held for the launcher's life (the kernel drops it when the process
    dies, however it dies); it names the holder's pid and URL for the next one to say."""
    handle = open(directory / "launcher.lock", "a+")  # noqa: SIM115 - held for the process life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        pid, _, serving = handle.read().strip().partition(" ")
        raise AlreadyRunning(
            f"hindsight is already running on data dir {directory} (launcher pid "
            f"{pid or 'unknown'}{', serving ' + serving if serving else ''}).\n"
            "Stop it first (Ctrl-C in its terminal, or kill -TERM that pid), or set "
            "HINDSIGHT_DATA_DIR to run a separate instance."
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} {url}")
    handle.flush()
    return handle


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
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and any(
            embedded.process_start_time(pid) == processes[name][1] for name, pid in left.items()
        ):
            time.sleep(0.1)
        for name, pid in left.items():
            if embedded.process_start_time(pid) == processes[name][1]:
                say(f"{name} (pid {pid}) did not stop in {STOP_TIMEOUT:.0f}s; killing it")
                _signal_group(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)
    return list(left)


def _child_setup(nice: int) -> Callable[[], None]:
    """A child's `preexec_fn`: it dies with the launcher, and runs `nice` steps below it."""
    dies = embedded.dies_with_this_process()

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


def _signal_group(pid: int, signum: int) -> None:
    """A child started in its own session leads its process group (gunicorn's workers, Celery's
    pool): signal the group, else the process alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def wait_for_site(host: str, port: int, timeout: float) -> bool:
    """True once the login page answers 200: the site serves requests, not just accepts them."""
    deadline = time.monotonic() + timeout
    url = f"http://{host if host != '0.0.0.0' else '127.0.0.1'}:{port}/accounts/login/"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


# What an agent needs (the README says so); admin powers stay with people in the dashboard.
DEMO_KEY_SCOPES = ["ingest", "recall"]


def ensure_demo_key(directory: Path) -> str:
    """The demo project's key, kept in `directory`/demo-api-key; a new one if it is missing or
    no longer valid (revoked, or another database)."""
    from accounts.auth import api_key_lookup
    from accounts.services.api_keys import api_key_create, project_get_or_create

    demo = project_get_or_create(name="demo")
    key_file = directory / "demo-api-key"
    raw = key_file.read_text().strip() if key_file.exists() else ""
    if not raw or api_key_lookup(raw) is None:
        raw = api_key_create(
            project=demo, scopes=DEMO_KEY_SCOPES, name="demo (created by hindsight run)"
        ).raw
        key_file.write_text(raw)
        key_file.chmod(0o600)
    return raw


def prepare_database(directory: Path) -> tuple[str, str, str]:
    """Migrate, collect static files, ensure the admin account and the demo key.

    Returns (admin user, admin password or a hint, demo API key).
    """
    from django.core.management import call_command

    bootstrap.setup_django()  # the services are the launcher's (in the environment by now)
    say("applying migrations")
    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)

    from django.contrib.auth import get_user_model

    username = env_str("HINDSIGHT_ADMIN_USER", "admin")
    configured = os.environ.get("HINDSIGHT_ADMIN_PASSWORD", "").strip()
    if configured:
        password = configured
    else:
        password, _ = bootstrap.read_or_create_secret(
            directory / "admin-password", lambda: secrets.token_urlsafe(12)
        )
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is None:
        user = user_model.objects.create_superuser(username=username, email="", password=password)
        say(f"created the admin account '{username}'")
    elif configured and not user.check_password(configured):
        user.set_password(configured)
        user.save(update_fields=["password"])
    if not user.check_password(password):
        password = "(changed in the dashboard since it was generated)"

    raw = ensure_demo_key(directory)

    from experiences.services.reembed import experiences_to_reembed

    stale = experiences_to_reembed().count()
    if stale:
        say(
            f"{stale} experience(s) hold vectors of another embedding model than the configured "
            "one: run `.venv/bin/python manage.py reembed` so recall and dedup compare like "
            "with like"
        )

    from django.db import connections

    connections.close_all()
    return username, password, raw


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
        self.started_at: dict[str, float] = {}
        self.failures: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        self.services: list[tuple[str, Callable[[], bool], Callable[[], None]]] = []
        self.stopping = False

    def spawn(self, name: str, args: list[str], *, nice: int = 0) -> None:
        self.commands[name] = args
        self.niceness[name] = nice
        self._start(name)

    def _start(self, name: str) -> None:
        # A new session: Ctrl-C in the terminal reaches only the launcher, which then stops
        # each child exactly once (a second SIGINT would make Celery's shutdown a cold one).
        # And it dies with the launcher: no unsupervised stack after a crash.
        self.children[name] = subprocess.Popen(
            self.commands[name],
            env=self.env,
            start_new_session=True,
            preexec_fn=_child_setup(self.niceness.get(name, 0)),
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


def run(args: argparse.Namespace) -> int:
    directory = embedded.data_dir()
    os.environ["HINDSIGHT_DATA_DIR"] = str(directory)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")
    host = env_str("HINDSIGHT_HOST", "127.0.0.1")
    port = env_int("HINDSIGHT_PORT", 8000, minimum=1)
    lock = acquire_lock(directory, f"http://{host}:{port}")
    take_over(directory)
    if not port_is_free(host, port):
        say(f"port {port} on {host} is in use; set HINDSIGHT_PORT to another port")
        return 2

    supervisor = Supervisor(env={}, directory=directory)
    signal.signal(signal.SIGINT, supervisor.request_stop)
    signal.signal(signal.SIGTERM, supervisor.request_stop)

    services = EmbeddedServices(directory)
    database_url = os.environ.get("DATABASE_URL", "").strip()
    redis_url = os.environ.get("REDIS_URL", "").strip()
    code = 1
    try:
        database_url, redis_url = services.start(database_url, redis_url, supervisor, say)
        embedded.write_record(
            directory, embedded.ServiceRecord(os.getpid(), database_url, redis_url)
        )
        os.environ["DATABASE_URL"] = database_url
        os.environ["REDIS_URL"] = redis_url

        username, password, demo_key = prepare_database(directory)
        supervisor.env = dict(os.environ)
        supervisor.spawn("web", web_command(host, port, directory), nice=web_nice())
        supervisor.spawn("worker", worker_command(os.getpid()))
        if not args.no_beat:
            supervisor.spawn("beat", beat_command(directory))
        services.watch(supervisor)
        if not wait_for_site(host, port, timeout=60) and not supervisor.stopping:
            say("the web server did not answer within 60 s")
            return 1
        base = f"http://{'localhost' if host in ('127.0.0.1', '0.0.0.0') else host}:{port}"
        say("ready")
        say(f"  dashboard  {base}/  (login: {username} / {password})")
        say(f"  API        {base}/api/v1/   docs: {base}/api/docs")
        say(f"  demo key   {demo_key}   (project 'demo'; kept in {directory / 'demo-api-key'})")
        say("  Ctrl-C stops web, worker, beat and the embedded services")
        code = supervisor.watch()
    finally:
        say("stopping")
        supervisor.stop_all()
        services.stop()
        embedded.remove_record(directory)
        (directory / STACK_FILE).unlink(missing_ok=True)
        lock.close()
        say("stopped")
    return code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hindsight", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="run web, worker and beat on the configured services")
    run_parser.add_argument("--no-beat", action="store_true", help="do not start Celery beat")
    args = parser.parse_args(argv)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
