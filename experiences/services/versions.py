"""The one writer of experience versions: each row is the experience as it reads after a change
(its advice, its scene, its path and who wrote the words), with why it changed."""

from typing import Any

from experiences.models import Experience, ExperienceVersion

SCENE_FIELDS = ("summary", "task_type", "intent", "tools", "environment", "agent")


def experience_scene(experience: Experience) -> dict[str, Any]:
    """The scene as a version keeps it (one shape for every kind of change)."""
    return {name: getattr(experience, name) for name in SCENE_FIELDS}


def version_of(experience: Experience, *, reason: str) -> ExperienceVersion:
    """`experience.version` as it reads now, not saved yet (for writers that save several
    versions in one statement)."""
    max_reason = ExperienceVersion._meta.get_field("reason").max_length or 200
    return ExperienceVersion(
        experience=experience,
        version=experience.version,
        advice=experience.advice,
        scene=experience_scene(experience),
        path=experience.path,
        source=experience.source,
        reason=reason[:max_reason],
    )


def version_record(experience: Experience, *, reason: str) -> ExperienceVersion:
    """Record `experience.version` as it is now (call after saving the change)."""
    version = version_of(experience, reason=reason)
    version.save(force_insert=True)
    return version
