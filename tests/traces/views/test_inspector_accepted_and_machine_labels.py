"""Accepted as is vs judged by a person (kept out of kappa), and the machine's label next to an
override with its undo, "back to the machine label"."""

import json

import pytest

from accounts.models import AuditEvent
from core.errors import NotFound
from traces.models import Review, ReviewClaim, Step, Trace
from traces.selectors.stats import label_agreement
from traces.services.labels import LabelConflict, step_relabel


def _machine_review(trace: Trace, labels: dict[int, tuple[str, str, float | None]], **fields):
    return Review.objects.create(
        trace=trace, kind=fields.pop("kind", Review.Kind.FULL),
        trigger=fields.pop("trigger", "long_enough"),
        window_start=fields.pop("window_start", 0),
        window_end=fields.pop("window_end", trace.step_count - 1),
        reviewer=fields.pop("reviewer", "heuristic"), prompt_version="v1",
        labels={str(i): {"label": lb, "reason": r, "confidence": c}
                for i, (lb, r, c) in labels.items()},
        **fields,
    )  # fmt: skip


def _relabel(client, trace, index, **data):
    return client.post(
        f"/traces/{trace.pk}/steps/{index}/label/", data, headers={"HX-Request": "true"}
    )


@pytest.fixture
def overridden(project, make_trace, reviewer) -> Trace:
    """Step 1: the heuristic said redundant (0.50, "a second look at the same log"); rita said
    necessary."""
    trace = make_trace(project, steps=3, labelled="heuristic")
    _machine_review(
        trace, {i: ("redundant", "a second look at the same log", 0.5) for i in (0, 1, 2)}
    )
    Step.objects.filter(trace=trace).update(
        label="redundant", label_reason="a second look at the same log", label_confidence=0.5
    )
    step_relabel(
        trace=trace, index=1, label="necessary", reason="it found the OOM", expected_version=1,
        user=reviewer,
    )  # fmt: skip
    return trace


def test_accepted_labels_are_left_out_of_the_agreement(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=4, review=True)  # the machine said necessary everywhere
    client = client_for(reviewer)
    client.post(f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1,2:1,3:1", "confirmed": "1"})
    _relabel(client, trace, 1, label="redundant", version=2)

    agreement = label_agreement(project=project)

    assert (agreement["pairs"], agreement["accepted_as_is"]) == (1, 3)
    assert agreement["matrix"][0][1] == 1  # machine necessary, person redundant
    page = client.get("/stats/").content.decode()
    assert "3 labels accepted as is" in page


def test_only_accepted_labels_give_no_agreement_at_all(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=3, review=True)
    client = client_for(reviewer)
    client.post(f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1,2:1", "confirmed": "1"})

    page = client.get("/stats/").content.decode()
    data = json.loads(
        page.split('id="stats-data" type="application/json">')[1].split("</script>")[0]
    )

    assert data["agreement"]["pairs"] == 0
    assert "3 labels accepted as is do not count" in page


def test_a_relabel_of_an_accepted_step_makes_it_judged(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=2, review=True)
    client = client_for(reviewer)
    client.post(f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1", "confirmed": "1"})

    response = _relabel(client, trace, 0, label="necessary", version=2)  # the same label

    assert response.status_code == 200
    step = Step.objects.get(trace=trace, index=0)
    assert (step.label, step.is_accepted_as_is, step.label_version) == ("necessary", False, 3)
    assert label_agreement(project=project)["pairs"] == 1


def test_finishing_records_accepted_as_is_and_asks_first(client_for, reviewer, project, make_trace):
    first = make_trace(project, steps=3)
    make_trace(project)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    page = client.get(f"/traces/{first.pk}/").content.decode()
    assert 'data-accept-question="Finish and accept the remaining {labels} as is?' in page
    assert 'id="step-2" data-index="2" data-source="llm" data-version="1"' in page
    response = client.post(
        f"/queue/{claim.pk}/finish/", {"versions": "0:1,1:1,2:1"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 200 and response.headers["HX-Redirect"].startswith("/traces/")
    flags = set(Step.objects.filter(trace=first).values_list("label_source", "is_accepted_as_is"))
    assert flags == {("human", True)}
    assert label_agreement(project=project)["pairs"] == 0


def test_finishing_a_lapsed_claim_from_htmx_goes_back_to_the_queue(
    client_for, reviewer, admin_user, project, make_trace
):
    make_trace(project)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()
    ReviewClaim.objects.filter(pk=claim.pk).update(released_at=claim.claimed_at)
    ReviewClaim.objects.create(
        project=project, trace=claim.trace, user=admin_user, expires_at=claim.expires_at
    )

    response = client.post(f"/queue/{claim.pk}/finish/", {}, headers={"HX-Request": "true"})

    assert response.headers["HX-Redirect"] == "/queue/"


def test_the_inspector_shows_what_the_machine_said_next_to_a_human_label(
    client_for, reviewer, overridden
):
    page = client_for(reviewer).get(f"/traces/{overridden.pk}/").content.decode()

    step_1 = page.split('id="step-1"')[1].split("</li>")[0]
    assert "was: redundant · heuristic 0.50 · <bdi>a second look at the same log</bdi>" in step_1
    assert 'name="to_machine"' in step_1
    step_0 = page.split('id="step-0"')[1].split("</li>")[0]
    assert "was:" not in step_0 and 'name="to_machine"' not in step_0  # still the machine's


def test_back_to_the_machine_label_restores_label_reason_and_source(
    client_for, reviewer, overridden
):
    response = _relabel(client_for(reviewer), overridden, 1, to_machine="1", version=2)

    assert response.status_code == 200
    step = Step.objects.get(trace=overridden, index=1)
    assert (step.label, step.label_source, step.label_reason, step.label_confidence) == (
        "redundant", "heuristic", "a second look at the same log", 0.5,
    )  # fmt: skip
    assert (step.labelled_by, step.label_version) == (None, 3)
    assert "was:" not in response.content.decode()
    event = AuditEvent.objects.filter(action="step.relabel").latest("pk")
    assert event.before["label"] == "necessary" and event.before["source"] == "human"
    assert event.after["source"] == "heuristic" and event.after["to_machine"] is True
    assert Trace.objects.get(pk=overridden.pk).labels_changed_at is not None


def test_back_to_the_machine_label_on_a_stale_version_is_refused(client_for, reviewer, overridden):
    response = _relabel(client_for(reviewer), overridden, 1, to_machine="1", version=1)

    assert response.status_code == 409
    assert Step.objects.get(trace=overridden, index=1).label == "necessary"


def test_back_to_the_machine_label_prefers_the_local_review(reviewer, overridden):
    _machine_review(overridden, {1: ("failed", "looped", 0.9)}, kind=Review.Kind.LOCAL,
                    trigger="loop", window_start=1, window_end=2)  # fmt: skip

    step = step_relabel(
        trace=overridden, index=1, label="", reason="", expected_version=2, user=reviewer,
        to_machine=True,
    )  # fmt: skip

    assert (step.label, step.label_reason, step.label_confidence) == ("failed", "looped", 0.9)


def test_back_to_the_machine_label_without_one_is_not_found(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project, labelled=None)
    step_relabel(trace=trace, index=0, label="failed", reason="", expected_version=0, user=reviewer)

    with pytest.raises(NotFound):
        step_relabel(
            trace=trace, index=0, label="", reason="", expected_version=1, user=reviewer,
            to_machine=True,
        )  # fmt: skip
    assert _relabel(client_for(reviewer), trace, 0, to_machine="1", version=1).status_code == 404


def test_a_relabel_without_label_or_undo_is_invalid(client_for, reviewer, overridden):
    assert _relabel(client_for(reviewer), overridden, 1, version=2).status_code == 422


def test_conflict_still_names_the_current_label(reviewer, overridden):
    with pytest.raises(LabelConflict):
        step_relabel(
            trace=overridden, index=1, label="", reason="", expected_version=0, user=reviewer,
            to_machine=True,
        )  # fmt: skip


def test_the_machine_opinion_is_escaped(client_for, reviewer, project, make_trace):
    """The machine's reason comes from a model's output: shown as text, never as markup."""
    trace = make_trace(project, steps=2, labelled="heuristic")
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    _machine_review(trace, {i: ("redundant", hostile, 0.5) for i in (0, 1)})
    Step.objects.filter(trace=trace).update(label="redundant", label_reason=hostile)
    step_relabel(
        trace=trace, index=1, label="necessary", reason="fine", expected_version=1, user=reviewer
    )

    page = client_for(reviewer).get(f"/traces/{trace.pk}/").content.decode()

    step_1 = page.split('id="step-1"')[1].split("</li>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in step_1 and "<script>alert" not in step_1
    assert "<img src=x" not in page


def test_without_javascript_finish_asks_first_naming_the_labels(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    """Ctrl+Enter's form posted without JavaScript accepted at once: now a page asks, and only
    its button (sending `confirmed`) accepts."""
    trace = make_trace(project, steps=3)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()

    asked = client.post(f"/queue/{claim.pk}/finish/", {"versions": "0:1,1:1,2:1"})

    body = asked.content.decode()
    assert asked.status_code == 200 and 'role="alertdialog"' in body
    assert "Finish and accept the remaining 3 machine labels as is?" in body
    assert "Steps 0, 1, 2 of" in body and 'name="confirmed" value="1"' in body
    assert f'action="/queue/{claim.pk}/finish/"' in body
    assert not Step.objects.filter(trace=trace, is_accepted_as_is=True).exists()
    assert ReviewClaim.objects.get().finished_at is None

    done = client.post(f"/queue/{claim.pk}/finish/", {"versions": "0:1,1:1,2:1", "confirmed": "1"})

    assert done.status_code == 302
    assert Step.objects.filter(trace=trace, is_accepted_as_is=True).count() == 3


def test_without_javascript_accept_all_asks_first(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=2)

    asked = client_for(reviewer).post(f"/traces/{trace.pk}/accept/", {"versions": "0:1,1:1"})

    assert "Accept the 2 machine labels as is?" in asked.content.decode()
    assert not Step.objects.filter(trace=trace, is_accepted_as_is=True).exists()
