"""Human relabelling of steps: optimistic version check, audit, and re-derivation on commit.

Every write names the label version it saw; a stale version is refused (409), never silently
overwritten. A committed change marks `Trace.labels_changed_at` and enqueues re-derivation of the
trace's experiences through the one seam (`trace_rederive_enqueue`), inside the transaction so
nothing is published for a relabel that rolled back.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.services.audit import audit_event
from core.errors import Conflict, InvalidInput, NotFound
from traces.models import Step, Trace
from traces.selectors.inspector import machine_opinion_for
from traces.services.review_queue import trace_rederive_enqueue

MAX_REASON_CHARS = 2000


class LabelConflict(Conflict):
    """Someone changed the step since the version the client saw; carries the current step."""

    def __init__(self, step: Step) -> None:
        by = step.labelled_by.get_username() if step.labelled_by else step.label_source or "nobody"
        super().__init__(
            f"step {step.index} was changed meanwhile by {by}: it is now "
            f"'{step.label or 'unlabelled'}' (version {step.label_version}); nothing was saved"
        )
        self.step = step


def _label_state(step: Step) -> dict[str, Any]:
    return {
        "label": step.label,
        "source": step.label_source,
        "reason": step.label_reason,
        "version": step.label_version,
        "accepted_as_is": step.is_accepted_as_is,
    }


def _labels_changed(*, trace_id: int, at: datetime) -> None:
    Trace.objects.filter(pk=trace_id).update(labels_changed_at=at)
    trace_rederive_enqueue(trace_id=trace_id)


def step_relabel(
    *,
    trace: Trace,
    index: int,
    label: str,
    reason: str,
    expected_version: int,
    user: User,
    to_machine: bool = False,
) -> Step:
    """Set one step's label as a human decision; LabelConflict when the version is stale.

    `to_machine` is the undo of an override: the step gets back the label, reason, confidence and
    source the machine reviewer gave (kept in its Review), `label` and `reason` are ignored, and
    the change is versioned and audited like any relabel.
    """
    if not to_machine and label not in Step.Label.values:
        raise InvalidInput(f"label must be one of {', '.join(Step.Label.values)}")
    reason = reason.strip()[:MAX_REASON_CHARS]
    with transaction.atomic():
        step = (
            Step.objects.select_for_update(of=("self",))
            .select_related("labelled_by")
            .filter(trace=trace, index=index)
            .first()
        )
        if step is None:
            raise NotFound(f"step {index} of trace {trace.pk} not found")
        if step.label_version != expected_version:
            raise LabelConflict(step)
        now = timezone.now()
        if to_machine:
            opinion = machine_opinion_for(trace=trace, index=index)
            if opinion is None:
                raise NotFound(f"the machine gave no label for step {index}")
            state = (opinion.label, opinion.reviewer, opinion.reason, opinion.confidence)
            by = None
        else:
            state, by = (label, Step.LabelSource.HUMAN, reason, None), user
        current = (step.label, step.label_source, step.label_reason, step.label_confidence)
        if current == state and not step.is_accepted_as_is:
            return step  # pressing the same key twice is not a new decision
        before = _label_state(step)
        step.label, step.label_source, step.label_reason, step.label_confidence = state
        step.labelled_by = by
        step.labelled_at = now
        step.is_accepted_as_is = False  # a person judged this step (or undid their judgement)
        step.label_version += 1
        step.full_clean(validate_constraints=False)
        step.save(update_fields=[
            "label", "label_source", "label_reason", "label_confidence", "labelled_by",
            "labelled_at", "label_version", "is_accepted_as_is",
        ])  # fmt: skip
        audit_event(
            action="step.relabel",
            object_type="step",
            object_id=step.pk,
            project=trace.project,
            user=user,
            before={"trace_id": trace.pk, "index": index, **before},
            after={
                "trace_id": trace.pk, "index": index, **_label_state(step),
                **({"to_machine": True} if to_machine else {}),
            },
        )  # fmt: skip
        _labels_changed(trace_id=trace.pk, at=now)
    return step


@dataclass(frozen=True)
class AcceptResult:
    accepted: list[int]  # step indexes now confirmed by a person, accepted as is
    skipped: list[int]  # changed since the reviewer saw them: left as they are
    # What each accepted step was before, {index: [machine source, labelled_at ISO or None]}:
    # what undoing the acceptance restores (review_claims.claim_finish_undo).
    was: dict[int, list] = field(default_factory=dict)


def trace_accept_all(*, trace: Trace, seen_versions: dict[int, int], user: User) -> AcceptResult:
    """Confirm the machine labels the reviewer saw (`{index: version}`), accepted as is.

    The steps become human-sourced (checked by a person, never overwritten by a re-review) but
    are flagged `is_accepted_as_is`: nobody judged them one by one, so they stay out of the
    machine-human agreement.

    A step whose version moved on since (the machine re-reviewed, or another person relabelled)
    is skipped and reported, not confirmed unseen.
    """
    with transaction.atomic():
        steps = list(
            Step.objects.select_for_update()
            .filter(trace=trace, index__in=list(seen_versions))
            .only(
                "pk",
                "index",
                "label",
                "label_source",
                "label_version",
                "labelled_by_id",
                "labelled_at",
            )
            .order_by("index")
        )
        accepted = [
            s for s in steps
            if s.label and s.label_source in Step.MACHINE_LABEL_SOURCES
            and seen_versions[s.index] == s.label_version
        ]  # fmt: skip
        # The reviewer's own relabels since the page was shown are not "changed by others".
        skipped = [
            s.index for s in steps
            if s not in accepted
            and not (s.label_source == Step.LabelSource.HUMAN and s.labelled_by_id == user.pk)
        ]  # fmt: skip
        if not accepted:
            return AcceptResult(accepted=[], skipped=skipped)
        now = timezone.now()
        Step.objects.filter(pk__in=[s.pk for s in accepted]).update(
            label_source=Step.LabelSource.HUMAN,
            labelled_by=user,
            labelled_at=now,
            label_version=F("label_version") + 1,
            is_accepted_as_is=True,
        )
        audit_event(
            action="trace.accept_all",
            object_type="trace",
            object_id=trace.pk,
            project=trace.project,
            user=user,
            before={"steps": {s.index: [s.label, s.label_source] for s in accepted}},
            after={
                "steps": {s.index: [s.label, "human"] for s in accepted},
                "accepted_as_is": True,
            },
        )
        _labels_changed(trace_id=trace.pk, at=now)
    was = {
        s.index: [s.label_source, s.labelled_at.isoformat() if s.labelled_at else None]
        for s in accepted
    }
    return AcceptResult(accepted=[s.index for s in accepted], skipped=skipped, was=was)


def trace_accept_undo(*, trace: Trace, was: dict[int, list], user: User) -> list[int]:
    """Give back the machine labels `user` accepted as is (`was`: AcceptResult.was); a step
    changed since (relabelled, re-reviewed) is left as it is. The step indexes restored."""
    with transaction.atomic():
        steps = list(
            Step.objects.select_for_update()
            .filter(
                trace=trace, index__in=list(was), label_source=Step.LabelSource.HUMAN,
                is_accepted_as_is=True, labelled_by=user,
            )
            .order_by("index")
        )  # fmt: skip
        now = timezone.now()
        for step in steps:
            source, labelled_at = was[step.index]
            Step.objects.filter(pk=step.pk).update(
                label_source=source,
                labelled_by=None,
                labelled_at=datetime.fromisoformat(labelled_at) if labelled_at else None,
                label_version=F("label_version") + 1,
                is_accepted_as_is=False,
            )
        if steps:
            audit_event(
                action="trace.accept_undo",
                object_type="trace",
                object_id=trace.pk,
                project=trace.project,
                user=user,
                before={"steps": {s.index: [s.label, "human"] for s in steps}},
                after={"steps": {s.index: [s.label, was[s.index][0]] for s in steps}},
            )
            _labels_changed(trace_id=trace.pk, at=now)
    return [s.index for s in steps]
