"""A benchmark site as its users and operators reach it: the HTTP API with a key (retrying
rate-limited calls, ingesting runs in batches of 50), read-only SQL on its PostgreSQL (the
address in the data dir's services.json), and a new API key from `manage.py create_api_key`."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.common import ROOT, Site
from bench.datasets import Run


class Api:
    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.base}/api/v1/{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        for _attempt in range(20):
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                if error.code != 429:
                    detail = error.read()[:500]
                    raise RuntimeError(f"{method} {path}: {error.code} {detail!r}") from None
                time.sleep(float(error.headers.get("Retry-After", "1")))
        raise RuntimeError(f"{method} {path}: rate limited 20 times")

    def ingest(self, runs: list[Run]) -> None:
        for start in range(0, len(runs), 50):
            batch = [r.body for r in runs[start : start + 50]]
            # Transcripts go through the import endpoint, as an agent that logs them would.
            path = "traces/import/batch" if "format" in batch[0] else "traces/batch"
            results = self.call("POST", path, {"traces": batch})["results"]
            bad = [r for r in results if r["status"] not in ("created", "duplicate")]
            if bad:
                raise RuntimeError(f"ingest refused: {bad[:3]}")


# ---------------------------------------------------------------------------- database reads


class Db:
    """Read-only figures straight from the site's PostgreSQL (its address in services.json)."""

    def __init__(self, data_dir: Path) -> None:
        import psycopg

        record = json.loads((data_dir / "services.json").read_text())
        self.connection = psycopg.connect(record["database_url"], autocommit=True)

    def rows(self, sql: str, *params) -> list[tuple]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def project_id(self, name: str) -> int:
        return self.rows("SELECT id FROM traces_project WHERE name = %s", name)[0][0]

    def wait_idle(self, project: int, timeout: float = 900) -> float:
        """Until no trace of the project waits for review, no experience for its dedup and no
        task family for its induction."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            (busy,) = self.rows(
                "SELECT (SELECT count(*) FROM traces_trace WHERE project_id = %s AND "
                "review_status IN ('pending', 'queued', 'reviewing')) + (SELECT count(*) FROM "
                "experiences_experience e JOIN experiences_experiencededupdue d ON d.experience_id "
                "= e.id WHERE project_id = %s AND merged_into_id IS NULL AND embedding IS NOT "
                "NULL AND status NOT IN ('archived', 'rejected')) + (SELECT count(*) FROM "
                "experiences_taskfamily WHERE project_id = %s AND induced_size < size)",
                project,
                project,
                project,
            )[0]
            if busy == 0:
                return time.monotonic() - started
            time.sleep(0.5)
        raise RuntimeError(f"project {project}: the worker did not finish in {timeout} s")

    def trace_ids(self, project: int) -> dict[int, str]:
        rows = self.rows("SELECT id, external_id FROM traces_trace WHERE project_id = %s", project)
        return dict(rows)


def manage(site: Site, *arguments: str) -> str:
    """`manage.py ARGUMENTS` on the site's database and broker (as its operator would run it);
    its standard output."""
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", *arguments],
        cwd=ROOT, env=site.env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {arguments[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def create_key(site: Site, project: str) -> str:
    answer = manage(site, "create_api_key", "--project", project, "--scopes", "ingest,recall,admin")
    return answer.strip().splitlines()[-1]


REFRESH_KEYWORD_STATISTICS = (
    "from experiences.services.keyword_stats import keyword_stats_refresh; "
    "keyword_stats_refresh(force=True)"
)


def keyword_statistics_refresh(site: Site) -> None:
    """What beat's minute and autovacuum do on a user's site once a burst of reviews is over
    (the benchmark site runs `--no-beat`): analyze the library and copy the word statistics
    recall weighs its keywords by. Without it the probes met the statistics of whenever the
    worker last analyzed, a moment that depends on timing, and two serial runs of one code
    ranked near-ties differently."""
    manage(site, "shell", "-c", REFRESH_KEYWORD_STATISTICS)
