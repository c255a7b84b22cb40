"""Eval-style load: ingest and recall clients at once for a fixed time, then how far the reviews
fell behind.

    .venv/bin/python bench/load.py [--ingest-clients 12] [--recall-clients 4] [--seconds 60]

Starts the launcher on a fresh data dir and a free port (rate limit off, beat off, the worker
running: reviews compete with ingest for the same cores, as on one machine). For `--seconds`,
each ingest client posts one 20-step trajectory at a time (`POST /api/v1/traces`, a unique
external id each), and each recall client asks `POST /api/v1/recall` (k 5, a task of the same
kinds, each query new). Then it waits until every ingested trajectory is reviewed.

Figures: trajectories ingested and their rate, ingest and recall p50 / p95; when the load
stopped, the age of the oldest trajectory still waiting for its review and the backlog, then the
seconds until it drained (the headline: "no review more than 60 s behind at the end" asks both
to stay within 60 s); reviews per second during the load and after it; the largest ingest →
review delay of any trajectory; the CPU the worker and PostgreSQL spent per review during the
drain (what a shared machine distorts less than the seconds). The LAST line is one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    Site,
    cpu_by_group,  # noqa: E402
    free_port,
    percentile,
)
from bench.trajectories import TASKS, trajectory  # noqa: E402

DRAIN_TIMEOUT = 600


def _post(port: int, key: str, path: str, body: dict) -> tuple[int, float]:
    """(status, milliseconds) of one POST; gunicorn's sync workers close each connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    began = time.perf_counter()
    try:
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Authorization": f"Bearer {key}",
                              "Content-Type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        response.read()
        return response.status, (time.perf_counter() - began) * 1000
    except OSError:
        return 0, (time.perf_counter() - began) * 1000
    finally:
        conn.close()


class Clients:
    """The load: ingest and recall client threads until `until` (a monotonic time)."""

    def __init__(self, port: int, key: str, until: float, seed: int, prefix: str = "load") -> None:
        self.port, self.key, self.until, self.seed = port, key, until, seed
        self.prefix = prefix
        self.ingest_ms: list[float] = []
        self.recall_ms: list[float] = []
        self.errors: dict[str, int] = {}
        self.lock = threading.Lock()

    def _record(self, kind: str, status: int, ms: float, ok: int) -> None:
        with self.lock:
            (self.ingest_ms if kind == "ingest" else self.recall_ms).append(ms)
            if status != ok:
                self.errors[f"{kind} {status}"] = self.errors.get(f"{kind} {status}", 0) + 1

    def ingest(self, number: int) -> None:
        rng = random.Random(self.seed * 1000 + number)
        sent = 0
        while time.monotonic() < self.until:
            body = trajectory(rng, f"{self.prefix}-{number}-{sent}")
            sent += 1
            status, ms = _post(self.port, self.key, "/api/v1/traces", body)
            self._record("ingest", status, ms, 201)

    def recall(self, number: int) -> None:
        rng = random.Random(self.seed * 7000 + number)
        asked = 0
        while time.monotonic() < self.until:
            # Each query new: a task of the ingested kinds with words of its own.
            task = f"{rng.choice(TASKS)} (case {number}-{asked}, {rng.randrange(10**6)})"
            asked += 1
            status, ms = _post(self.port, self.key, "/api/v1/recall", {"task": task, "k": 5})
            self._record("recall", status, ms, 200)

    def run(self, ingest_clients: int, recall_clients: int) -> None:
        threads = [threading.Thread(target=self.ingest, args=(n,)) for n in range(ingest_clients)]
        threads += [threading.Thread(target=self.recall, args=(n,)) for n in range(recall_clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _database(site: Site):
    import psycopg

    record = json.loads((site.data_dir / "services.json").read_text())
    return psycopg.connect(record["database_url"], autocommit=True)


_OPEN = "('pending', 'queued', 'reviewing')"
_WAITING = f"SELECT count(*) FROM traces_trace WHERE review_status IN {_OPEN}"
_DONE = f"SELECT count(*) FROM traces_trace WHERE review_status NOT IN {_OPEN}"


def _statuses(db) -> dict[str, int]:
    rows = db.execute("SELECT review_status, count(*) FROM traces_trace GROUP BY 1").fetchall()
    return dict(rows)


def measure(site: Site, args: argparse.Namespace) -> dict[str, Any]:
    key = site.start()
    # Warm up: the embedding model in the web and worker processes, connections.
    warm = Clients(site.port, key, time.monotonic() + 5, args.seed + 1, prefix="warm")
    warm.run(2, 1)
    with _database(site) as db:
        while db.execute(_WAITING).fetchone()[0]:
            time.sleep(0.5)
        before = db.execute("SELECT count(*) FROM traces_trace").fetchone()[0]
        reviewed_before = db.execute(_DONE).fetchone()[0]
        clients = Clients(site.port, key, time.monotonic() + args.seconds, args.seed)
        cpu_at_start = cpu_by_group(site)
        started = time.monotonic()
        clients.run(args.ingest_clients, args.recall_clients)
        stopped = time.monotonic()
        load_seconds = stopped - started
        backlog = db.execute(_WAITING).fetchone()[0]
        # How far behind the reviews are at the end: the oldest trajectory still waiting.
        (behind,) = db.execute(
            f"SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM traces_trace "
            f"WHERE review_status IN {_OPEN}"
        ).fetchone()
        reviewed_during = db.execute(_DONE).fetchone()[0] - reviewed_before
        print(f"load stopped       after {load_seconds:.1f} s, backlog {backlog} "
              f"{_statuses(db)}", flush=True)  # fmt: skip
        cpu_at_stop = cpu_by_group(site)
        # Who had the two cores while the load ran (the web, the worker, PostgreSQL, the clients).
        load_cpu = {g: s - cpu_at_start.get(g, 0.0) for g, s in cpu_at_stop.items()}
        while (waiting := db.execute(_WAITING).fetchone()[0]) and (
            time.monotonic() - stopped < DRAIN_TIMEOUT
        ):
            time.sleep(0.5)
        drained = time.monotonic() - stopped
        cpu = {g: s - cpu_at_stop.get(g, 0.0) for g, s in cpu_by_group(site).items()}
        print(f"drain ended        after {drained:.1f} s {_statuses(db)}", flush=True)
        ingested = db.execute("SELECT count(*) FROM traces_trace").fetchone()[0] - before
        (worst,) = db.execute(
            "SELECT coalesce(max(extract(epoch FROM r.first - t.created_at)), 0) FROM "
            "traces_trace t JOIN (SELECT trace_id, min(created_at) AS first FROM traces_review "
            "GROUP BY trace_id) r ON r.trace_id = t.id WHERE t.external_id LIKE 'load-%'"
        ).fetchone()
    ingest, recall = clients.ingest_ms, clients.recall_ms
    return {
        "ingested": ingested,
        "ingested_per_s": round(ingested / load_seconds, 1),
        "ingest_p50_ms": round(statistics.median(ingest), 1) if ingest else None,
        "ingest_p95_ms": round(percentile(ingest, 95), 1) if ingest else None,
        "recalls": len(recall),
        "recall_p50_ms": round(statistics.median(recall), 1) if recall else None,
        "recall_p95_ms": round(percentile(recall, 95), 1) if recall else None,
        "reviewed_per_s_during_load": round(reviewed_during / load_seconds, 1),
        "backlog_at_stop": backlog,
        "oldest_waiting_at_stop_s": round(float(behind), 1),
        "drain_seconds": round(drained, 1),
        "drained": not waiting,
        "reviewed_per_s_after_load": round((backlog - waiting) / drained, 1) if drained else None,
        "worst_ingest_to_review_s": round(float(worst), 1),
        # Once the load stopped the web is idle: the worker's CPU and PostgreSQL's are the reviews'.
        "drain_cpu_ms_per_review": {
            group: round(cpu.get(group, 0.0) * 1000 / max(1, backlog - waiting), 1)
            for group in ("worker", "postgres")
        },
        "load_cpu_share": {
            group: round(load_cpu.get(group, 0.0) / load_seconds, 2)
            for group in ("web", "worker", "postgres", "client")
        },
        "errors": sum(clients.errors.values()),
        "errors_by_kind": clients.errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-clients", type=int, default=12)
    parser.add_argument("--recall-clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep-data", action="store_true", help="keep the temp data dir")
    args = parser.parse_args(argv)
    env = {"HINDSIGHT_RATE_LIMIT_PER_MINUTE": "0", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    data_dir = Path(tempfile.mkdtemp(prefix="hindsight-load-"))
    site = Site(data_dir, free_port(), env)
    print(f"cores              {os.cpu_count()}")
    print(f"web workers        {os.environ.get('HINDSIGHT_WEB_WORKERS', '3')} (gunicorn sync), "
          f"nice {os.environ.get('HINDSIGHT_WEB_NICE', '2')}")  # fmt: skip
    print(f"worker             celery, concurrency "
          f"{os.environ.get('HINDSIGHT_WORKER_CONCURRENCY', '2')}, running")  # fmt: skip
    print(f"load               {args.ingest_clients} ingest + {args.recall_clients} recall "
          f"clients for {args.seconds:.0f} s, one request at a time each", flush=True)  # fmt: skip
    figures: dict[str, Any] = {"errors": None, "failure": "the run did not complete"}
    try:
        figures = measure(site, args)
        print(f"ingest             {figures['ingested']} trajectories, "
              f"{figures['ingested_per_s']}/s, p50 {figures['ingest_p50_ms']} ms, "
              f"p95 {figures['ingest_p95_ms']} ms")  # fmt: skip
        print(f"recall             {figures['recalls']} queries, p50 {figures['recall_p50_ms']} "
              f"ms, p95 {figures['recall_p95_ms']} ms")  # fmt: skip
        print(f"reviews            {figures['reviewed_per_s_during_load']}/s during the load, "
              f"{figures['reviewed_per_s_after_load']}/s after it")  # fmt: skip
        print(f"behind at the end  oldest waiting {figures['oldest_waiting_at_stop_s']} s, backlog "
              f"{figures['backlog_at_stop']}, drained in "
              f"{figures['drain_seconds']} s; worst ingest -> review "
              f"{figures['worst_ingest_to_review_s']} s", flush=True)  # fmt: skip
        print(f"drain CPU          per review: worker "
              f"{figures['drain_cpu_ms_per_review']['worker']} ms, PostgreSQL "
              f"{figures['drain_cpu_ms_per_review']['postgres']} ms", flush=True)  # fmt: skip
        print("load CPU           cores used: " + ", ".join(
            f"{group} {share}" for group, share in figures["load_cpu_share"].items()
        ), flush=True)  # fmt: skip
    except RuntimeError as error:
        print(error, file=sys.stderr)
        figures["failure"] = str(error).splitlines()[0]
    finally:
        print(f"launcher stopped   exit status {site.stop()}")
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
            site.log_path.unlink(missing_ok=True)
        print(json.dumps(figures), flush=True)
    return 0 if figures.get("errors") == 0 and figures.get("drained") else 1


if __name__ == "__main__":
    raise SystemExit(main())
