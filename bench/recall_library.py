"""The library bench/recall.py recalls from: the demo project's experiences clustered around
real embeddings of generated tasks, the small projects beside it and the flood project (the
module docstring of bench/recall.py describes it), loaded in process through bench/seeding."""

from __future__ import annotations

import os
import random
from itertools import chain
from pathlib import Path

import numpy as np

from bench.seeding import ENVIRONMENTS, TASKS, TOOLS, entity, unit

SEEDING: dict = {}  # bulk_load's figures (insert and index build seconds), when this run seeded

VERBS = ["debug", "fix", "investigate", "explain", "speed up", "monitor", "roll back", "audit"]


def texts(rng: random.Random, count: int) -> list[str]:
    return [
        f"{rng.choice(VERBS)} {rng.choice(TASKS)} on {entity(rng)} using {rng.choice(TOOLS)} "
        f"and {rng.choice(TOOLS)}"
        for _ in range(count)
    ]


def flood_tasks() -> list[str]:
    """The tasks another project floods with near-duplicates (issue 26's library)."""
    return texts(random.Random(13), 10)


def seed(
    data_dir: Path,
    *,
    experiences: int,
    patterns: int,
    centres: int,
    small: list[int],
    flood: int,
) -> None:
    os.environ["HINDSIGHT_DATA_DIR"] = str(data_dir)
    from hindsight_site.bootstrap import setup_django

    setup_django()
    from django.conf import settings

    from accounts.models import Project
    from bench.seeding import bulk_load, experience_rows
    from experiences.embeddings import get_embedder
    from experiences.models import Experience, FailurePattern
    from experiences.services.recall import _query_text
    from experiences.services.recall_candidates import RecallQuery

    rng = random.Random(11)
    project = Project.objects.get(name="demo")
    if Experience.objects.filter(project=project).exists():
        print("kept data dir: already seeded", flush=True)
        return
    centers = unit(np.array(get_embedder().embed(texts(rng, centres))))
    generator = np.random.default_rng(11)
    which = generator.integers(0, len(centers), size=experiences)

    def vectors():  # 100k at a time: a 1M library's float64 noise alone would be 3 GB
        for start in range(0, experiences, 100_000):
            part = which[start : start + 100_000]
            noise = generator.normal(0, 0.03, size=(len(part), 384))
            yield from unit(centers[part] + noise).astype(np.float32)

    # Queried as recall embeds a task, so the flood sits right on the query.
    flooded = unit(np.array(get_embedder().embed(
        [_query_text(RecallQuery(task=task)) for task in flood_tasks()]
    )))  # fmt: skip

    def near(points: np.ndarray, count: int, noise: float) -> np.ndarray:
        part = generator.integers(0, len(points), size=count)
        return unit(points[part] + generator.normal(0, noise, size=(count, 384))).astype(np.float32)

    def small_projects():
        # Half around the demo's own centres (its rows crowd those neighbourhoods), half around
        # the tasks the flood project repeats.
        for size in small:
            mine = Project.objects.create(name=f"small-{size}")
            vectors = np.concatenate([near(centers, size - size // 2, 0.03),
                                      near(flooded, size // 2, 0.03)])  # fmt: skip
            yield from experience_rows(mine, vectors, seed=size)
        if flood:
            other = Project.objects.create(name="flood")
            yield from experience_rows(other, near(flooded, flood, 0.005), seed=7)

    load = bulk_load(chain(experience_rows(project, vectors(), seed=12), small_projects()))
    print(f"seeded {experiences} experiences (and {sum(small)} in small projects, {flood} "
          "near-duplicates in the flood project) in "
          f"{load['insert_s']} s, built the HNSW index in "
          f"{load['index_build_s']} s (maintenance_work_mem {settings.HINDSIGHT_HNSW_BUILD_MEMORY}"
          f"; notices: {load['index_build_notices'] or 'none'})", flush=True)  # fmt: skip
    SEEDING.update(load)
    FailurePattern.objects.bulk_create(
        [
            FailurePattern(
                project=project, tool=rng.choice(TOOLS),
                argument_shape={"target": "string", "force": "bool"} if i % 2 else {"path": "path"},
                error_signature=f"error <n> in step {i % 50}", signature_hash=f"bench-{i}",
                instead=f"use {rng.choice(TOOLS)}", occurrences=rng.randint(1, 30),
                environment=rng.choice(ENVIRONMENTS),
            )
            for i in range(patterns)
        ]
    )  # fmt: skip
    from django.db import connections

    connections.close_all()
