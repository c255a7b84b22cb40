"""A launched site: `hindsight run` (gunicorn, the worker, embedded PostgreSQL and Redis) as a
subprocess on its own data dir and port, and keys written straight into its database."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hindsight_site import embedded

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = shutil.which("hindsight", path=str(Path(sys.executable).parent)) or "hindsight"


def running_site_key(data_dir: Path, scopes: list[str], project: str = "demo") -> str:
    """A new key of the running site on `data_dir` (its launcher's database, found through its
    record), written straight into its table: `manage.py create_api_key` costs a Django start
    (~3 s) per launched site. The demo key has no `read` scope; tests that read back get this."""
    import secrets

    import psycopg

    from accounts.auth import hash_key
    from accounts.services.api_keys import KEY_PREFIX, VISIBLE_PREFIX_CHARS

    record = embedded.read_record(data_dir)
    assert record is not None, f"no running site on {data_dir}"
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    with psycopg.connect(record.database_url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO traces_apikey (project_id, name, prefix, key_hash, scopes, created_at) "
            "SELECT id, 'tests', %s, %s, %s, now() FROM traces_project WHERE name = %s",
            [raw[:VISIBLE_PREFIX_CHARS], hash_key(raw), sorted(scopes), project],
        )
    return raw


class SiteProcess:
    """`hindsight run --no-beat` (gunicorn, the worker, embedded PostgreSQL and Redis) on its
    own data dir and port."""

    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log = data_dir.parent / "site.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(
            HINDSIGHT_DATA_DIR=str(data_dir),
            HINDSIGHT_PORT=str(port),
            HINDSIGHT_WEB_WORKERS="1",
            HINDSIGHT_WORKER_CONCURRENCY="1",
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1  # the log is appended to: wait for one more "ready" than before
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [HINDSIGHT, "run", "--no-beat"],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 120
        marker = b"[hindsight] ready"
        while self.log.read_bytes().count(marker) < self.starts:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("the site did not start:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def key(self) -> str:
        """The demo key: ingest and recall."""
        return (self.data_dir / "demo-api-key").read_text().strip()

    def pipeline_key(self) -> str:
        """A key that also reads trajectories back (`get_trace`)."""
        if not hasattr(self, "_pipeline_key"):
            self._pipeline_key = running_site_key(self.data_dir, ["ingest", "recall", "read"])
        return self._pipeline_key
