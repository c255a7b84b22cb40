"""The merge pages' reads: the queue of open proposals with their word diffs and the wording
dedup would keep, one proposal or merge, the merge history."""

import difflib
from dataclasses import dataclass

from django.db.models import QuerySet
from django.db.models.fields.json import KT

from accounts.models import Project
from core.pagination import Page, capped_count, paginate_by_id, paginate_by_rank
from experiences.models import ExperienceMerge, MergeProposal
from experiences.services.merging import wording_rank


def merge_queryset() -> QuerySet[ExperienceMerge]:
    # `before` holds both rows' embeddings (2 × 384 floats): read only the two wordings from it
    return (
        ExperienceMerge.objects.select_related("merged_by")
        .defer("before")
        .annotate(
            survivor_before=KT("before__survivor__advice"),
            absorbed_before=KT("before__absorbed__advice"),
        )
    )


@dataclass(frozen=True)
class DiffPart:
    kind: str  # "same", "del" (only in the first text) or "ins" (only in the second)
    text: str


def advice_diff(first: str, second: str) -> tuple[list[DiffPart], list[DiffPart]]:
    """A word-level diff as plain-text parts for each side (the template escapes every part)."""
    a, b = first.split(), second.split()
    left: list[DiffPart] = []
    right: list[DiffPart] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(DiffPart("same", " ".join(a[i1:i2])))
            right.append(DiffPart("same", " ".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(DiffPart("del", " ".join(a[i1:i2])))
        if j2 > j1:
            right.append(DiffPart("ins", " ".join(b[j1:j2])))
    return left, right


@dataclass(frozen=True)
class ProposalRow:
    proposal: MergeProposal
    first_diff: list[DiffPart]
    second_diff: list[DiffPart]

    @property
    def suggested_keep(self) -> str:
        """The wording dedup would keep (merging.wording_rank)."""
        first, second = self.proposal.first, self.proposal.second
        return "second" if wording_rank(second) > wording_rank(first) else "first"

    @property
    def suggested_advice(self) -> str:
        return getattr(self.proposal, self.suggested_keep).advice

    @property
    def stale(self) -> str:
        """Why the pair can no longer be merged as proposed ("" when it can)."""
        for experience in (self.proposal.first, self.proposal.second):
            if experience.merged_into_id:
                return f"#{experience.pk} was merged into #{experience.merged_into_id} meanwhile"
        return ""


def _proposal_queryset() -> QuerySet[MergeProposal]:
    return MergeProposal.objects.select_related(
        "first__recall_stats", "second__recall_stats"
    ).defer("first__embedding", "second__embedding", "first__path", "second__path")


def proposal_row(proposal: MergeProposal) -> ProposalRow:
    first, second = advice_diff(proposal.first.advice, proposal.second.advice)
    return ProposalRow(proposal=proposal, first_diff=first, second_diff=second)


@dataclass(frozen=True)
class ProposalQueue:
    rows: list[ProposalRow]
    count: int
    is_count_capped: bool
    start: int = 1  # the 1-based position of rows[0] among all open proposals
    next_cursor: str | None = None

    @property
    def end(self) -> int:
        return self.start + len(self.rows) - 1


def proposal_queue(
    *, project: Project, cursor: str | None = None, limit: int = 20
) -> ProposalQueue:
    """A page of open proposals, most similar first (served by the partial index on open
    proposals)."""
    queryset = _proposal_queryset().filter(project=project, status=MergeProposal.Status.OPEN)
    count, capped = capped_count(queryset)
    page = paginate_by_rank(
        queryset, rank="similarity", descending=True, cursor=cursor, limit=limit
    )
    return ProposalQueue(
        rows=[proposal_row(p) for p in page.items], count=count, is_count_capped=capped,
        start=page.start, next_cursor=page.next_cursor,
    )  # fmt: skip


def proposal_for_user(*, projects: list[Project], proposal_id: int) -> MergeProposal | None:
    return (
        _proposal_queryset()
        .filter(project__in=projects, pk=proposal_id)
        .select_related("project")
        .first()
    )


def merge_of_proposal(proposal: MergeProposal) -> ExperienceMerge | None:
    """The merge a decided proposal made (the newest one of its pair)."""
    pair = {"survivor_id": proposal.first_id, "absorbed_id": proposal.second_id}
    return merge_queryset().filter(**pair).order_by("-pk").first()


def merge_history(
    *, project: Project, cursor: str | None, limit: int = 20
) -> Page[ExperienceMerge]:
    """Past merges, automatic and manual, newest first, with both wordings from before."""
    return paginate_by_id(merge_queryset().filter(project=project), cursor=cursor, limit=limit)


def merge_for_user(*, projects: list[Project], merge_id: int) -> ExperienceMerge | None:
    return (
        merge_queryset().filter(project__in=projects, pk=merge_id).select_related("project").first()
    )
