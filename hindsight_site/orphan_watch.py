"""A worker that `hindsight run` started dies with it, even when its own shutdown hangs.

The launcher names its worker `worker-<launcher pid>@<host>` and gives it a parent-death signal
(SIGQUIT, Celery's cold shutdown). That shutdown can still hang on the broker, which was the
launcher's embedded Redis and went with it, or the signal can come before Celery's handlers are
in place. So the worker also watches its parent: once the launcher is gone, Celery's shutdown
gets GRACE_SECONDS, then the worker's process group (its own session, where the launcher started
it: the worker and its pool) is killed. A worker of another name (Compose, systemd, a terminal)
is never watched.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time

from hindsight_site import embedded

GRACE_SECONDS = 10.0
POLL_SECONDS = 1.0

_LAUNCHED = re.compile(r"worker-(\d+)@")


def worker_hostname(launcher_pid: int) -> str:
    """The `--hostname` the launcher gives its worker (`%h` is Celery's host name)."""
    return f"worker-{launcher_pid}@%h"


def launcher_pid(hostname: str) -> int | None:
    """The launcher's pid named by a worker's host name, or None when no launcher started it."""
    match = _LAUNCHED.match(hostname)
    return int(match.group(1)) if match else None


def watch(launcher: int, grace: float = GRACE_SECONDS) -> threading.Thread | None:
    """Start watching `launcher` from this process; None when it is alive but not the parent
    (the name was given by hand to a worker that `hindsight run` did not start)."""
    if os.getppid() != launcher and embedded.pid_is_alive(launcher):
        return None

    def run() -> None:
        while os.getppid() == launcher:
            time.sleep(POLL_SECONDS)
        time.sleep(grace)
        if os.getpgid(0) == os.getpid():  # a group of its own: this process and its pool
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=run, name="launcher-watch", daemon=True)
    thread.start()
    return thread
