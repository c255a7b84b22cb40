"""Review throughput of the offline reviewer, and freshness: ingest response → experience stored.

    .venv/bin/python bench/review.py [--traces 200] [--fresh 30] [--backlog 200] [--llm]

1. Throughput: in one process (= one worker), the whole review task — triggers, compression,
   heuristic review, distillation, embedding, one transaction of labels + review + experiences —
   on N realistic 20-step trajectories, one after the other. And through the real worker
   (Celery, one pool process, HINDSIGHT_WORKER_CONCURRENCY=1): a backlog of --backlog
   trajectories posted at once over the batch API, timed from the first post until every one
   is reviewed; trajectories/s per worker process.
2. Freshness: the real site (`hindsight run`, web + worker on embedded services); a trajectory is
   posted over HTTP and `GET /api/v1/experiences?trace=ID` is polled every 5 ms until its
   experience is there (stored and embedded). Measured one trajectory at a time on an idle worker.
   With --llm, the site reviews through a local OpenAI-compatible server (answering instantly), so
   the figure is the pipeline's own overhead on the LLM path.
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, free_port, percentile  # noqa: E402
from bench.ingest import trajectory  # noqa: E402
from bench.site_api import create_key  # noqa: E402


def post(url: str, key: str, body: dict) -> dict:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def get(url: str, key: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def reviewable(rng: random.Random, external_id: str) -> dict:
    body = trajectory(rng, external_id)
    body["outcome"] = "success"
    return body


def freshness(base: str, key: str, rng: random.Random, count: int) -> tuple[list[float], int]:
    """Milliseconds from the ingest response to the experience being readable; and how many
    trajectories left no experience (reviewed but not worth referencing: not a sample)."""
    samples, without = [], 0
    for i in range(count + 2):
        accepted = post(
            f"{base}/api/v1/traces", key, reviewable(rng, f"fresh-{i}-{time.time_ns()}")
        )
        began = time.perf_counter()
        polls = 0
        while not get(f"{base}/api/v1/experiences?trace={accepted['id']}", key)["items"]:
            polls += 1
            if polls % 50 == 0:
                status = get(f"{base}/api/v1/traces/{accepted['id']}", key)["review_status"]
                if status in ("reviewed", "skipped", "failed"):
                    without += 1
                    break
            if time.perf_counter() - began > 30:
                raise RuntimeError(f"trace {accepted['id']} not reviewed after 30 s")
            time.sleep(0.005)
        else:
            if i >= 2:  # the first two warm the worker (embedding model load)
                samples.append((time.perf_counter() - began) * 1000)
    return samples, without


def in_process(data_dir: Path) -> None:
    os.environ["HINDSIGHT_DATA_DIR"] = str(data_dir)  # reaches the launcher's services
    from hindsight_site.bootstrap import setup_django

    setup_django()


def worker_throughput(base: str, key: str, rng: random.Random, count: int) -> float:
    """Trajectories/s the real worker drains from a backlog posted at once (batches of 25)."""
    from traces.models import Trace

    bodies = [reviewable(rng, f"backlog-{i}-{time.time_ns()}") for i in range(count)]
    began = time.perf_counter()
    ids = []
    for start in range(0, count, 25):
        batch = {"traces": bodies[start : start + 25]}
        ids += [r["id"] for r in post(f"{base}/api/v1/traces/batch", key, batch)["results"]]
    active = Trace.objects.filter(pk__in=ids, review_status__in=["pending", "queued", "reviewing"])
    while active.exists():
        if time.perf_counter() - began > 600:
            raise RuntimeError(f"{active.count()} of {count} not reviewed after 600 s")
        time.sleep(0.2)
    return count / (time.perf_counter() - began)


def throughput(data_dir: Path, rng: random.Random, count: int) -> float:
    in_process(data_dir)
    from accounts.models import Project
    from hindsight_site.review_tasks import review_trace
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest

    project = Project.objects.create(name=f"bench-review-{time.time_ns()}")
    ids = [
        trace_ingest(
            project=project, payload=TraceIn.model_validate(reviewable(rng, f"tp-{i}"))
        ).trace.pk
        for i in range(count + 3)
    ]
    for trace_id in ids[:3]:  # warm-up
        review_trace(trace_id)
    began = time.perf_counter()
    for trace_id in ids[3:]:
        review_trace(trace_id)
    return count / (time.perf_counter() - began)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200, help="trajectories for throughput")
    parser.add_argument("--fresh", type=int, default=30, help="freshness samples")
    parser.add_argument(
        "--backlog", type=int, default=200, help="trajectories the real worker drains at once"
    )
    parser.add_argument(
        "--llm", action="store_true", help="review through a local OpenAI-compatible server"
    )
    args = parser.parse_args()
    rng = random.Random(7)
    env = {"HINDSIGHT_RATE_LIMIT_PER_MINUTE": "0", "HINDSIGHT_WORKER_CONCURRENCY": "1"}
    fake = None
    if args.llm:
        from tests.support.fake_openai import FakeOpenAI

        fake = FakeOpenAI().start()
        env.update({"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-review-") as tmp:
        site = Site(Path(tmp) / "data", free_port(), env)
        try:
            site.start()
            key = create_key(site, "demo")  # it reads back (the demo key only sends and recalls)
            base = f"http://127.0.0.1:{site.port}"
            print(
                f"setup: {os.cpu_count()} cores, 20-step trajectories, reviewer "
                f"{'llm (local OpenAI-compatible server)' if args.llm else 'heuristic'}, "
                f"local MiniLM "
                f"embeddings, 1 worker process",
                flush=True,
            )
            samples, without = freshness(base, key, rng, args.fresh)
            print(
                f"freshness over {len(samples)} trajectories: "
                f"p50 {statistics.median(samples):.0f} ms, "
                f"p95 {percentile(samples, 95):.0f} ms",
                flush=True,
            )
            in_process(site.data_dir)
            drained = worker_throughput(base, key, rng, args.backlog)
            print(f"worker throughput: {drained:.1f} trajectories/s per worker process "
                  f"(a backlog of {args.backlog}, through Celery)", flush=True)  # fmt: skip
            rate = 0.0
            if not args.llm:
                site.pause_worker()  # the in-process run has the cores to itself
                rate = throughput(site.data_dir, rng, args.traces)
                print(f"throughput: {rate:.1f} trajectories/s in one process", flush=True)
                from django.db import connections

                connections.close_all()
        finally:
            site.stop()
            if fake:
                fake.stop()
    figures = {
        "reviewer": "llm" if args.llm else "heuristic",
        "freshness_p50_ms": round(statistics.median(samples), 1),
        "freshness_p95_ms": round(percentile(samples, 95), 1),
        "freshness_max_ms": round(max(samples), 1),
        "samples": len(samples),
        "reviewed_without_experience": without,
        "worker_backlog": args.backlog,
        "worker_trajectories_per_s": round(drained, 1),
    }
    if not args.llm:
        figures["trajectories_per_s_per_worker"] = round(rate, 1)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
