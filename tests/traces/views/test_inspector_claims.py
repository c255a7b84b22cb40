"""Queue claims shown and enforced on the trace page: who holds it until when, a label or
"Accept all" of another reviewer's claimed trajectory refused until this user chose to label it
anyway, and that choice in the audit log (once per claim)."""

from datetime import timedelta

from django.utils import timezone

from accounts.models import AuditEvent
from traces.models import ReviewClaim, Step
from traces.services.review_claims import claim_next

HTMX = {"HX-Request": "true"}


def _relabel(client, trace, **headers):
    return client.post(
        f"/traces/{trace.pk}/steps/1/label/", {"label": "redundant", "version": "1"},
        headers=headers or None,
    )  # fmt: skip


def test_the_page_shows_who_holds_the_trajectory_until_when(
    client_for, reviewer, admin_user, project, make_trace
):  # fmt: skip
    trace = make_trace(project)
    claim = claim_next(project=project, user=reviewer)
    until = timezone.localtime(claim.expires_at).strftime("%H:%M")

    theirs = client_for(admin_user).get(f"/traces/{trace.pk}/").content.decode()
    mine = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    assert 'id="claim-held"' in theirs and "<bdi>rita</bdi>" in theirs and f"{until} UTC" in theirs
    assert "Label anyway" in theirs
    assert 'id="claim-held"' not in mine and "Finish &amp; next" in mine


def test_a_label_on_a_trajectory_another_holds_is_refused_with_who_holds_it(
    client_for, reviewer, admin_user, project, make_trace
):  # fmt: skip
    trace = make_trace(project)
    claim_next(project=project, user=reviewer)
    client = client_for(admin_user)

    partial = _relabel(client, trace, **HTMX)
    page = _relabel(client, trace)

    assert partial.status_code == 409
    assert "rita is reviewing this trajectory from the queue until" in partial.content.decode()
    assert "nothing was saved" in partial.content.decode()
    assert page.status_code == 302
    assert Step.objects.get(trace=trace, index=1).label_source == "llm"


def test_label_anyway_is_audited_once_and_lets_the_labels_through(
    client_for, reviewer, admin_user, project, make_trace
):  # fmt: skip
    trace = make_trace(project)
    claim = claim_next(project=project, user=reviewer)
    client = client_for(admin_user)
    url = f"/traces/{trace.pk}/claims/{claim.pk}/override/"

    assert client.post(url, headers=HTMX).status_code == 204
    assert client.post(url).status_code == 302  # again, without htmx: no second event
    relabel = _relabel(client, trace, **HTMX)
    accept = client.post(f"/traces/{trace.pk}/accept/", {"versions": "0:1", "confirmed": "1"})

    assert relabel.status_code == 200
    assert Step.objects.get(trace=trace, index=1).labelled_by == admin_user
    assert Step.objects.get(trace=trace, index=0).is_accepted_as_is and accept.status_code == 302
    event = AuditEvent.objects.get(action="queue.override")
    assert event.actor_user == admin_user and event.object_id == str(trace.pk)
    assert event.before["held_by"] == "rita" and event.before["claim"] == claim.pk
    assert ReviewClaim.objects.get(pk=claim.pk).finished_at is None  # the claim stays rita's
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    assert "You chose to label it anyway" in page and "Label anyway</button>" not in page


def test_accept_all_on_a_trajectory_another_holds_is_refused(
    client_for, reviewer, admin_user, project, make_trace
):  # fmt: skip
    trace = make_trace(project)
    claim_next(project=project, user=reviewer)
    client = client_for(admin_user)

    response = client.post(
        f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1,2:1", "confirmed": "1"}, follow=True
    )

    assert "rita is reviewing this trajectory" in response.content.decode()
    assert not Step.objects.filter(trace=trace, is_accepted_as_is=True).exists()


def test_a_lapsed_claim_holds_nothing(client_for, reviewer, admin_user, project, make_trace):
    trace = make_trace(project)
    claim = claim_next(project=project, user=reviewer)
    ReviewClaim.objects.filter(pk=claim.pk).update(
        claimed_at=timezone.now() - timedelta(hours=2),
        expires_at=timezone.now() - timedelta(hours=1),
    )
    client = client_for(admin_user)

    assert 'id="claim-held"' not in client.get(f"/traces/{trace.pk}/").content.decode()
    assert _relabel(client, trace, **HTMX).status_code == 200
    override = client.post(f"/traces/{trace.pk}/claims/{claim.pk}/override/", headers=HTMX)
    assert override.status_code == 204 and not AuditEvent.objects.filter(action="queue.override")


def test_label_anyway_of_another_projects_trace_is_not_found(
    client_for, reviewer, outsider, project, make_trace
):  # fmt: skip
    trace = make_trace(project)
    claim = claim_next(project=project, user=reviewer)

    response = client_for(outsider).post(f"/traces/{trace.pk}/claims/{claim.pk}/override/")

    assert response.status_code == 404


def test_label_anyway_needs_a_login_and_a_post(client, client_for, reviewer, project, make_trace):
    trace = make_trace(project)
    claim = claim_next(project=project, user=reviewer)
    url = f"/traces/{trace.pk}/claims/{claim.pk}/override/"

    assert client.post(url).status_code == 302
    assert client.post(url, headers=HTMX).status_code == 401
    assert client_for(reviewer).get(url).status_code == 405
