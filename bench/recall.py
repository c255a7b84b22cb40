"""Recall and warnings over HTTP at a 100k-experience library, and the MCP proxy's added latency.

.venv/bin/python bench/recall.py [--experiences 100000] [--queries 300] [--data-dir DIR]
                                [--per-centre 333 | --centres N] [--small-projects 20,200,2000]
                                [--only-small] [--http-only] [--flood 20000]

Starts the real site (`hindsight run --no-beat`: gunicorn, a worker, embedded PostgreSQL +
pgvector and Redis) on a fresh data dir, seeds the demo project in process: 100k experiences
whose vectors cluster around real all-MiniLM-L6-v2 embeddings of task/advice texts (one per
333 experiences: 300 at 100k, 3,000 at 1M, as a larger library holds more distinct tasks rather
than more copies of the same ones; `--centres 300` keeps 300 at any size), with
realistic tools, statuses, scopes (80 % global) and ages (0–365 days), tasks naming services,
hosts and error codes with a long-tail frequency (what the keyword ranking reads; each query
names one too), plus 5,000 failure patterns; the HNSW index is built after the load.

Then it times, one request at a time from one client, `POST /api/v1/recall` end to end (HTTP,
auth, the local query embedding, SQL pre-filter, vector and keyword rankings, scoring, the
recall log and its write of when each returned experience was last recalled). One untimed pass
of new tasks first warms the caches as a running site's are (printed apart as the cold pass);
then each query a new task, with and without tool filters; on its own line, tasks asked
repeatedly (as an agent does at each step: the query vector is cached); then 8 agents
recalling at once (throughput and the latency each sees), `POST /api/v1/warnings`, and the
capture proxy's added latency per MCP message (experiences.mcp.latency). Also printed: the
query embedding alone (in process, the same local model), how many answers had fewer than k
items, and the HNSW index's size before and after all the recalls (recalls must not grow it).
Then the "small project in a big shared library" series: beside the demo project, projects of
--small-projects sizes, half of whose experiences sit around the same centres as the demo's
(the demo's rows crowd those neighbourhoods in the shared HNSW index) and half around 10 tasks
that a third project floods with --flood near-duplicates (20,000; cosine ~0.99 to the task),
each recalled by its own key over HTTP (half new tasks, half the flooded ones); printed per
size: latency, answers with fewer than k items, and in process how often each way of the
vector ranking ran (exact / index / index+exact) and answers shorter than exact search's.
--only-small skips the demo's series; --http-only skips the in-process comparisons (to time
code that predates them on the same --data-dir).
The setup is printed first; the last line is one JSON object with the figures. With --data-dir
the data dir is kept and reused: it is seeded only while its demo project has no experiences
(for profiling runs).
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, free_port, percentile  # noqa: E402
from bench.recall_library import SEEDING, flood_tasks, seed, texts  # noqa: E402
from bench.seeding import AGENTS, ENVIRONMENTS, TOOLS  # noqa: E402


def exact_agreement(bodies: list[dict], project_name: str = "demo") -> dict[str, float]:
    """How close recall's vector ranking gets to exact search: its candidates (`candidate_rows`,
    the way recall takes) against the same statement taking the exact way whatever the size of
    the filtered set (every distance computed). `candidates`: share of the exact candidates
    (what recall scores) that recall also found; `top5`: share of the 5 items recall returns
    after scoring that are the ones exact search would have returned; `short`: answers with
    fewer items than exact search gives; `paths`: how often each way ran (`exact`: the filtered
    set was small; `index`: the HNSW walk; `index+exact`: the walk came back short)."""
    from django.db import connection
    from django.utils import timezone
    from pgvector import Vector

    from accounts.models import Project
    from experiences.embeddings import get_embedder
    from experiences.services.recall import candidates_scored
    from experiences.services.recall_candidates import RecallQuery, candidate_rows, candidates_sql

    project = Project.objects.get(name=project_name)
    now = timezone.now()

    def top5(query: RecallQuery, rows: list[tuple]) -> set[int]:
        items = candidates_scored(rows, query=query, now=now, limit=5)
        return {item.experience.id for item in items}

    found = {"candidates": [0, 0], "top5": [0, 0]}
    paths: dict[str, int] = {}
    short = 0
    for body in bodies:
        query = RecallQuery(**body)
        (vector,) = get_embedder().embed([query.task])
        text = Vector(vector).to_text()
        with connection.cursor() as cursor:
            approximate, path = candidate_rows(cursor, project=project, query=query, vector=text)
            sql, params = candidates_sql(project=project, query=query, vector=text, exact_rows=None)
            cursor.execute(sql, params)
            exact = [row for row in cursor.fetchall() if row[-1] != "filtered"]
        paths[path] = paths.get(path, 0) + 1
        short += len(top5(query, approximate)) < len(top5(query, exact))
        for name, a, e in (
            ("candidates", {r[0] for r in approximate}, {r[0] for r in exact}),
            ("top5", top5(query, approximate), top5(query, exact)),
        ):
            found[name][0] += len(a & e)
            found[name][1] += len(e)
    figures: dict = {
        name: round(hit / total, 3) if total else 1.0 for name, (hit, total) in found.items()
    }
    return {**figures, "short": short, "paths": paths}


SHORT_ANSWERS: list[int] = []  # answers with fewer than k items, per series (see `series`)


def timed_post(url: str, key: str, body: dict) -> float:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})  # fmt: skip
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
    elapsed = (time.perf_counter() - began) * 1000
    if "k" in body and len(json.loads(answer)["items"]) < body["k"] and SHORT_ANSWERS:
        SHORT_ANSWERS[-1] += 1
    return elapsed


def concurrent_series(url: str, key: str, bodies: list[dict], clients: int) -> dict[str, float]:
    """`clients` agents recalling at once, each one request after another: throughput and the
    latency each of them sees (--web-workers gunicorn sync workers serve them)."""
    SHORT_ANSWERS.append(0)  # counted apart from the sequential series (not reported)
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda body: timed_post(url, key, body), bodies[: clients * 2]))  # warm-up
        began = time.perf_counter()
        samples = list(pool.map(lambda body: timed_post(url, key, body), bodies))
        elapsed = time.perf_counter() - began
    return {
        "clients": clients,
        "requests_per_s": round(len(samples) / elapsed, 1),
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
    }


def series(url: str, key: str, bodies: list[dict]) -> dict[str, float]:
    SHORT_ANSWERS.append(0)
    for body in bodies[:20]:  # warm-up: connections, caches, the embedding model
        timed_post(url, key, body)
    SHORT_ANSWERS[-1] = 0
    samples = [timed_post(url, key, body) for body in bodies]
    figures: dict[str, float] = {
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "p99_ms": round(percentile(samples, 99), 1),
    }
    if "k" in bodies[0]:
        figures["fewer_than_k"] = SHORT_ANSWERS[-1]
    return figures


def small_project_series(
    base: str, sizes: list[int], bodies: list[dict], *, beside: int, compare: bool = True
) -> dict[str, dict]:
    """Each small project recalled over HTTP by its own key (each task new), then the same
    tasks in process against exact search (`exact_agreement`: the ways taken, answers short)."""
    from accounts.models import Project
    from accounts.services.api_keys import api_key_create

    figures = {}
    for size in sizes:
        project = Project.objects.get(name=f"small-{size}")
        key = api_key_create(project=project, scopes=["recall"], name="bench").raw
        timed = series(f"{base}/recall", key, bodies)
        agreement = exact_agreement(bodies, project_name=project.name) if compare else {}
        figures[str(size)] = {**timed, **agreement}
        print(f"recall, a project of {size} beside one of {beside}: {figures[str(size)]}",
              flush=True)  # fmt: skip
    return figures


def query_embedding(bodies: list[dict]) -> dict[str, float]:
    """The local model embedding each query alone, in process (what recall pays before SQL)."""
    from experiences.embeddings import get_embedder
    from experiences.services.recall import _query_text
    from experiences.services.recall_candidates import RecallQuery

    embedder = get_embedder()
    embedder.embed(["warm-up"])
    samples = []
    for body in bodies:
        text = _query_text(RecallQuery(task=body["task"]))
        began = time.perf_counter()
        embedder.embed([text])
        samples.append((time.perf_counter() - began) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(percentile(samples, 95), 2)}  # fmt: skip


def index_size_mb() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('experiences_exp_embed_hnsw')")
        (size,) = cursor.fetchone()
    return round(size / 2**20, 1)


def recall_body(rng: random.Random, with_filters: bool) -> dict:
    body = {"task": texts(rng, 1)[0], "k": 5, "agent": rng.choice(AGENTS),
            "environment": rng.choice(ENVIRONMENTS)}  # fmt: skip
    if with_filters:
        body["tools"] = rng.sample(TOOLS, 6)
    return body


def demo_series(
    base: str, key: str, args: argparse.Namespace, rng: random.Random, *, compare: bool = True
) -> dict:
    """The demo project's series (100k experiences by default): their figures."""

    # A running site has the index and rows in its caches: one untimed pass of new
    # tasks first (the cold pass is printed, not the headline).
    cold = series(f"{base}/recall", key, [recall_body(rng, False) for _ in range(args.queries)])
    print(f"recall, first pass after start (cold caches; not the headline): {cold}",
          flush=True)  # fmt: skip
    index_before = index_size_mb()
    plain_bodies = [recall_body(rng, False) for _ in range(args.queries)]
    plain = series(f"{base}/recall", key, plain_bodies)
    print(f"recall, no tool filter, each task new: {plain}", flush=True)
    embedding = query_embedding(plain_bodies)
    print(f"  of which the query embedding (in process): {embedding}", flush=True)
    filtered = series(f"{base}/recall", key, [recall_body(rng, True) for _ in range(args.queries)])
    print(f"recall, 6 available tools, each task new: {filtered}", flush=True)
    # An agent recalls for its task at every step: 20 tasks, each asked repeatedly.
    pool = [recall_body(rng, True) for _ in range(20)]
    repeated = series(f"{base}/recall", key, [rng.choice(pool) for _ in range(args.queries)])
    print(f"recall, 20 tasks asked repeatedly (cached vector; not the headline): "
          f"{repeated}", flush=True)  # fmt: skip
    crowd = concurrent_series(
        f"{base}/recall", key, [recall_body(rng, True) for _ in range(args.queries)],
        clients=args.clients,
    )  # fmt: skip
    print(f"recall, {args.clients} agents at once: {crowd}", flush=True)
    index_after = index_size_mb()
    print(f"HNSW index: {index_before} MB before the recalls, {index_after} MB after",
          flush=True)  # fmt: skip
    warning_bodies = [
        {"tool": rng.choice(TOOLS), "arguments": {"target": "web", "force": True},
         "environment": rng.choice(ENVIRONMENTS)}
        for _ in range(args.queries)
    ]  # fmt: skip
    warnings = series(f"{base}/warnings", key, warning_bodies)
    print(f"warnings: {warnings}", flush=True)

    # Half with tool filters, as the timed series: 100 tasks.
    bodies = [recall_body(rng, i % 2 == 0) for i in range(100)]
    agreement = exact_agreement(bodies) if compare else {"candidates": None, "top5": None}
    print(f"agreement with exact search (share of its items): {agreement}", flush=True)
    # Filters that exclude most of the nearest cluster: one tool (each is on ~8 % of
    # the library), and one tool with a task type (~3 %).
    selective = [
        {**recall_body(rng, False), "tools": [rng.choice(TOOLS)]}
        | ({"task_type": rng.choice(["operation", "query", "analysis"])} if i % 2 else {})
        for i in range(100)
    ]
    agreement_selective = (
        exact_agreement(selective) if compare else {"candidates": None, "top5": None}
    )
    print(f"agreement with exact search, selective filters: {agreement_selective}",
          flush=True)  # fmt: skip

    from experiences.mcp.latency import measure

    proxy = measure(args.proxy_messages, 300, {"HINDSIGHT_URL": base.removesuffix("/api/v1"),
                                               "HINDSIGHT_API_KEY": key})  # fmt: skip
    print(f"proxy: {proxy}", flush=True)

    return {
            "recall_p50_ms": plain["p50_ms"], "recall_p95_ms": plain["p95_ms"],
        "recall_cold_p50_ms": cold["p50_ms"], "recall_cold_p95_ms": cold["p95_ms"],
        "recall_fewer_than_k": plain["fewer_than_k"] + filtered["fewer_than_k"],
        "query_embedding_p50_ms": embedding["p50_ms"],
        "query_embedding_p95_ms": embedding["p95_ms"],
        "hnsw_index_mb_before": index_before, "hnsw_index_mb_after": index_after,
        "recall_filtered_p50_ms": filtered["p50_ms"], "recall_filtered_p95_ms": filtered["p95_ms"],
        "recall_repeated_task_p50_ms": repeated["p50_ms"],
        "recall_repeated_task_p95_ms": repeated["p95_ms"],
        "web_workers": args.web_workers,
        "recall_concurrent_clients": crowd["clients"],
        "recall_concurrent_requests_per_s": crowd["requests_per_s"],
        "recall_concurrent_p50_ms": crowd["p50_ms"], "recall_concurrent_p95_ms": crowd["p95_ms"],
        "warnings_p50_ms": warnings["p50_ms"], "warnings_p95_ms": warnings["p95_ms"],
        "proxy_added_per_message_p50_ms": proxy["added_per_message_p50_ms"],
        "proxy_added_per_message_mean_ms": proxy["added_per_message_mean_ms"],
        "exact_agreement_candidates": agreement["candidates"],
        "exact_agreement_top5": agreement["top5"],
        "exact_agreement_selective_candidates": agreement_selective["candidates"],
        "exact_agreement_selective_top5": agreement_selective["top5"],
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiences", type=int, default=100_000)
    parser.add_argument("--patterns", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--proxy-messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8, help="agents at once, last series")
    parser.add_argument("--data-dir", type=Path, help="keep and reuse this data dir")
    parser.add_argument(
        "--per-centre",
        type=int,
        default=333,
        help="experiences per cluster centre (a real text's embedding)",
    )
    parser.add_argument("--centres", type=int, help="cluster centres, whatever the size")
    parser.add_argument(
        "--small-projects", default="20,200,2000",
        help="sizes of the small projects seeded beside the demo one (comma-separated)",
    )  # fmt: skip
    parser.add_argument("--only-small", action="store_true", help="only the small projects")
    parser.add_argument("--small-queries", type=int, default=100, help="per small project")
    parser.add_argument(
        "--flood", type=int, default=20_000,
        help="near-duplicates of 10 tasks in another project (the small projects' tasks too)",
    )  # fmt: skip
    parser.add_argument(
        "--http-only", action="store_true",
        help="no in-process comparison with exact search (to time code that predates it)",
    )  # fmt: skip
    parser.add_argument(
        "--web-workers", type=int, default=3, help="gunicorn sync workers (the site's default 3)"
    )
    args = parser.parse_args()
    centres = args.centres or max(1, round(args.experiences / args.per_centre))
    small = [int(size) for size in args.small_projects.split(",") if size.strip()]
    rng = random.Random(5)
    # The rate limit stays on (one Redis round trip per request, as in production), high enough
    # that no series is refused.
    env = {"HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000", "HINDSIGHT_LOG_LEVEL": "WARNING",
           "HINDSIGHT_WEB_WORKERS": str(args.web_workers)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-recall-") as tmp:
        data_dir = args.data_dir.resolve() if args.data_dir else Path(tmp) / "data"
        site = Site(data_dir, free_port(), env)
        try:
            key = site.start()
            base = f"http://127.0.0.1:{site.port}/api/v1"
            print(f"setup: {os.cpu_count()} cores, gunicorn {args.web_workers} sync workers, "
                  f"local MiniLM query "
                  f"embedding, {args.experiences} experiences around {centres} centres, "
                  f"{args.patterns} failure patterns, "
                  f"{args.queries} sequential requests per series", flush=True)  # fmt: skip
            seed(site.data_dir, experiences=args.experiences, patterns=args.patterns,
                 centres=centres, small=small, flood=args.flood)  # fmt: skip
            site.pause_worker()  # nothing to review: keep the cores for the measured path

            figures: dict = {"experiences": args.experiences, "centres": centres}
            if not args.only_small:
                figures.update(demo_series(base, key, args, rng, compare=not args.http_only))
            # Each small project: half new tasks, half the flood's tasks; half of each with tool
            # filters, as in the demo's series.
            bodies = [recall_body(rng, i % 4 < 2) for i in range(args.small_queries)]
            for i, body in enumerate(bodies):
                if i % 2:
                    body["task"] = flood_tasks()[i % 10]
            figures["small_projects"] = small_project_series(
                base, small, bodies, beside=args.experiences, compare=not args.http_only
            )
        finally:
            site.stop()
    figures.update({f"seed_{name}": value for name, value in SEEDING.items()})
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
