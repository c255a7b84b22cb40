"""Relabelling: saved at once, audited, re-derivation requested, stale versions refused (409)."""

import pytest

from accounts.models import AuditEvent
from traces.models import Step, Trace


def _relabel(client, trace, index=0, *, label="redundant", version=1, reason="", htmx=True):
    return client.post(
        f"/traces/{trace.pk}/steps/{index}/label/",
        {"label": label, "version": version, "reason": reason},
        headers={"HX-Request": "true"} if htmx else None,
    )


def test_relabelling_saves_a_human_label_and_returns_the_step(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project)

    response = _relabel(client_for(reviewer), trace, reason="a detour")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<li class="step')
    assert 'data-label="redundant"' in body and "human · rita" in body
    assert 'name="version" value="2"' in body
    step = Step.objects.get(trace=trace, index=0)
    assert (step.label, step.label_source, step.label_reason) == ("redundant", "human", "a detour")
    assert step.labelled_by == reviewer and step.labelled_at is not None
    assert step.label_version == 2


def test_relabelling_is_audited_with_before_and_after(client_for, reviewer, project, make_trace):
    trace = make_trace(project)

    _relabel(client_for(reviewer), trace)

    event = AuditEvent.objects.get(action="step.relabel")
    assert event.actor_user == reviewer and event.project == project
    assert event.before["label"] == "necessary" and event.before["source"] == "llm"
    assert event.after["label"] == "redundant" and event.after["source"] == "human"
    assert event.after["trace_id"] == trace.pk and event.after["index"] == 0


@pytest.mark.django_db(transaction=True)
def test_relabelling_marks_the_trace_for_rederivation(client_for, reviewer, project, make_trace):
    import redis as redis_lib
    from django.conf import settings

    trace = make_trace(project)
    broker = redis_lib.from_url(settings.REDIS_URL)
    broker.delete("celery")

    _relabel(client_for(reviewer), trace)

    assert Trace.objects.get(pk=trace.pk).labels_changed_at is not None
    messages = broker.lrange("celery", 0, -1)
    assert any(b"hindsight.rederive_trace" in m for m in messages)
    broker.delete("celery")


def test_a_stale_version_is_refused_with_the_current_value(
    client_for, reviewer, admin_user, project, make_trace
):
    trace = make_trace(project)
    assert _relabel(client_for(admin_user), trace, label="failed").status_code == 200

    response = _relabel(client_for(reviewer), trace, label="redundant", version=1)

    assert response.status_code == 409
    body = response.content.decode()
    assert "Not saved." in body and "changed meanwhile by ada" in body
    assert "now &#x27;failed&#x27; (version 2)" in body
    assert 'name="version" value="2"' in body  # choosing again is a deliberate overwrite
    assert Step.objects.get(trace=trace, index=0).label == "failed"
    assert AuditEvent.objects.filter(action="step.relabel").count() == 1


def test_without_htmx_a_relabel_redirects_back_to_the_step(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project)

    response = _relabel(client_for(reviewer), trace, index=2, htmx=False)

    assert response.status_code == 302
    assert response.url == f"/traces/{trace.pk}/#step-2"


def test_the_same_label_twice_is_one_decision(client_for, reviewer, project, make_trace):
    trace = make_trace(project)
    client = client_for(reviewer)

    _relabel(client, trace)
    again = _relabel(client, trace, version=2)

    assert again.status_code == 200
    assert Step.objects.get(trace=trace, index=0).label_version == 2
    assert AuditEvent.objects.filter(action="step.relabel").count() == 1


def test_an_unknown_label_is_refused(client_for, reviewer, project, make_trace):
    trace = make_trace(project)

    assert _relabel(client_for(reviewer), trace, label="brilliant").status_code == 422


def test_another_projects_reviewer_cannot_relabel(client_for, outsider, project, make_trace):
    trace = make_trace(project)

    assert _relabel(client_for(outsider), trace).status_code == 404
    assert Step.objects.get(trace=trace, index=0).label_source == "llm"


def test_anonymous_cannot_relabel(client, project, make_trace):
    trace = make_trace(project)

    assert _relabel(client, trace).status_code == 401  # htmx: the page asks to sign in again
    assert _relabel(client, trace, htmx=False).status_code == 302
    assert Step.objects.get(trace=trace, index=0).label_source == "llm"


def test_relabel_needs_a_post(client_for, reviewer, project, make_trace):
    trace = make_trace(project)

    assert client_for(reviewer).get(f"/traces/{trace.pk}/steps/0/label/").status_code == 405


def test_accept_all_confirms_the_machine_labels_seen(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=3)
    client = client_for(reviewer)

    response = client.post(
        f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1,2:1"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 200
    assert response.headers["HX-Redirect"] == f"/traces/{trace.pk}/"
    steps = Step.objects.filter(trace=trace)
    assert {(s.label, s.label_source, s.label_version, s.is_accepted_as_is) for s in steps} == {
        ("necessary", "human", 2, True)
    }
    event = AuditEvent.objects.get(action="trace.accept_all")
    assert event.after == {
        "steps": {"0": ["necessary", "human"], "1": ["necessary", "human"],
                  "2": ["necessary", "human"]},
        "accepted_as_is": True,
    }  # fmt: skip
    assert Trace.objects.get(pk=trace.pk).labels_changed_at is not None


def test_accept_all_leaves_steps_changed_meanwhile(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=3)
    Step.objects.filter(trace=trace, index=2).update(label="failed", label_version=5)

    client = client_for(reviewer)
    response = client.post(
        f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1,2:1", "confirmed": "1"}
    )

    assert response.status_code == 302
    assert Step.objects.get(trace=trace, index=2).label_source == "llm"
    page = client.get(response.url)
    assert "left as is: step 2" in page.content.decode()


def test_accept_all_of_another_project_is_not_found(client_for, outsider, project, make_trace):
    trace = make_trace(project)

    response = client_for(outsider).post(
        f"/traces/{trace.pk}/accept/", {"versions": "0:1", "confirmed": "1"}
    )

    assert response.status_code == 404
