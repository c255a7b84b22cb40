"""Ingest throughput through the real site: `hindsight run` as a subprocess, HTTP batch ingest.

    .venv/bin/python bench/ingest.py [--traces 4000] [--batch 25] [--concurrency 4]
                                     [--web-workers N] [--worker paused|running]
                                     [--otlp EXPORTS [--otlp-spans 8192]]

Starts the launcher on a fresh data dir and a free port (rate limit off, beat off), waits until it
is ready, then posts 20-step trajectories to `POST /api/v1/traces/batch` from several client
threads: a warm-up, then a timed run. By default the Celery worker is paused during the run, so
the figure is ingest alone (reviews queue up in Redis, as they would behind a busy worker pool).
The setup and the CPU seconds used by each part (web, PostgreSQL, worker, ...) are printed
first; the LAST line is one JSON object with the figures, so scripts can `tail -n 1` it.

`--otlp EXPORTS`: the OTLP series instead. Each export is what an OpenTelemetry Collector sends
by default, 8,192 spans (1,024 agent runs of 8 spans, bench/otlp_exports.py), posted as protobuf
to `POST /api/v1/otlp/v1/traces` from the client threads, with the worker running (it stores the
traces the answer leaves to it). Figures: spans/s and p50 / p95 per export as answered, then
the time until every trajectory is stored (the user's whole wait) and trajectories/s over it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, cpu_by_group, free_port, percentile  # noqa: E402
from bench.trajectories import STEPS_PER_TRACE, batch_bodies, trajectory  # noqa: E402

__all__ = ["main", "trajectory"]  # trajectory: bench/review.py takes it from here


# ---------------------------------------------------------------------------- the client


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    created: int = 0
    errors: int = 0
    first_error: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


OTLP_PATH = "/api/v1/otlp/v1/traces"


def post_batch(
    port: int, key: str, body: bytes, path: str = "/api/v1/traces/batch"
) -> tuple[int, bytes]:
    # gunicorn's sync workers close the connection after each response: one connection a request.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    content_type = "application/x-protobuf" if path == OTLP_PATH else "application/json"
    try:
        conn.request(
            "POST",
            path,
            body=body,
            headers={"Authorization": f"Bearer {key}", "Content-Type": content_type},
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def run_load(
    port: int, key: str, bodies: list[bytes], concurrency: int, *, otlp: bool = False
) -> tuple[Tally, float]:
    tally = Tally()
    queue = list(reversed(bodies))
    queue_lock = threading.Lock()

    def client() -> None:
        while True:
            with queue_lock:
                if not queue:
                    return
                body = queue.pop()
            began = time.perf_counter()
            try:
                status, answer = post_batch(port, key, body, *([OTLP_PATH] if otlp else []))
            except OSError as error:
                status, answer = 0, str(error).encode()
            elapsed = (time.perf_counter() - began) * 1000
            with tally.lock:
                tally.latencies_ms.append(elapsed)
                if status != 200:
                    tally.errors += 1
                    tally.first_error = tally.first_error or f"HTTP {status}: {answer[:300]!r}"
                    continue
                if otlp:
                    tally.errors += _otlp_rejected(answer)
                    continue
                for result in json.loads(answer)["results"]:
                    if result["status"] == "created":
                        tally.created += 1
                    else:
                        tally.errors += 1
                        tally.first_error = tally.first_error or json.dumps(result)[:300]

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.perf_counter() - began


def _otlp_rejected(answer: bytes) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    return ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=4000, help="trajectories in the timed run")
    parser.add_argument("--batch", type=int, default=25, help="trajectories per request")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--warmup", type=int, default=400, help="trajectories before timing")
    parser.add_argument("--web-workers", type=int, default=None,
                        help="HINDSIGHT_WEB_WORKERS for the launcher (its default: 3)")  # fmt: skip
    parser.add_argument(
        "--worker",
        choices=["paused", "running"],
        default="paused",
        help="paused (default): the Celery worker is stopped during the run, so the figure is "
        "ingest alone and the reviews queue up; running: reviews compete for the same cores",
    )
    parser.add_argument(
        "--library-traces",
        type=int,
        default=0,
        help="seed this many 20-step trajectories (another project, set-based SQL) before the "
        "warm-up, to measure ingest into a large library (500000: 10M steps)",
    )
    parser.add_argument("--otlp", type=int, default=0, metavar="EXPORTS",
                        help="the OTLP series: this many timed exports (see above)")  # fmt: skip
    parser.add_argument("--otlp-spans", type=int, default=8192, help="spans per OTLP export")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep-data", action="store_true", help="keep the temp data dir")
    args = parser.parse_args(argv)
    if args.otlp:
        return main_otlp(args)

    rng = random.Random(args.seed)
    warmup = batch_bodies(rng, prefix="warm", traces=args.warmup, batch=args.batch)
    timed = batch_bodies(rng, prefix="run", traces=args.traces, batch=args.batch)
    payload_bytes = sum(len(b) for b in timed) / max(args.traces, 1)

    env = {"HINDSIGHT_RATE_LIMIT_PER_MINUTE": "0", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    if args.web_workers is not None:
        env["HINDSIGHT_WEB_WORKERS"] = str(args.web_workers)
    web_workers = env.get("HINDSIGHT_WEB_WORKERS") or os.environ.get("HINDSIGHT_WEB_WORKERS", "3")

    data_dir = Path(tempfile.mkdtemp(prefix="hindsight-bench-"))
    site = Site(data_dir, free_port(), env)
    print(f"cores              {os.cpu_count()}")
    print(f"web workers        {web_workers} (gunicorn sync)")
    celery = os.environ.get("HINDSIGHT_WORKER_CONCURRENCY", "2")
    print(f"same machine       client, PostgreSQL, Redis, celery worker (concurrency {celery}, "
          f"{args.worker} during the run)")  # fmt: skip
    print(f"launcher env       {' '.join(f'{k}={v}' for k, v in sorted(env.items()))}")
    print(f"batch              {args.batch} trajectories x {STEPS_PER_TRACE} steps")
    print(f"concurrency        {args.concurrency} client threads")
    print(f"payload            {payload_bytes / 1024:.1f} KiB per trajectory (JSON), "
          f"{payload_bytes * args.batch / 1024:.0f} KiB per request")  # fmt: skip
    print(f"timed run          {args.traces} trajectories after {args.warmup} warm-up")
    print(f"library            {args.library_traces} trajectories x 20 steps seeded first")
    print(f"data dir           {data_dir}", flush=True)
    figures: dict[str, Any] = {"errors": None, "failure": "the run did not complete"}
    try:
        figures = measure(
            site, warmup, timed, args.concurrency, pause=args.worker == "paused",
            library_traces=args.library_traces,
        )  # fmt: skip
    except RuntimeError as error:
        print(error, file=sys.stderr)
        figures["failure"] = str(error).splitlines()[0]
    finally:
        _site_done(site, data_dir, figures, keep=args.keep_data)
    return 0 if figures.get("errors") == 0 else 1


def _site_done(site: Site, data_dir: Path, figures: dict[str, Any], *, keep: bool) -> None:
    """Stop the site, remove its data unless kept, print the figures as the last line."""
    print(f"launcher stopped   exit status {site.stop()}")
    if not keep:
        shutil.rmtree(data_dir, ignore_errors=True)
        site.log_path.unlink(missing_ok=True)
    print(json.dumps(figures), flush=True)


def storage_per_step(site: Site) -> dict[str, float]:
    """Bytes on disk per stored step (table with its TOAST, and its indexes), and how much of it
    is raw observation text (what HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS drops)."""
    import psycopg

    record = json.loads((site.data_dir / "services.json").read_text())
    with psycopg.connect(record["database_url"], autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE traces_step")
        count, table, indexes, raw = connection.execute(
            "SELECT count(*), pg_table_size('traces_step'), pg_indexes_size('traces_step'), "
            "coalesce(sum(pg_column_size(observation_raw)), 0) FROM traces_step"
        ).fetchone()
    count = max(count, 1)
    return {
        "bytes_per_step": round((table + indexes) / count),
        "bytes_per_step_table": round(table / count),
        "bytes_per_step_indexes": round(indexes / count),
        "bytes_per_step_raw_observation": round(raw / count),
    }


def seed_library(site: Site, traces: int) -> float:
    """`traces` reviewed 20-step trajectories in a project of their own, with bench/pages.py's
    set-based SQL (the triggers run as for any write); returns the seconds it took."""
    import psycopg

    from bench.pages import SEED_STEPS, SEED_TRACES

    record = json.loads((site.data_dir / "services.json").read_text())
    started = time.perf_counter()
    with psycopg.connect(record["database_url"], autocommit=True) as connection:
        (project,) = connection.execute(
            "INSERT INTO traces_project (name, review_guidelines, created_at) "
            "VALUES ('library', '', now()) RETURNING id"
        ).fetchone()
        with connection.transaction():
            connection.execute(SEED_TRACES, {"project": project, "n": traces, "steps": 20})
            connection.execute(SEED_STEPS, {"project": project, "steps": 20})
        connection.execute("ANALYZE traces_trace")
        connection.execute("ANALYZE traces_step")
    return time.perf_counter() - started


def measure(
    site: Site, warmup: list[bytes], timed: list[bytes], concurrency: int, *, pause: bool,
    library_traces: int = 0,
) -> dict[str, Any]:  # fmt: skip
    started = time.perf_counter()
    key = site.start()
    print(f"launcher ready in  {time.perf_counter() - started:.1f} s", flush=True)
    if library_traces:
        seconds = seed_library(site, library_traces)
        print(f"library seeded     {library_traces * 20} steps in {seconds:.0f} s", flush=True)
    if pause:
        print(f"review worker      paused ({site.pause_worker()} processes SIGSTOPped)")
    run_load(site.port, key, warmup, concurrency)
    before = cpu_by_group(site)
    tally, seconds = run_load(site.port, key, timed, concurrency)
    after = cpu_by_group(site)
    cpu = {group: round(after[group] - before.get(group, 0.0), 1) for group in sorted(after)}
    if tally.first_error:
        print(f"first error        {tally.first_error}")
    cores = os.cpu_count() or 1
    used = ", ".join(f"{group} {value:.1f}" for group, value in cpu.items())
    print(f"CPU seconds        {used} (of {cores * seconds:.1f} available in {seconds:.1f} s)")
    steps = tally.created * STEPS_PER_TRACE
    # On a shared machine the wall-clock figure depends on everyone else's load; the CPU the
    # server side (web, PostgreSQL, Redis, worker) spent per step does not.
    server_cpu = sum(v for k, v in cpu.items() if k not in ("client", "launcher"))
    batches = max(len(tally.latencies_ms), 1)
    ceiling = steps / server_cpu * cores if server_cpu else 0.0
    print(f"server CPU         {server_cpu / batches * 1000:.0f} ms per batch; "
          f"{ceiling:.0f} steps/s if the server had all {cores} cores to itself")  # fmt: skip
    storage = storage_per_step(site)
    print(f"storage            {storage}", flush=True)
    return {
        **storage,
        "steps_per_s": round(steps / seconds, 1),
        "traces_per_s": round(tally.created / seconds, 1),
        "p50_batch_ms": round(percentile(tally.latencies_ms, 50), 1),
        "p95_batch_ms": round(percentile(tally.latencies_ms, 95), 1),
        "total_steps": steps,
        "seconds": round(seconds, 2),
        "errors": tally.errors,
        "cpu_seconds": cpu,
        "server_cpu_ms_per_batch": round(server_cpu / batches * 1000, 1),
        "cpu_bound_steps_per_s": round(ceiling, 1),
    }


def main_otlp(args: argparse.Namespace) -> int:
    from bench.otlp_exports import SPANS_PER_TRACE, export_bodies

    rng = random.Random(args.seed)
    per_export = max(args.otlp_spans // SPANS_PER_TRACE, 1)
    warmup = export_bodies(rng, first=0, exports=1, spans=args.otlp_spans)
    timed = export_bodies(rng, first=per_export, exports=args.otlp, spans=args.otlp_spans)
    env = {"HINDSIGHT_RATE_LIMIT_PER_MINUTE": "0", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    if args.web_workers is not None:
        env["HINDSIGHT_WEB_WORKERS"] = str(args.web_workers)
    data_dir = Path(tempfile.mkdtemp(prefix="hindsight-bench-"))
    site = Site(data_dir, free_port(), env)
    print(f"cores              {os.cpu_count()}")
    print(
        f"export             {per_export * SPANS_PER_TRACE} spans ({per_export} runs x "
        f"{SPANS_PER_TRACE}), {sum(map(len, timed)) / len(timed) / 1024:.0f} KiB protobuf"
    )
    print(f"timed run          {args.otlp} exports from {args.concurrency} client threads, "
          "after 1 warm-up export; worker running")  # fmt: skip
    figures: dict[str, Any] = {"errors": None, "failure": "the run did not complete"}
    try:
        key = site.start()
        run_load(site.port, key, warmup, 1, otlp=True)
        _wait_stored(site, per_export, timeout=600)
        began = time.perf_counter()
        tally, seconds = run_load(site.port, key, timed, args.concurrency, otlp=True)
        stored_after = _wait_stored(site, per_export * (args.otlp + 1), timeout=1800) - began
        spans = per_export * SPANS_PER_TRACE * args.otlp
        figures = {
            "spans_per_s_answered": round(spans / seconds, 1),
            "p50_export_ms": round(percentile(tally.latencies_ms, 50), 1),
            "p95_export_ms": round(percentile(tally.latencies_ms, 95), 1),
            "stored_after_s": round(stored_after, 2),
            "trajectories_per_s_stored": round(per_export * args.otlp / stored_after, 1),
            "exports": args.otlp,
            "errors": tally.errors,
        }
        if tally.first_error:
            print(f"first error        {tally.first_error}")
        print(f"answered           {figures['spans_per_s_answered']:.0f} spans/s, p50 "
              f"{figures['p50_export_ms']:.0f} ms, p95 {figures['p95_export_ms']:.0f} ms per "
              "export")  # fmt: skip
        print(f"stored             every trajectory {stored_after:.1f} s after the first post "
              f"({figures['trajectories_per_s_stored']:.0f} trajectories/s)")  # fmt: skip
    except RuntimeError as error:
        print(error, file=sys.stderr)
        figures["failure"] = str(error).splitlines()[0]
    finally:
        _site_done(site, data_dir, figures, keep=args.keep_data)
    return 0 if figures.get("errors") == 0 else 1


def _wait_stored(site: Site, traces: int, *, timeout: float) -> float:
    """Wait until the site holds `traces` trajectories; the moment (perf_counter) it did."""
    import psycopg

    record = json.loads((site.data_dir / "services.json").read_text())
    deadline = time.perf_counter() + timeout
    with psycopg.connect(record["database_url"], autocommit=True) as connection:
        while True:
            (count,) = connection.execute("SELECT count(*) FROM traces_trace").fetchone()
            if count >= traces:
                return time.perf_counter()
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {count} of {traces} trajectories stored in time")
            time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
