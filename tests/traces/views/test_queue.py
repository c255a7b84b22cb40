"""The review queue: who needs a human, claims that lapse, finish and next."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AuditEvent
from traces.models import ReviewClaim, Step
from traces.services.review_claims import claim_next


def test_it_lists_traces_needing_a_person_most_doubtful_first(
    client_for, reviewer, project, make_trace
):
    plain = make_trace(project, task="Plain llm labels")
    heuristic = make_trace(project, task="Heuristic labels", labelled="heuristic")
    corrected = make_trace(project, task="Corrected once")
    Step.objects.filter(trace=corrected, index=0).update(label_source="human")
    low = make_trace(project, task="Unsure labels")
    Step.objects.filter(trace=low, index=1).update(label_confidence=0.2)
    make_trace(project, task="Not labelled at all", labelled=None)
    done = make_trace(project, task="All confirmed", labelled="human")

    body = client_for(reviewer).get("/queue/").content.decode()

    # Heuristic labels are no reason of their own: unchecked like the LLM's, oldest first.
    order = [corrected.task, low.task, plain.task, heuristic.task]
    assert [body.index(t) for t in order] == sorted(body.index(t) for t in order)
    assert "Not labelled at all" not in body and done.task not in body
    assert "heuristic labels" not in body
    assert "Disagreement" in body and "Low confidence" in body and "Never reviewed" in body
    assert "<strong>4</strong> waiting" in body


def test_claiming_opens_the_next_trace_with_the_finish_bar(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project)
    client = client_for(reviewer)

    response = client.post("/queue/claim/")

    assert response.url == f"/traces/{trace.pk}/"
    page = client.get(response.url).content.decode()
    assert 'id="finish-form"' in page and "Finish &amp; next" in page
    assert ReviewClaim.objects.get().user == reviewer


def test_a_claimed_trace_is_not_offered_to_another_reviewer(
    reviewer, admin_user, project, make_trace
):
    first = make_trace(project)
    second = make_trace(project)

    mine = claim_next(project=project, user=reviewer)
    theirs = claim_next(project=project, user=admin_user)

    assert {mine.trace_id, theirs.trace_id} == {first.pk, second.pk}
    assert claim_next(project=project, user=reviewer).pk == mine.pk  # one live claim each


def test_a_lapsed_claim_frees_the_trace(reviewer, admin_user, project, make_trace):
    make_trace(project)
    mine = claim_next(project=project, user=reviewer)
    past = timezone.now() - timedelta(hours=2)
    ReviewClaim.objects.filter(pk=mine.pk).update(
        claimed_at=past, expires_at=past + timedelta(minutes=30)
    )

    theirs = claim_next(project=project, user=admin_user)

    assert theirs is not None and theirs.trace_id == mine.trace_id
    mine.refresh_from_db()
    assert mine.released_at is not None


def test_finishing_confirms_the_labels_and_opens_the_next(
    client_for, reviewer, project, make_trace
):
    first = make_trace(project)
    second = make_trace(project)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    response = client.post(
        f"/queue/{claim.pk}/finish/", {"versions": "0:1,1:1,2:1", "confirmed": "1"}
    )

    assert response.url == f"/traces/{second.pk}/"
    assert set(Step.objects.filter(trace=first).values_list("label_source", flat=True)) == {"human"}
    claim.refresh_from_db()
    assert claim.finished_at is not None
    assert AuditEvent.objects.filter(action="queue.finish", object_id=str(first.pk)).exists()
    assert f'href="/traces/{first.pk}/"' not in client.get("/queue/").content.decode()


def test_finishing_the_last_one_says_the_queue_is_empty(client_for, reviewer, project, make_trace):
    make_trace(project, steps=1)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    response = client.post(
        f"/queue/{claim.pk}/finish/", {"versions": "0:1", "confirmed": "1"}, follow=True
    )

    assert "the queue is empty" in response.content.decode()
    assert "Nothing waiting" in response.content.decode()


def test_an_empty_queue_says_so(client_for, reviewer):
    response = client_for(reviewer).post("/queue/claim/", follow=True)

    assert "nothing needs a person right now" in response.content.decode()


def test_someone_elses_claim_cannot_be_finished(
    client_for, reviewer, outsider, project, make_trace
):
    make_trace(project)
    claim = claim_next(project=project, user=reviewer)

    assert client_for(outsider).post(f"/queue/{claim.pk}/finish/").status_code == 404


def test_a_colleagues_claim_cannot_be_finished_or_released(
    client_for, reviewer, admin_user, project, make_trace
):
    make_trace(project)
    claim = claim_next(project=project, user=reviewer)
    colleague = client_for(admin_user)  # of the same project, even an admin

    assert colleague.post(f"/queue/{claim.pk}/finish/").status_code == 404
    assert colleague.post(f"/queue/{claim.pk}/release/").status_code == 404
    claim.refresh_from_db()
    assert claim.finished_at is None and claim.released_at is None


def test_releasing_gives_the_trace_back(client_for, reviewer, admin_user, project, make_trace):
    make_trace(project)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    client.post(f"/queue/{claim.pk}/release/")

    assert claim_next(project=project, user=admin_user).trace_id == claim.trace_id


def test_the_queue_page_runs_a_constant_number_of_queries(
    client_for, reviewer, project, make_trace
):
    client = client_for(reviewer)
    make_trace(project)

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            client.get("/queue/")
        return len(captured)

    few = count()
    for _ in range(8):
        make_trace(project, labelled="heuristic")
    assert count() == few


def test_a_claimed_failed_run_opens_at_its_blamed_step_and_says_why(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    failed = make_trace(project, outcome="failure", steps=5)
    Step.objects.filter(trace=failed, index=3).update(label="failed", label_confidence=0.4)
    client = client_for(reviewer)

    claimed = client.post("/queue/claim/")
    page = client.get(f"/traces/{failed.pk}/").content.decode()

    assert claimed["Location"] == f"/traces/{failed.pk}/#step-3"
    reason = page.split('id="queue-reason"')[1].split("</span>")[0]
    assert "Failed run</strong>: the machine blames step 3 (failed)" in reason
    assert f'href="/traces/{failed.pk}/?show=blamed" data-filter="blamed"' in reason
    assert f'href="/traces/{failed.pk}/?show=low" data-filter="low"' in reason


def test_queue_rows_link_to_the_step_their_reason_points_at(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    unsure = make_trace(project, steps=4)
    Step.objects.filter(trace=unsure, index=2).update(label_confidence=0.2)
    plain = make_trace(project)

    body = client_for(reviewer).get("/queue/").content.decode()

    assert f'href="/traces/{unsure.pk}/#step-2"' in body
    assert f'href="/traces/{plain.pk}/"' in body  # nobody looked at it: from the top


def test_finishing_opens_the_next_at_its_step(client_for, reviewer, project, make_trace):
    first = make_trace(project, outcome="failure")
    Step.objects.filter(trace=first, index=0).update(label="misleading")
    second = make_trace(project, steps=4)
    Step.objects.filter(trace=second, index=3).update(label_confidence=0.1)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    response = client.post(
        f"/queue/{claim.pk}/finish/", {"versions": "0:1,1:1,2:1", "confirmed": "1"}
    )

    assert response["Location"] == f"/traces/{second.pk}/#step-3"
