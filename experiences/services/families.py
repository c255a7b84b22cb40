"""Task families: each new episode joins one (inside the review's transaction), and the family's
workflow and insights are induced again from its episodes once it has new members (a task per
family, on commit; beat re-sends the ones that were lost).

Joining (experiences.models.TaskFamily): the same agent and intent; a successful run's family is
the set of state-changing tools it used; a failed run's is the nearest family of that agent and
intent by its request's vector (the family of its own writes when there is none yet). The
family's centroid is the running mean of its members' vectors.

Induced items are experiences like the others (`kind` workflow / insight): scoped, reviewed,
voted, exported; matched by recall on the family's centroid and on the words most of its
requests share (their keywords); kept in place as the family grows
(a new version when the wording changes; an insight the runs no longer show is archived).
"""

import hashlib
import math
from collections import Counter

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from pgvector.django import CosineDistance

from core.publish import tasks_publish, tasks_publish_on_commit
from experiences.embeddings import get_embedder
from experiences.models import Experience, ExperienceDedupDue, ExperienceSource, TaskFamily
from experiences.services.family_induction import Induced, Member, call_step, workflow
from experiences.services.family_insights import insights
from experiences.services.versions import version_record
from traces.review.scene import cut_at_word
from traces.review.values import case_identifiers, content_words

INDUCE_TASK = "experiences.induce_family"
# An induced item's keywords: the words at least this share of the family's requests hold.
SHARED_WORD_SHARE = 0.3
MAX_SHARED_WORDS = 12
MAX_MEMBERS = 300  # the latest episodes an induction reads
MAX_SOURCES = 50  # provenance rows kept per induced item


def _signature(experience: Experience) -> str:
    """The changes a run made, by workflow step (family_induction.call_step): a tool, or for a
    command line its tool and command ("bash rm", "bash tar"): keyed by the tool, every shell
    run that changed anything was one family, whose workflow was one run's command."""
    writes = sorted({call_step(c) for c in experience.calls if c.get("effect") == "write"})
    return ",".join(writes)[:1000]


def _floats(vector) -> list[float]:
    """A vector as stored (pgvector's HalfVector) or as just computed (a list)."""
    return [float(v) for v in (vector.to_list() if hasattr(vector, "to_list") else vector)]


def _mean(old: list[float], size: int, new: list[float]) -> list[float]:
    mixed = [(a * size + b) / (size + 1) for a, b in zip(old, new, strict=True)]
    norm = math.sqrt(sum(v * v for v in mixed)) or 1.0
    return [v / norm for v in mixed]


def family_join(experience: Experience) -> TaskFamily | None:
    """Put a new episode in its family (inside the caller's transaction); None without a vector.
    The family row stays locked until the caller commits: its centroid and size are updated in
    place. An episode not stored yet is stored by the caller, its family set."""
    if experience.embedding is None or experience.kind != Experience.Kind.EPISODE:
        return None
    vector = _floats(experience.embedding)
    peers = TaskFamily.objects.filter(
        project_id=experience.project_id, agent=experience.agent, intent=experience.intent
    )
    family: TaskFamily | None = None
    if experience.polarity == Experience.Polarity.FAILURE:
        family = (
            peers.order_by(CosineDistance("centroid", vector))
            .select_for_update(of=("self",))
            .first()
        )
    if family is None:
        family = _family_get_or_create(experience, peers, _signature(experience), vector)
    if family.size:
        family.centroid = _mean(_floats(family.centroid), family.size, vector)
    # One induction waits per family: a join sends one only when none is due yet. An induction
    # due (`induced_size` below `size`) was sent by the join that made it due, and it reads the
    # members when it runs, this one's too (or beat's sweep sends it, when its task was lost).
    # Each join sent one before: under load every review re-induced its family from up to
    # MAX_MEMBERS episodes (8 % of the worker's time in a drain), for the same items in the end.
    due = family.induced_size < family.size
    family.size += 1
    family.tools = sorted(set(family.tools) | set(experience.tools))
    family.environment = sorted(set(family.environment) | set(experience.environment))
    family.example_request = family.example_request or experience.request or experience.summary
    family.save()
    experience.family = family
    if experience.pk is not None:
        experience.save(update_fields=["family", "updated_at"])
    if not due:
        tasks_publish_on_commit(INDUCE_TASK, [(family.pk,)])
    return family


def _family_get_or_create(experience, peers, signature: str, vector) -> TaskFamily:
    existing = peers.select_for_update().filter(signature=signature).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():  # another worker may create the same family meanwhile
            return TaskFamily.objects.create(
                project_id=experience.project_id,
                agent=experience.agent,
                intent=experience.intent,
                signature=signature,
                centroid=vector,
                size=0,
            )
    except IntegrityError:
        return peers.select_for_update().get(signature=signature)


# ---------------------------------------------------------------------------- induction


def _members(family: TaskFamily) -> tuple[list[Member], str]:
    """The family's latest episodes as Members, and the words most of their requests share. An
    episode merged into another is not one: its runs are the survivor's now (read as they were,
    a HotpotQA family of 512 episodes, 410 of them merged, was induced from the 32 successes
    among its latest 300 rows instead of its ~100 live cases)."""
    rows = (
        Experience.objects.filter(family=family, kind=Experience.Kind.EPISODE, merged_into=None)
        .exclude(status=Experience.Status.REJECTED)
        .order_by("-id")
        .values_list("id", "polarity", "calls", "request")[:MAX_MEMBERS]
    )
    episodes = [(row[0], row[1], row[2], _case(row[3] or ""), row[3] or "") for row in rows]
    shared = Counter(w for row in rows for w in content_words(row[3] or ""))
    needed = max(2, math.ceil(len(episodes) * SHARED_WORD_SHARE))
    words = " ".join(w for w, n in shared.most_common(MAX_SHARED_WORDS) if n >= needed)
    traces = dict(
        ExperienceSource.objects.filter(experience_id__in=[e[0] for e in episodes])
        .order_by("experience_id", "id")
        .values_list("experience_id", "trace_id")
    )
    members = [
        Member(traces[eid], polarity == "success", calls or [], case, request)
        for eid, polarity, calls, case, request in episodes
        if eid in traces
    ]
    return members, words


def _case(request: str) -> frozenset[str]:
    """What names a member's case (family_induction.Member.case): its request's ids, else the
    request itself (a question asked again is the same case)."""
    ids = case_identifiers(request)
    if ids:
        return frozenset(ids)
    text = " ".join(request.lower().split())
    return frozenset({f"request:{text}"}) if text else frozenset()


def _key(family: TaskFamily, induced: Induced) -> str:
    return hashlib.sha1(f"family:{family.pk}:{induced.key}".encode()).hexdigest()


def family_induce(*, family_id: int) -> str:
    """Induce the family's workflow and insights again when it has new members (idempotent)."""
    with transaction.atomic():
        # A join holding the family is waited for (it commits with its review): the joins that
        # came after this task was sent sent none of their own (family_join), so this one must
        # not step aside. Its members are read after the lock, the join's new episode with them.
        family = TaskFamily.objects.select_for_update().filter(pk=family_id).first()
        if family is None:
            return "gone"
        if family.induced_size >= family.size:
            return "up to date"
        members, words = _members(family)
        found = [i for i in [workflow(members), *insights(members)] if i is not None]
        kept = {_key(family, i): i for i in found}
        current = {
            e.task_key: e
            for e in Experience.objects.select_for_update().filter(
                family=family, kind__in=[Experience.Kind.WORKFLOW, Experience.Kind.INSIGHT]
            )
        }
        for key, induced in kept.items():
            _item_upsert(family, current.get(key), key, induced, words)
        for key, experience in current.items():
            if key not in kept and experience.status not in Experience.INACTIVE_STATUSES:
                # Its family's runs no longer show it (a status, not a wording: no version).
                experience.status = Experience.Status.ARCHIVED
                experience.save(update_fields=["status", "updated_at"])
        family.induced_size = family.size
        family.save(update_fields=["induced_size", "updated_at"])
    return f"{len(kept)} item(s)"


def _item_upsert(
    family: TaskFamily, experience: Experience | None, key: str, induced: Induced, words: str
) -> Experience:
    counts = {
        "support_count": induced.support,
        "success_count": induced.successes,
        "failure_count": induced.failures,
    }
    if experience is None:
        experience = Experience.objects.create(
            project_id=family.project_id,
            kind=induced.kind,
            family=family,
            task_key=key,
            task_type="other",
            tools=family.tools,
            environment=family.environment,
            intent=family.intent,
            agent=family.agent,
            task=family.example_request,
            summary=cut_at_word(family.example_request, 150),
            request=family.example_request,
            keywords=words,
            advice=induced.advice,
            polarity=induced.polarity,
            source=Experience.Source.HEURISTIC,
            embedding=family.centroid,
            embedding_model=get_embedder().model_name,
            **counts,
        )
        version_record(
            experience, reason=f"induced from {induced.support} runs of family {family.pk}"
        )
    else:
        changed = experience.advice != induced.advice
        experience.advice = induced.advice
        experience.polarity = induced.polarity
        experience.tools, experience.environment = family.tools, family.environment
        experience.embedding = family.centroid
        experience.keywords = words
        experience.evidence_at = timezone.now()
        if experience.status == Experience.Status.ARCHIVED:
            experience.status = Experience.Status.CANDIDATE
        for field, value in counts.items():
            setattr(experience, field, value)
        if changed:
            experience.version += 1
        experience.save()
        if changed:
            version_record(
                experience,
                reason=f"induced again from {induced.support} runs of family {family.pk}",
            )
    ExperienceSource.objects.bulk_create(
        [
            ExperienceSource(experience=experience, trace_id=trace_id)
            for trace_id in induced.trace_ids[:MAX_SOURCES]
        ],
        ignore_conflicts=True,
    )
    # The database's triggers mark every new wording due for a dedup check; a family's items are
    # induced again in place, never merged (dedup skips them), so none is due.
    ExperienceDedupDue.objects.filter(experience=experience).delete()
    return experience


def family_members_changed(family_id: int) -> None:
    """A member's calls were derived again (a relabel, its tools known better): the family's
    items are induced again from its members as they read now (inside the caller's transaction;
    beat's sweep sends the induction when its task is lost). When one is due already, it will
    read them."""
    if TaskFamily.objects.filter(pk=family_id, induced_size__gte=F("size")).update(induced_size=0):
        tasks_publish_on_commit(INDUCE_TASK, [(family_id,)])


def families_induce_due() -> int:
    """Beat: send the inductions that are due (their task lost, or a join came meanwhile)."""
    due = list(
        TaskFamily.objects.filter(induced_size__lt=F("size"))
        .order_by("updated_at")
        .values_list("pk", flat=True)[:500]
    )
    return tasks_publish(INDUCE_TASK, [(pk,) for pk in due])
