"""Undo of "Finish": for HINDSIGHT_FINISH_UNDO_MINUTES the labels it accepted as is go back to
the machine (a step changed since stays), the claim reopens, and it is audited; later, or once
another reviewer holds the trajectory, it is refused saying why."""

from datetime import timedelta

from django.utils import timezone

from accounts.models import AuditEvent
from traces.models import ReviewClaim, Step


def finished(client, trace):
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get(trace=trace, finished_at__isnull=True)
    versions = ",".join(f"{s.index}:{s.label_version}" for s in trace.steps.all())
    done = client.post(
        f"/queue/{claim.pk}/finish/", {"versions": versions, "confirmed": "1"}, follow=True
    )
    assert Step.objects.filter(trace=trace, is_accepted_as_is=True).count() == 3
    return claim, done


def test_finish_offers_undo_and_undo_gives_the_labels_back_to_the_machine(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project, steps=3)
    client = client_for(reviewer)
    claim, done = finished(client, trace)
    body = done.content.decode()
    assert f"Trajectory #{trace.pk} finished." in body
    assert 'action="/queue/undo-finish/"' in body and ">Undo</button>" in body

    undone = client.post("/queue/undo-finish/", follow=True)

    assert undone.redirect_chain == [(f"/traces/{trace.pk}/", 302)]
    assert "Finish undone: 3 labels of" in undone.content.decode()
    steps = list(trace.steps.order_by("index"))
    assert {(s.label_source, s.is_accepted_as_is, s.labelled_by_id) for s in steps} == {
        ("llm", False, None)
    }
    claim.refresh_from_db()
    assert claim.finished_at is None and claim.finish_undone_at is not None
    assert claim.expires_at > timezone.now()  # the trajectory is the reviewer's again
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"queue.finish", "queue.finish_undo", "trace.accept_undo"} <= actions
    # Undone once: a second undo has nothing left.
    again = client.post("/queue/undo-finish/", follow=True)
    assert "There is no Finish of yours left to undo." in again.content.decode()


def test_a_step_relabelled_since_the_finish_keeps_its_new_label(
    client_for, reviewer, admin_user, project, make_trace
):
    trace = make_trace(project, steps=3)
    client = client_for(reviewer)
    finished(client, trace)
    step = trace.steps.get(index=1)
    client_for(admin_user).post(
        f"/traces/{trace.pk}/steps/1/label/",
        {"label": "redundant", "version": str(step.label_version)},
    )

    undone = client.post("/queue/undo-finish/", follow=True)

    assert "Finish undone: 2 labels of" in undone.content.decode()
    relabelled = trace.steps.get(index=1)
    assert (relabelled.label, relabelled.label_source) == ("redundant", "human")


def test_undo_is_refused_after_the_window_and_once_another_reviewer_holds_it(
    client_for, reviewer, admin_user, project, make_trace, settings
):
    trace = make_trace(project, steps=3)
    client = client_for(reviewer)
    claim, _ = finished(client, trace)
    ReviewClaim.objects.filter(pk=claim.pk).update(
        finished_at=timezone.now() - timedelta(minutes=settings.HINDSIGHT_FINISH_UNDO_MINUTES + 1)
    )
    late = client.post("/queue/undo-finish/", follow=True)
    assert "There is no Finish of yours left to undo." in late.content.decode()

    ReviewClaim.objects.filter(pk=claim.pk).update(finished_at=timezone.now())
    Step.objects.filter(trace=trace).update(is_accepted_as_is=False, label_source="llm")
    client_for(admin_user).post("/queue/claim/")  # the same trajectory, claimed by another
    assert ReviewClaim.objects.filter(trace=trace, finished_at__isnull=True).exists()

    taken = client.post("/queue/undo-finish/", follow=True)
    assert "another reviewer has this trajectory now" in taken.content.decode()


def test_undo_needs_a_login_and_a_post(client, client_for, reviewer):
    assert client.post("/queue/undo-finish/").status_code == 302  # to the sign-in page
    assert client_for(reviewer).get("/queue/undo-finish/").status_code == 405
