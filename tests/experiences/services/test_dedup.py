"""Dedup on write: auto-merge, proposals, undo, and two workers deduplicating at once."""

import math
import threading

import pytest
from django.db import connection

from accounts.models import AuditEvent
from core.errors import Conflict
from experiences.models import Experience, ExperienceMerge, ExperienceSource, MergeProposal
from experiences.services.dedup import experience_dedup, substance_overlap
from experiences.services.llm_merge import merge_advice_with_llm
from experiences.services.merging import experience_merge_undo
from traces.models import Trace

DIM = 384


def vector(cosine_to_base: float, axis: int = 1) -> list[float]:
    """A unit vector whose cosine similarity to the base vector e0 is `cosine_to_base`."""
    v = [0.0] * DIM
    v[0] = cosine_to_base
    v[axis] = math.sqrt(max(0.0, 1 - cosine_to_base**2))
    return v


def make(
    project, *, cosine: float = 1.0, axis: int = 1, trace: Trace | None = None, **fields
) -> Experience:
    values = {
        "project": project,
        "task": "web container restarts",
        "polarity": "success",
        "status": "candidate",
        "source": "heuristic",
        "tools": ["docker_logs"],
        "environment": ["docker"],
        "advice": "When you see restarts, read docker_logs.",
        "embedding": vector(cosine, axis),
        "embedding_model": "test",
    }
    values.update(fields)
    experience = Experience.objects.create(**values)
    if trace is not None:
        ExperienceSource.objects.create(experience=experience, trace=trace, step_indexes=[1])
    return experience


@pytest.fixture
def traces(project):
    return [
        Trace.objects.create(
            project=project,
            external_id=f"t{i}",
            agent="a",
            task="t",
            completed_at="2026-01-01T00:00Z",
        )
        for i in range(3)
    ]


@pytest.mark.django_db
def test_a_near_identical_experience_is_merged_into_the_older_one(project, traces):
    old = make(project, trace=traces[0], support_count=2, success_count=2, upvotes=1)
    new = make(
        project,
        cosine=0.99,
        trace=traces[1],
        advice="When you see restarts with docker on k8s, read docker_logs and docker_inspect.",
        tools=["docker_logs", "docker_inspect"],
        environment=["docker", "k8s"],
    )

    assert experience_dedup(experience_id=new.pk) == "merged"
    old.refresh_from_db()
    new.refresh_from_db()
    assert new.merged_into == old
    assert old.advice == new.advice  # the more specific wording wins
    assert old.tools == ["docker_logs", "docker_inspect"] and old.environment == ["docker", "k8s"]
    assert (old.support_count, old.success_count, old.upvotes) == (3, 2, 1)
    assert set(old.sources.values_list("trace_id", flat=True)) == {traces[0].pk, traces[1].pk}
    assert old.versions.first().reason.startswith("auto merge with experience")
    assert AuditEvent.objects.filter(action="experience.merge.auto", object_id=str(old.pk)).exists()


@pytest.mark.django_db
def test_the_wording_kept_brings_its_replay_and_what_it_may_be_served_to(project, traces):
    # One case run twice: the run that handed it to a person (more tools) and the run that
    # answered itself. The wording that teaches other cases is kept, with its own replay.
    handed = make(
        project, trace=traces[0], same_case_only=True, replay="handed it to a person",
        advice="When you use transfer_to_human_agents, first get_reservation_details.",
        tools=["get_reservation_details", "transfer_to_human_agents"],
        calls=[{"tool": "transfer_to_human_agents", "effect": "hand_off"}],
    )  # fmt: skip
    answered = make(
        project, cosine=0.99, trace=traces[1], replay="changed nothing; the answer was 'no'",
        advice="When you use get_reservation_details: call it with <reservation_id>.",
        tools=["get_reservation_details"], calls=[{"tool": "get_reservation_details"}],
    )  # fmt: skip

    assert experience_dedup(experience_id=answered.pk) == "merged"
    handed.refresh_from_db()
    assert handed.advice == answered.advice and handed.same_case_only is False
    assert (handed.replay, handed.calls) == (answered.replay, answered.calls)

    experience_merge_undo(merge_id=ExperienceMerge.objects.get().pk)
    handed.refresh_from_db()
    assert handed.same_case_only is True and handed.replay == "handed it to a person"
    assert handed.calls == [{"tool": "transfer_to_human_agents", "effect": "hand_off"}]


@pytest.mark.django_db
def test_a_similar_experience_becomes_a_merge_proposal(project):
    first = make(project)
    second = make(project, cosine=0.9)

    assert experience_dedup(experience_id=second.pk) == "proposed"
    proposal = MergeProposal.objects.get()
    assert (proposal.first, proposal.second, proposal.status) == (first, second, "open")
    assert proposal.similarity == pytest.approx(0.9, abs=1e-3)
    assert experience_dedup(experience_id=second.pk) == "already checked"  # idempotent
    second.advice += " Then check the exit code."
    second.version += 1  # as an edit does
    second.save()
    assert experience_dedup(experience_id=second.pk) == "proposed"
    assert MergeProposal.objects.count() == 1


@pytest.mark.django_db
def test_a_different_experience_stays_new(project):
    make(project)
    assert experience_dedup(experience_id=make(project, cosine=0.5).pk) == "new"
    assert not MergeProposal.objects.exists() and not ExperienceMerge.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "difference",
    [{"polarity": "failure"}, {"scope_agents": ["ops-bot"]}, {"status": "rejected"}],
)
def test_only_experiences_of_the_same_polarity_scope_and_active_status_are_compared(
    project, difference
):
    other = make(project, **difference)
    new = make(project)
    assert experience_dedup(experience_id=new.pk) == "new"
    other.refresh_from_db()
    assert other.merged_into is None


@pytest.mark.django_db
def test_an_llm_merges_both_wordings_when_configured(project, llm_settings):
    old = make(project, advice="When you see restarts, read docker_logs.")
    new = make(project, cosine=0.99, advice="When a container restarts, check docker_logs first.")
    experience_dedup(experience_id=new.pk, merge_advice=merge_advice_with_llm)

    old.refresh_from_db()
    assert old.advice.startswith("MERGED: A: When you see restarts")
    assert "B: When a container restarts" in old.advice


@pytest.mark.django_db
def test_undo_restores_both_experiences_and_their_provenance(project, traces):
    old = make(project, trace=traces[0], advice="short")
    new = make(
        project, cosine=0.99, trace=traces[1], tools=["docker_logs", "docker_ps"], status="approved"
    )
    experience_dedup(experience_id=new.pk)
    merge = ExperienceMerge.objects.get()

    experience_merge_undo(merge_id=merge.pk)
    old.refresh_from_db()
    new.refresh_from_db()
    assert new.merged_into is None and new.status == "approved"
    assert (old.advice, old.tools, old.status, old.support_count) == (
        "short",
        ["docker_logs"],
        "candidate",
        1,
    )
    assert list(old.sources.values_list("trace_id", flat=True)) == [traces[0].pk]
    assert list(new.sources.values_list("trace_id", flat=True)) == [traces[1].pk]
    assert old.embedding[0] == pytest.approx(1.0)
    with pytest.raises(Conflict):
        experience_merge_undo(merge_id=merge.pk)


@pytest.mark.django_db
def test_a_merge_cannot_be_undone_under_a_later_merge(project):
    a, b, c = make(project), make(project, cosine=0.99), make(project, cosine=0.98, axis=2)
    experience_dedup(experience_id=b.pk)
    experience_dedup(experience_id=c.pk)
    first_merge = ExperienceMerge.objects.order_by("pk").first()
    with pytest.raises(Conflict, match="later merges"):
        experience_merge_undo(merge_id=first_merge.pk)
    assert Experience.objects.filter(merged_into__isnull=True).get() == a


@pytest.mark.django_db(transaction=True)
def test_parallel_dedup_never_loses_evidence_or_merges_into_a_merged_row(project):
    for round_ in range(3):
        Experience.objects.all().delete()
        rows = [make(project, cosine=1 - i * 0.001, axis=1 + i, support_count=1) for i in range(8)]
        barrier = threading.Barrier(len(rows))
        errors: list[BaseException] = []

        def dedup(experience_id: int, barrier=barrier, errors=errors) -> None:
            try:
                barrier.wait()
                experience_dedup(experience_id=experience_id)
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=dedup, args=(row.pk,)) for row in rows]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert errors == [], f"round {round_}: {errors}"
        alive = list(Experience.objects.filter(merged_into__isnull=True))
        assert len(alive) == 1, f"round {round_}: {len(alive)} survivors"
        assert alive[0].support_count == len(rows)  # every piece of evidence arrived
        merged_into = set(
            Experience.objects.exclude(pk=alive[0].pk).values_list("merged_into", flat=True)
        )
        assert merged_into <= {e.pk for e in Experience.objects.all()}


@pytest.mark.django_db
def test_an_undone_merge_puts_its_proposal_back_in_the_queue(project):
    first, second = make(project), make(project, cosine=0.9)
    experience_dedup(experience_id=second.pk)  # a proposal
    from experiences.services.merging import experience_merge

    merge = experience_merge(
        survivor_id=first.pk, absorbed_id=second.pk, similarity=0.9, kind="manual"
    )
    assert MergeProposal.objects.get().status == "merged"
    experience_merge_undo(merge_id=merge.pk)
    assert MergeProposal.objects.get().status == "open"


@pytest.mark.django_db
def test_the_absorbed_experiences_other_proposals_move_to_the_survivor(project):
    survivor, absorbed, third = (
        make(project),
        make(project, cosine=0.99),
        make(project, cosine=0.5, axis=3),
    )
    MergeProposal.objects.create(project=project, first=absorbed, second=third, similarity=0.88)
    experience_dedup(experience_id=absorbed.pk)  # auto-merged into the survivor

    open_pairs = set(MergeProposal.objects.filter(status="open").values_list("first", "second"))
    assert open_pairs == {(survivor.pk, third.pk)}


def test_template_filler_does_not_make_lessons_about_different_calls_alike():
    # Two customers' lessons: the only words they share are the template's and one tool name.
    first = 'get_user_details "amelia_davis_8890" get_reservation_details "8C8K4E": it led to "…"'
    second = 'get_reservation_details "H8Q05L" cancel_reservation "H8Q05L": it led to "…"'
    assert substance_overlap(first, second) < 0.5
    # The same calls with the same values, worded with more filler, still say the same.
    again = 'then get_user_details "amelia_davis_8890", then get_reservation_details "8C8K4E"'
    assert substance_overlap(first, again) == 1.0
