"""Synthetic experience libraries for benchmarks: clustered vectors, realistic scopes and ages.

Used in-process (Django set up against a benchmark data dir). Bulk loads drop the HNSW index
first and rebuild it afterwards, as pgvector recommends.
"""

from __future__ import annotations

import random
from datetime import timedelta

import numpy as np

TOOLS = [
    "docker_logs",
    "docker_ps",
    "docker_restart",
    "kubectl_get",
    "kubectl_logs",
    "kubectl_apply",
    "kubectl_rollout",
    "sql_query",
    "http_get",
    "read_file",
    "write_file",
    "shell",
    "git_diff",
    "git_log",
    "pytest",
    "pip_install",
    "terraform_plan",
    "terraform_apply",
    "aws_s3_ls",
    "aws_ec2_describe",
    "grep",
    "curl",
    "journalctl",
    "systemctl",
    "helm_upgrade",
    "redis_cli",
    "psql",
    "web_search",
    "browser_open",
    "send_email",
]
ENVIRONMENTS = [["docker"], ["k8s"], ["k8s", "aws"], ["bare-metal"], ["docker", "gcp"], []]
AGENTS = ["ops-bot", "data-bot", "support-bot", "code-bot"]
TASKS = [
    "the web container keeps restarting",
    "the nightly ETL job times out",
    "rotate the TLS certificate",
    "p95 latency of checkout doubled",
    "migrate the orders table",
    "a deploy failed with exit code 137",
    "disk is full on the database host",
    "the CI tests are flaky",
    "users cannot log in",
    "the S3 bucket policy denies uploads",
    "helm upgrade hangs",
    "redis memory is near the limit",
]
# What real tasks name besides their kind: services, hosts, error codes, tickets. How often each
# occurs follows a long tail (Pareto, alpha 0.8: the most common name is in ~40 % of the library,
# most are in a handful of rows), the shape of identifiers in real logs.
ENTITY_KINDS = ["svc", "host", "err", "ticket", "job"]


def entity(rng: random.Random) -> str:
    return f"{rng.choice(ENTITY_KINDS)}-{min(int(rng.paretovariate(0.8)), 99_999)}"


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def clustered_vectors(
    rng: np.random.Generator, centers: np.ndarray, n: int, noise: float
) -> tuple[np.ndarray, np.ndarray]:
    """n vectors around random centers; returns (vectors, the center index of each)."""
    which = rng.integers(0, len(centers), size=n)
    points = centers[which] + rng.normal(0, noise, size=(n, centers.shape[1]))
    return unit(points).astype(np.float32), which


def experience_rows(
    project,
    vectors: np.ndarray,
    *,
    seed: int,
    statuses=("approved",) * 7 + ("promoted",) + ("candidate",) * 2,
):
    """One unsaved Experience per vector (yielded: `vectors` may be a generator of rows)."""
    from django.utils import timezone

    from experiences.models import Experience
    from traces.review.scene import keywords_of

    rng = random.Random(seed)
    now = timezone.now()
    for vector in vectors:
        task = f"{rng.choice(TASKS)} on {entity(rng)} ({entity(rng)})"
        tools = rng.sample(TOOLS, rng.randint(1, 4))
        scope = rng.random()
        yield Experience(
            project=project,
            task=task,
            summary=task[:300],
            keywords=keywords_of([task]),
            task_type=rng.choice(["operation", "query", "analysis"]),
            tools=tools,
            environment=rng.choice(ENVIRONMENTS),
            agent=rng.choice(AGENTS),
            advice=f"When you handle {task}, first use {tools[0]}"
            + (f", then {tools[1]}." if len(tools) > 1 else "."),
            polarity="failure" if rng.random() < 0.2 else "success",
            status=rng.choice(statuses),
            source=rng.choice(["heuristic", "llm", "human"]),
            scope_agents=[rng.choice(AGENTS)] if 0.8 <= scope < 0.9 else [],
            scope_environments=["k8s"] if 0.9 <= scope < 0.95 else [],
            scope_users=[f"user-{rng.randint(1, 50)}"] if scope >= 0.95 else [],
            support_count=rng.randint(1, 12),
            upvotes=rng.randint(0, 5),
            downvotes=rng.randint(0, 2),
            evidence_at=now - timedelta(days=rng.uniform(0, 365)),
            embedding=vector.tolist(),
            embedding_model="bench",
        )


def bulk_load(rows, *, batch: int = 2000, rebuild_index: bool = True) -> dict:
    """Insert experiences (an iterable, consumed `batch` at a time: a 1M library never sits in
    memory as objects) without the HNSW index, then build it once. Returns the seconds of each
    part and PostgreSQL's notices of the build (pgvector says when the graph outgrew
    maintenance_work_mem, which makes the build much slower). Ends with a checkpoint."""
    import time
    from itertools import batched

    from django.db import connection

    from experiences.models import Experience
    from experiences.services.keyword_stats import keyword_frequencies_sync
    from experiences.services.reembed import HNSW_INDEX, hnsw_index_build

    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX IF EXISTS "{HNSW_INDEX}"')
    for chunk in batched(rows, batch):
        Experience.objects.bulk_create(chunk)
    with connection.cursor() as cursor:  # a running site checked its library long ago
        cursor.execute("TRUNCATE experiences_experiencededupdue")
    figures: dict = {"insert_s": round(time.perf_counter() - began, 1)}
    if rebuild_index:
        notices: list[str] = []
        connection.ensure_connection()
        connection.connection.add_notice_handler(lambda d: notices.append(d.message_primary))
        began = time.perf_counter()
        hnsw_index_build()
        figures["index_build_s"] = round(time.perf_counter() - began, 1)
        figures["index_build_notices"] = notices
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE experiences_experience")
        keyword_frequencies_sync()  # recall's copy of the statistics the ANALYZE took
    with connection.cursor() as cursor:
        # A running site wrote its library long ago: the load's gigabytes of dirty pages are
        # flushed now, not by the checkpointer during the timed series (p99 spikes at 1M).
        cursor.execute("CHECKPOINT")
    return figures
