"""A real Celery worker process on the suite's database and broker."""

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
_ids = itertools.count(1)


def worker_database_url() -> str:
    from django.db import connection

    info = connection.settings_dict
    return f"postgresql://{info['USER']}:{info['PASSWORD']}@/{info['NAME']}?host={info['HOST']}"


class WorkerProcess:
    def __init__(self, log: Path, extra_env: dict[str, str] | None = None) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            **(extra_env or {}),
        }
        self.log = log
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "hindsight_site",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"test-{os.getpid()}-{next(_ids)}@%h",
            ],
            env=env,
            cwd=ROOT,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while b"ready." not in log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("celery worker did not start:\n" + log.read_text()[-3000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
