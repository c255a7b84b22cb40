"""Dedup cost per new experience at a 1k and at a 100k library (target: within 2×).

    .venv/bin/python bench/dedup.py [--small 1000] [--large 100000] [--probes 200]

Runs in process against embedded PostgreSQL + pgvector in a fresh temporary data dir. The
library is synthetic: clustered 384-d unit vectors with realistic tools, scopes and ages. Each
probe is a new experience near a random library member at a random distance (so some merge,
some are proposed, most stay new, as in real traffic); the timed call is the whole
`experience_dedup` service: HNSW neighbour query, then merge / proposal / nothing. Prints the
setup; the last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(data_dir: str) -> None:
    os.environ["HINDSIGHT_DATA_DIR"] = data_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("HINDSIGHT_LOG_LEVEL", "WARNING")
    from django.core.management import call_command

    from hindsight_site import bootstrap

    bootstrap.setup_django()
    call_command("migrate", verbosity=0)


def probe(rng: np.random.Generator, library: np.ndarray, count: int) -> np.ndarray:
    from bench.seeding import unit

    picks = library[rng.integers(0, len(library), size=count)]
    # Mostly far (new), some close (proposal band), a few near-identical (auto-merge band).
    noise = rng.choice([0.002, 0.02, 0.08], size=(count, 1), p=[0.1, 0.2, 0.7])
    return unit(picks + rng.normal(0, 1, size=picks.shape) * noise).astype(np.float32)


def measure(project, library: np.ndarray, rng: np.random.Generator, probes: int, seed: int) -> dict:
    from bench.seeding import experience_rows
    from experiences.models import Experience
    from experiences.services.dedup import experience_dedup

    rows = list(experience_rows(project, probe(rng, library, probes), seed=seed))
    Experience.objects.bulk_create(rows)  # through the index: a normal write
    timings, outcomes = [], {}
    for row in rows:
        began = time.perf_counter()
        outcome = experience_dedup(experience_id=row.pk)
        timings.append((time.perf_counter() - began) * 1000)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    timings.sort()
    return {
        "p50_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(len(timings) * 0.95) - 1], 2),
        "mean_ms": round(statistics.fmean(timings), 2),
        "outcomes": outcomes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=500)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hindsight-bench-dedup-") as data_dir:
        setup_django(data_dir)
        from accounts.models import Project
        from bench.seeding import bulk_load, clustered_vectors, experience_rows, unit

        rng = np.random.default_rng(42)
        centers = unit(rng.normal(0, 1, size=(args.clusters, 384)))
        project = Project.objects.create(name="bench-dedup")
        from django.db import connection

        from experiences.models import Experience
        from experiences.services.reembed import HNSW_INDEX

        index = next(i for i in Experience._meta.indexes if i.name == HNSW_INDEX)
        with connection.cursor() as cursor:
            cursor.execute("SHOW hnsw.ef_search")
            (ef_search,) = cursor.fetchone()
        print(
            f"setup: {os.cpu_count()} cores, 384-d clustered vectors ({args.clusters} clusters), "
            f"{args.probes} new experiences per library size, HNSW m={index.m} "
            f"ef_construction={index.ef_construction} ef_search={ef_search}, "
            "hnsw.iterative_scan=relaxed_order",
            flush=True,
        )

        library, _ = clustered_vectors(rng, centers, args.small, noise=0.05)
        bulk_load(experience_rows(project, library, seed=1))
        small = measure(project, library, rng, args.probes, seed=2)
        print(f"library {args.small:>7}: {small}", flush=True)

        began = time.perf_counter()
        more, _ = clustered_vectors(rng, centers, args.large - args.small - args.probes, noise=0.05)
        bulk_load(experience_rows(project, more, seed=3))
        print(
            f"loaded {args.large} experiences and built the HNSW index in "
            f"{time.perf_counter() - began:.0f} s",
            flush=True,
        )
        library = np.concatenate([library, more])
        large = measure(project, library, rng, args.probes, seed=4)
        print(f"library {args.large:>7}: {large}", flush=True)

        figures = {
            "library_small": args.small,
            "library_large": args.large,
            "probes": args.probes,
            "small_p50_ms": small["p50_ms"],
            "small_p95_ms": small["p95_ms"],
            "large_p50_ms": large["p50_ms"],
            "large_p95_ms": large["p95_ms"],
            "ratio_p50": round(large["p50_ms"] / small["p50_ms"], 2),
            "ratio_mean": round(large["mean_ms"] / small["mean_ms"], 2),
            "outcomes_large": large["outcomes"],
        }
        from django.db import connections

        connections.close_all()
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
