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
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
HINDSIGHT = shutil.which("hindsight", path=str(Path(sys.executable).parent)) or "hindsight"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
BANNER_END = "[hindsight]   Ctrl-C stops"


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
    """`hindsight run` (gunicorn, the worker, embedded PostgreSQL and Redis; beat too with
    `beat=True`) as a subprocess on its own data dir and port, one process at a time: `start()`
    again after `stop()` is a restart on the same data dir. `env` adds to (or, set before
    `start()`, changes) the environment it gets; external DATABASE_URL / REDIS_URL of the test
    process are never passed on."""

    def __init__(
        self, data_dir: Path, port: int | None = None, *, beat: bool = False, **env: str
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.beat = beat
        self.log = data_dir.parent / "site.log"
        self.output = ""  # the log of the current start, up to its banner
        self.process: subprocess.Popen[bytes] | None = None
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(
            HINDSIGHT_DATA_DIR=str(data_dir),
            HINDSIGHT_PORT=str(self.port),
            # One of each keeps the start quick; the supervision is the same for any count.
            HINDSIGHT_WEB_WORKERS="1",
            HINDSIGHT_WORKER_CONCURRENCY="1",
            **env,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [HINDSIGHT, "run"] if self.beat else [HINDSIGHT, "run", "--no-beat"]
        self.env["HINDSIGHT_PORT"] = str(self.port)  # a restart may move it
        with self.log.open("wb") as log:  # a fresh log per start
            self.process = subprocess.Popen(
                command, env=self.env, cwd=ROOT,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        # The last line of the banner: everything above it (URL, login, key) is printed by then.
        while BANNER_END not in (text := self.log.read_text(errors="replace")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the site did not start:\n{text[-4000:]}")
            time.sleep(0.1)
        self.output = text

    def stop(self) -> int | None:
        """SIGTERM, as Ctrl-C would; the launcher's exit status (None if it never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def key(self) -> str:
        """The demo key (ingest and recall), as the launcher keeps it in the data dir."""
        return (self.data_dir / "demo-api-key").read_text().strip()

    def pipeline_key(self) -> str:
        """A key that also reads trajectories back (`get_trace`): the demo key cannot."""
        if not hasattr(self, "_pipeline_key"):
            self._pipeline_key = running_site_key(self.data_dir, ["ingest", "recall", "read"])
        return self._pipeline_key
