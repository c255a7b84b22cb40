"""Recall and dashboard reads from a real PostgreSQL streaming replica (DATABASE_REPLICA_URL).

The replica is made from the suite's own embedded PostgreSQL with its own binaries
(`pg_basebackup -R -X stream`, `pg_ctl start`) on its own socket directory; `hindsight run`
(gunicorn, the worker) then runs with DATABASE_URL on the primary and DATABASE_REPLICA_URL on
the replica. Where a read went is proved by pausing the replica's WAL replay: a row written
since then exists only on the primary, so an answer that lacks it was read from the replica.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed

from hindsight_site import db_router, embedded
from hindsight_site.replica_middleware import PIN_COOKIE, ReplicaReadMiddleware
from tests.support.api import trajectory
from tests.support.launcher import SiteProcess
from tests.support.ports import free_port
from tests.support.waiting import wait_until
from traces.models import Trace

PIN_SECONDS = 2
ADMIN_PASSWORD = "replica-test-password"
TASK_A = "Find out why the web container keeps restarting"
TASK_B = "Rotate the expired TLS certificate of the nginx ingress controller"
TASK_C = "Work out why the nightly backup job of the billing database fails"
TASK_D = "Free disk space on the build agent before the release pipeline runs"


def _system_user() -> str | None:
    # PostgreSQL refuses to run as root; pgserver runs it as its own user then, and so do we.
    return "pgserver" if os.geteuid() == 0 else None


@dataclass
class Postgres:
    """psycopg access to one server by its socket directory."""

    socket_dir: Path

    def url(self, database: str) -> str:
        return f"postgresql://postgres:@/{database}?host={self.socket_dir}"

    def sql(self, query: str, params: tuple = (), *, database: str = "postgres") -> list[Any]:
        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []


class StreamingReplica(Postgres):
    """A hot standby of the suite's embedded server, in `root` (data/ and run/ for its socket)."""

    def __init__(self, primary_pgdata: Path, root: Path) -> None:
        super().__init__(root / "run")
        self.primary = Postgres(primary_pgdata)  # pgserver keeps its socket in its data dir
        self.root = root
        self.pgdata = root / "data"
        # The binaries of the running primary (pgserver ships more than one PostgreSQL).
        opts = (primary_pgdata / "postmaster.opts").read_text()
        self.bin = Path(shlex.split(opts)[0]).parent

    def _run(self, command: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin / command), *args], capture_output=True, timeout=60, user=_system_user()
        )
        if done.returncode != 0:
            log = self.root / "log"
            raise RuntimeError(
                f"{command} failed ({done.returncode}): {done.stderr.decode(errors='replace')}"
                + (log.read_text(errors="replace")[-2000:] if log.exists() else "")
            )

    def start(self) -> None:
        self.root.mkdir(mode=0o755)
        self.pgdata.mkdir(mode=0o700)
        self.socket_dir.mkdir()
        self.socket_dir.chmod(0o777)  # the site's processes connect here too
        if (user := _system_user()) is not None:
            for path in (self.root, self.pgdata):
                shutil.chown(path, user)
        self._run(
            "pg_basebackup", "-h", str(self.primary.socket_dir), "-U", "postgres",
            "-D", str(self.pgdata), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
            "--no-manifest",
        )  # fmt: skip
        # The primary's socket lock and log were copied with its data dir.
        for stray in (".s.PGSQL.5432.lock", "log", ".handle_pids.json"):
            (self.pgdata / stray).unlink(missing_ok=True)
        self._run(
            "pg_ctl", "-w", "-t", "60", "-D", str(self.pgdata), "-l", str(self.root / "log"),
            "-o", f"-h '' -k {self.socket_dir} -c shared_buffers=32MB", "start",
        )  # fmt: skip
        wait_until(lambda: self.sql("SELECT status FROM pg_stat_wal_receiver") == [("streaming",)])

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self._run("pg_ctl", "-w", "-t", "60", "-D", str(self.pgdata), "stop", "-m", "fast")

    def pause_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_pause()")
        wait_until(lambda: self.sql("SELECT pg_get_wal_replay_pause_state()") == [("paused",)])

    def resume_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_resume()")

    def catch_up(self) -> None:
        """Wait until the replica has replayed everything the primary wrote so far."""
        ((lsn,),) = self.primary.sql("SELECT pg_current_wal_lsn()::text")
        wait_until(lambda: self.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))[0][0])


@pytest.fixture(scope="module")
def replica() -> Iterator[StreamingReplica]:
    directory = embedded.data_dir()
    server = StreamingReplica(directory / "postgres", directory / f"replica-{os.getpid()}")
    shutil.rmtree(server.root, ignore_errors=True)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(server.root, ignore_errors=True)


@dataclass
class ReplicatedSite:
    process: SiteProcess
    replica: StreamingReplica
    database: str

    @property
    def url(self) -> str:
        return self.process.url

    def api(self, method: str, path: str, body: Any = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.process.key()}"}
        return requests.request(
            method, f"{self.url}/api/v1/{path}", json=body, headers=headers, timeout=30
        )

    def primary_sql(self, query: str, params: tuple = ()) -> list[Any]:
        return self.replica.primary.sql(query, params, database=self.database)

    def replica_sql(self, query: str, params: tuple = ()) -> list[Any]:
        return self.replica.sql(query, params, database=self.database)

    def ingest_and_distil(self, external_id: str, task: str) -> tuple[int, int]:
        """A trajectory through the API, reviewed and distilled by the site's worker: (trace id,
        the experience's id) once the experience is embedded, on the primary."""
        answer = self.api("POST", "traces", trajectory(external_id, steps=5, task=task))
        assert answer.status_code == 201, answer.text
        trace_id = answer.json()["id"]
        found = wait_until(
            lambda: self.primary_sql(
                "SELECT id FROM experiences_experience WHERE task = %s AND embedding IS NOT NULL",
                (task,),
            ),
            timeout=30,
        )
        return trace_id, found[0][0]

    def recall(self, task: str) -> dict[str, Any]:
        body = {"task": task, "environment": ["docker"], "include_candidates": True, "k": 10}
        answer = self.api("POST", "recall", body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def sign_in(self) -> requests.Session:
        browser = requests.Session()
        browser.get(f"{self.url}/accounts/login/", timeout=30)
        answer = browser.post(
            f"{self.url}/accounts/login/",
            data={
                "username": "admin",
                "password": ADMIN_PASSWORD,
                "csrfmiddlewaretoken": browser.cookies["csrftoken"],
            },
            timeout=30,
        )
        assert answer.status_code == 200 and "/traces/" in answer.url, answer.text[-500:]
        return browser


@pytest.fixture(scope="module")
def site(replica, tmp_path_factory) -> Iterator[ReplicatedSite]:
    database = f"hindsight_replica_{os.getpid()}"
    replica.primary.sql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    replica.primary.sql(f"CREATE DATABASE {database}")
    process = SiteProcess(tmp_path_factory.mktemp("replica-site") / "data", free_port())
    process.env.update(
        DATABASE_URL=replica.primary.url(database),
        DATABASE_REPLICA_URL=replica.url(database),
        HINDSIGHT_REPLICA_PIN_SECONDS=str(PIN_SECONDS),
        HINDSIGHT_ADMIN_PASSWORD=ADMIN_PASSWORD,
    )
    try:
        process.start()
        yield ReplicatedSite(process, replica, database)
    finally:
        process.stop()
        replica.primary.sql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _wait_out_the_pin() -> None:
    # The pin's signature carries whole seconds: one more second covers the rounding.
    time.sleep(PIN_SECONDS + 1.1)


def _ids(answer: dict[str, Any]) -> list[int]:
    return [item["experience_id"] for item in answer["items"]]


def _inspector(browser: requests.Session, site: ReplicatedSite, trace_id: int) -> str:
    page = browser.get(f"{site.url}/traces/{trace_id}/", timeout=30)
    assert page.status_code == 200, page.text[-500:]
    return page.text


def test_without_a_replica_every_read_and_write_goes_to_the_primary():
    assert "replica" not in settings.DATABASES  # the suite itself runs without one
    router = db_router.ReplicaRouter()
    assert router.db_for_read(Trace, replica=True) == "default"
    assert router.db_for_write(Trace) == "default"
    assert router.allow_migrate("default", "traces")
    assert not router.allow_migrate("replica", "traces")
    with pytest.raises(MiddlewareNotUsed):
        ReplicaReadMiddleware(lambda request: None)


@pytest.mark.launcher  # `hindsight run` on the primary and the replica
def test_recall_reads_the_replica_and_logs_on_the_primary(site):
    _, first = site.ingest_and_distil("replica-a", TASK_A)
    site.replica.catch_up()
    assert first in _ids(site.recall(TASK_A))

    site.replica.pause_replay()
    try:
        _, second = site.ingest_and_distil("replica-b", TASK_B)
        answer = site.recall(TASK_B)
        # Stored on the primary, not yet replayed on the replica: recall read the replica.
        assert second not in _ids(answer)
        assert not site.replica_sql("SELECT 1 FROM experiences_experience WHERE id = %s", (second,))
        # The site's one connection to the replica ran recall's reads last: the candidate query
        # (it counts the filtered rows first; pg_stat_activity keeps the first 1 kB), then the
        # returned items' requests and replays (recall_cases.same_case_of) when there are any.
        ((on_replica,),) = site.replica_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND (query LIKE %s OR query LIKE %s)",
            ("WITH counted AS MATERIALIZED%", "SELECT e.id, e.request, e.summary, e.replay%"),
        )
        assert on_replica == 1
        # The recall log was written to the primary (the replica has not even replayed it).
        log = (answer["id"],)
        assert site.primary_sql("SELECT 1 FROM experiences_recalllog WHERE id = %s", log)
        assert not site.replica_sql("SELECT 1 FROM experiences_recalllog WHERE id = %s", log)
    finally:
        site.replica.resume_replay()
    site.replica.catch_up()
    assert second in _ids(site.recall(TASK_B))


@pytest.mark.launcher  # `hindsight run` on the primary and the replica
def test_a_browser_that_posted_reads_its_own_writes_while_others_read_the_replica(site):
    trace_id, _ = site.ingest_and_distil("replica-c", TASK_C)
    site.replica.catch_up()
    writer, reader = site.sign_in(), site.sign_in()
    _wait_out_the_pin()  # signing in is a POST: both browsers start on the primary
    reason = f"relabelled while the replica lags {os.getpid()}"
    site.replica.pause_replay()
    try:
        ((version,),) = site.primary_sql(
            "SELECT label_version FROM traces_step WHERE trace_id = %s AND index = 1",
            (trace_id,),
        )
        answer = writer.post(
            f"{site.url}/traces/{trace_id}/steps/1/label/",
            data={
                "label": "redundant",
                "reason": reason,
                "version": version,
                "csrfmiddlewaretoken": writer.cookies["csrftoken"],
            },
            timeout=30,
        )
        # The relabel redirects to the inspector: the writer's next page shows its own write.
        assert answer.history and answer.history[0].status_code == 302
        assert answer.status_code == 200 and reason in answer.text
        assert PIN_COOKIE in answer.history[0].cookies
        assert site.primary_sql(
            "SELECT 1 FROM traces_step WHERE trace_id = %s AND label_reason = %s",
            (trace_id, reason),
        )
        # Another browser reads the replica, which has not replayed the relabel yet.
        assert reason not in _inspector(reader, site, trace_id)
        # Once the pin lapses the writer reads the replica again.
        _wait_out_the_pin()
        assert reason not in _inspector(writer, site, trace_id)
    finally:
        site.replica.resume_replay()
    site.replica.catch_up()
    assert reason in _inspector(reader, site, trace_id)


@pytest.mark.launcher  # `hindsight run` on the primary and the replica
def test_recall_and_pages_keep_working_when_the_replica_stops(site):
    trace_id, experience = site.ingest_and_distil("replica-d", TASK_D)
    site.replica.catch_up()
    browser = site.sign_in()
    _wait_out_the_pin()
    assert TASK_D in _inspector(browser, site, trace_id)  # read from the replica

    site.replica.stop()
    began = time.monotonic()
    assert experience in _ids(site.recall(TASK_D))
    assert TASK_D in _inspector(browser, site, trace_id)
    assert browser.get(f"{site.url}/traces/", timeout=30).status_code == 200
    assert experience in _ids(site.recall(TASK_D))
    assert time.monotonic() - began < 10
    assert "read replica unreachable" in site.process.log.read_text()
