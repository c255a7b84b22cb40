"""The experience detail page: earlier versions, provenance, near neighbours, merges."""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Q

from experiences.models import Experience, ExperienceMerge, ExperienceSource, ExperienceVersion
from experiences.selectors.experience_list import experience_mark_votes
from experiences.selectors.merges import merge_queryset
from experiences.services.dedup import experience_neighbours


@dataclass(frozen=True)
class ExperienceDetail:
    experience: Experience
    versions: list[ExperienceVersion]
    sources: list[ExperienceSource]
    neighbours: list[tuple[Experience, float]]
    merges: list[ExperienceMerge]


def experience_detail(
    *, experience: Experience, user: User, neighbours: int = 5
) -> ExperienceDetail:
    """The detail page: earlier versions, provenance, near neighbours, merges it took part in."""
    sources = (
        ExperienceSource.objects.filter(experience=experience)
        .select_related("trace")
        .only("id", "experience_id", "step_indexes", "review_id", "trace__id", "trace__external_id",
              "trace__task", "trace__outcome", "trace__agent")
        .order_by("id")
    )  # fmt: skip
    near: list[tuple[Experience, float]] = []
    if experience.embedding is not None and experience.merged_into_id is None:
        near = experience_neighbours(experience, limit=neighbours)
    merges = (
        merge_queryset().filter(Q(survivor=experience) | Q(absorbed=experience)).order_by("-pk")
    )
    experience_mark_votes(user=user, experiences=[experience])
    return ExperienceDetail(
        experience=experience,
        versions=list(experience.versions.order_by("-version")),
        sources=list(sources),
        neighbours=near,
        merges=list(merges),
    )
