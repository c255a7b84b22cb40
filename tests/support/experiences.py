"""Experiences and merge proposals for the curation pages (a fixture module, registered in
tests/conftest.py), and the KB rebuild those pages queue."""

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from accounts.models import Project
from experiences.models import Experience, ExperienceRecall, ExperienceSource, MergeProposal
from experiences.services.kb_rebuilds import rebuild_status_key
from experiences.tasks import rebuild_kb
from traces.models import Trace

DIM = 384
_axes = itertools.count(2)


def vector(cosine_to_base: float, axis: int = 1) -> list[float]:
    """A unit vector whose cosine similarity to e0 is `cosine_to_base` (e0 itself for 1.0)."""
    v = [0.0] * DIM
    v[0] = cosine_to_base
    v[axis] = math.sqrt(max(0.0, 1 - cosine_to_base**2))
    return v


@pytest.fixture
def make_experience(db) -> Callable[..., Experience]:
    """An experience; by default far from every other one (its own axis), so no neighbours."""

    def make(project: Project, *, cosine: float | None = None, trace: Trace | None = None,
             steps: list[int] | None = None, **fields: Any) -> Experience:  # fmt: skip
        values: dict[str, Any] = {
            "project": project,
            "task": "web container restarts",
            "polarity": "success",
            "status": "candidate",
            "source": "heuristic",
            "tools": ["docker_logs"],
            "environment": ["docker"],
            "agent": "ops-bot",
            "task_type": "operation",
            "advice": "When you see restarts, first read docker_logs --tail 200.",
            "embedding": vector(0.0, next(_axes) % DIM or 1) if cosine is None else vector(cosine),
            "embedding_model": "test",
        }
        values.update(fields)
        recalled_at = values.pop("last_recalled_at", None)
        experience = Experience.objects.create(**values)
        if recalled_at is not None:
            ExperienceRecall.objects.create(experience=experience, last_recalled_at=recalled_at)
        if trace is not None:
            ExperienceSource.objects.create(
                experience=experience, trace=trace, step_indexes=steps or [1]
            )
        return experience

    return make


@pytest.fixture
def make_proposal(db) -> Callable[..., MergeProposal]:
    def make(first: Experience, second: Experience, similarity: float = 0.9) -> MergeProposal:
        first, second = sorted((first, second), key=lambda e: e.pk)
        return MergeProposal.objects.create(
            project=first.project, first=first, second=second, similarity=similarity
        )

    return make


@pytest.fixture
def run_queued_rebuild(db) -> Iterator[Callable[[Project], str]]:
    """Take the KB rebuild task the page queued from Redis and run it here, as a worker would
    (the task function itself; tests/experiences/views/test_kb_rebuild.py also runs a real one)."""
    projects: list[Project] = []

    def run(project: Project) -> str:
        projects.append(project)
        (args,) = [a for name, a in take_queued_tasks() if name == "experiences.rebuild_kb"]
        assert args[0] == project.pk
        return rebuild_kb(*args)

    yield run
    forget_rebuilds(projects)


def take_queued_tasks() -> list[tuple[str, list[Any]]]:
    """Every task waiting in the broker's queue, as (name, args); they are removed from it."""
    from hindsight_site.celery import app

    tasks = []
    with app.connection_for_read() as connection_, connection_.SimpleQueue("celery") as queue:
        while True:
            try:
                message = queue.get(block=False)
            except queue.Empty:
                return tasks
            args, _kwargs, _embed = message.decode()
            tasks.append((message.headers["task"], args))
            message.ack()


def forget_rebuilds(projects: list[Project]) -> None:
    """Tests queue rebuilds that no worker takes: empty the queue, drop their status."""
    from django.core.cache import cache

    take_queued_tasks()
    cache.delete_many([rebuild_status_key(p.pk) for p in projects])
