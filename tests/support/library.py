"""Experience and failure patterns stored directly, for the recall and warnings tests of the
client and the MCP glue (the same rows distillation writes, embedded with the real embedder)."""

from __future__ import annotations

import hashlib
from typing import Any

from accounts.models import Project
from experiences.embeddings import get_embedder
from experiences.models import Experience, FailurePattern
from experiences.services.patterns import argument_shape


def make_experience(project: Project, *, task: str, advice: str, **fields: Any) -> Experience:
    (vector,) = get_embedder().embed([f"{task}\n{advice}"])
    values: dict[str, Any] = {
        "project": project,
        "task": task,
        "advice": advice,
        "tools": ["docker"],
        "environment": ["docker"],
        "polarity": Experience.Polarity.SUCCESS,
        "status": Experience.Status.APPROVED,
        "source": Experience.Source.HEURISTIC,
        "path": [{"tool": "docker", "step": "docker logs web"}],
        "embedding": vector,
    }
    values.update(fields)
    return Experience.objects.create(**values)


def make_failure_pattern(
    project: Project,
    *,
    tool: str,
    arguments: dict[str, Any],
    error: str,
    instead: str = "",
    occurrences: int = 5,
) -> FailurePattern:
    shape = argument_shape(arguments)
    return FailurePattern.objects.create(
        project=project,
        tool=tool,
        argument_shape=shape,
        error_signature=error,
        signature_hash=hashlib.sha256(f"{tool}{shape}{error}".encode()).hexdigest(),
        instead=instead,
        example_arguments=arguments,
        occurrences=occurrences,
    )
