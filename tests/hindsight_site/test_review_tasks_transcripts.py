"""An imported transcript goes through review like any trajectory and yields an experience."""

import pytest

from experiences.models import Experience
from hindsight_site.review_tasks import review_trace
from tests.support.transcripts import BUILDERS, Call, import_body
from traces.models import Trace

pytestmark = pytest.mark.django_db

TASK = "Service svc-a cannot reach svc-b in the prod namespace"
CALLS = [
    Call("kubectl_get_pods", {"namespace": "prod"}, "svc-a-7d9f Running\nsvc-b-5c2a Running"),
    Call("docker_restart", {"container": "svc-b"}, "restarted"),
    Call(
        "kubectl_exec",
        {"pod": "svc-a-7d9f", "cmd": "curl svc-b:8080"},
        "Error: curl: (7) Failed to connect to svc-b port 8080: Connection refused",
        is_error=True,
    ),
    Call(
        "kubectl_logs",
        {"pod": "svc-a-7d9f"},
        "dial tcp 10.0.3.17:8080: i/o timeout\nblocked by NetworkPolicy deny-all-egress",
    ),
    Call(
        "kubectl_get_networkpolicy",
        {"name": "deny-all-egress"},
        "spec: podSelector app=svc-a egress: [] resourceVersion=48213",
    ),
    Call(
        "kubectl_patch_networkpolicy",
        {"name": "deny-all-egress", "allow": "app=svc-b"},
        "networkpolicy.networking.k8s.io/deny-all-egress patched",
    ),
]
ANSWER = "The NetworkPolicy deny-all-egress blocked svc-a; patched it to allow app=svc-b."


@pytest.mark.parametrize("format", sorted(BUILDERS))
def test_an_imported_transcript_is_reviewed_into_an_experience(api, format):
    body = import_body(format, f"{format}-1", messages=BUILDERS[format](TASK, CALLS, ANSWER))
    response = api.post("traces/import", body)
    assert response.status_code == 201, response.json()
    trace = Trace.objects.get(pk=response.json()["id"])

    assert review_trace(trace.pk) == "reviewed"

    trace.refresh_from_db()
    assert trace.review_status == "reviewed" and trace.final_answer == ANSWER
    failed = trace.steps.get(tool="kubectl_exec")
    assert failed.is_error and failed.label == "failed"
    experience = Experience.objects.get()
    assert experience.advice.startswith("When you use kubectl_patch_networkpolicy, first ")
    assert TASK[:40] not in experience.advice  # the scene is matched on, never quoted
    assert experience.tools == trace.tools and experience.environment == ["k8s"]
    assert experience.sources.get().trace == trace
