"""Content digests (traces.services.digests): a re-sent item is a duplicate, other content a
conflict, and rows stored with the digest written before v2 are still matched."""

import pytest

from tests.support.api import step, trajectory
from traces.models import Step, Trace
from traces.schemas import StepIn, TraceIn, TraceOpenIn
from traces.services.digests import V2, content_digest
from traces.services.ingest import payload_digest, step_hash

pytestmark = pytest.mark.django_db


def awkward() -> dict:
    """A trajectory whose JSON the two writers spell differently: a small float (1e-05 vs
    0.00001), a non-ASCII letter (escaped vs UTF-8) and an integer beyond 64 bits."""
    body = trajectory("pinned")
    body["steps"][0]["arguments"] = {"ratio": 1e-05, "name": "café", "big": 2**70}
    return body


def test_the_legacy_digest_is_the_one_stored_before_v2():
    # Computed by the code of commit 877b299 for this very body.
    digest, steps = payload_digest(TraceIn.model_validate(awkward()), legacy=True)
    assert digest == "724adfde84a5674ec23974a070b7178b0004e4076f19f9a11a78552a5606bb03"
    assert steps[0] == "f0f141e2fe855a8a3c67f46504c54ca0e237087c1d9804922eb245c68e18accd"


def test_new_digests_are_marked_and_fit_the_column(api):
    trace = Trace.objects.get(pk=api.post("traces", awkward()).json()["id"])
    hashes = [trace.content_hash, *Step.objects.values_list("content_hash", flat=True)]
    assert all(h.startswith(V2) and len(h) == 64 for h in hashes), hashes
    assert api.post("traces", awkward()).status_code == 200  # the 2**70 takes json's path


def legacy_trace(api, body: dict) -> Trace:
    """Store `body`, then give its row the digest the code before v2 wrote."""
    trace = Trace.objects.get(pk=api.post("traces", body).json()["id"])
    trace.content_hash = payload_digest(TraceIn.model_validate(body), legacy=True)[0]
    trace.save(update_fields=["content_hash"])
    return trace


def test_a_trace_stored_before_v2_is_a_duplicate_when_resent(api):
    trace = legacy_trace(api, awkward())

    again = api.post("traces", awkward())
    other = api.post("traces", {**awkward(), "task": "something else"})

    assert again.status_code == 200 and again.json()["id"] == trace.pk
    assert other.status_code == 409


def test_a_batch_matches_traces_stored_before_v2(api):
    legacy_trace(api, awkward())
    changed = {**awkward(), "task": "something else"}

    first = api.post("traces/batch", {"traces": [awkward()]})
    second = api.post("traces/batch", {"traces": [changed]})

    assert first.json()["results"][0]["status"] == "duplicate"
    assert second.json()["results"][0]["status"] == "conflict"
    assert Trace.objects.count() == 1


def test_streamed_openings_and_steps_stored_before_v2_are_matched(api):
    header = {"external_id": "live-1", "agent": "ops-bot", "task": "Rotate the certificates"}
    opened = api.post("traces/open", header).json()["id"]
    api.post(f"traces/{opened}/steps", {"steps": [step(0, arguments={"x": 1e-05})]})
    # As stored before v2, when the opening had no `tools`.
    opening = {
        "open": TraceOpenIn.model_validate(header).model_dump(mode="json", exclude={"tools"})
    }
    Trace.objects.filter(pk=opened).update(content_hash=content_digest(opening, legacy=True))
    Step.objects.filter(trace_id=opened).update(
        content_hash=step_hash(StepIn.model_validate(step(0, arguments={"x": 1e-05})), legacy=True)
    )

    assert api.post("traces/open", header).json()["id"] == opened
    assert api.post("traces/open", {**header, "task": "other"}).status_code == 409
    resent = api.post(f"traces/{opened}/steps", {"steps": [step(0, arguments={"x": 1e-05})]})
    assert resent.status_code == 200
    changed = api.post(f"traces/{opened}/steps", {"steps": [step(0, arguments={"x": 2})]})
    assert changed.status_code == 409
    assert Trace.objects.get(pk=opened).step_count == 1
