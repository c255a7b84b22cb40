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
import os
import secrets
import signal
import socket
import sys
import time
import urllib.request
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
from hindsight_site.supervisor import STACK_FILE, Supervisor, say, take_over


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
        # A launcher that died leaves nobody to wait for: the worker's shutdown is Celery's cold
        # one (SIGQUIT), not the warm one that finishes its task first, whose broker (this
        # launcher's Redis) is going too. Its task is not acknowledged: it is delivered again,
        # or the sweeps send its trace again.
        supervisor.spawn("worker", worker_command(os.getpid()), death_signal=signal.SIGQUIT)
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
