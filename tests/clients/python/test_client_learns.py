"""What a trajectory recorded with HindsightClient teaches: it is reviewed like any other, leaves
an experience, and the next recall through the same client returns it."""

from __future__ import annotations

from hindsight_site.review_tasks import review_trace
from traces.models import Trace


def test_a_recorded_run_is_reviewed_and_the_next_recall_returns_its_experience(site):
    client = site.client()
    rec = client.recorder(
        agent="ops-bot", task="Find out why the web container keeps restarting",
        environment=["docker"],
    )  # fmt: skip
    with rec.step("docker_ps", {"all": True}) as call:
        call.observation = "web  Restarting (137) 5 seconds ago"
    with rec.step("docker_logs", {"name": "web"}) as call:
        call.observation = "Killed process 4411 (node) exit code 137 OOMKilled"
    with rec.step("docker_update", {"name": "web", "memory": "1g"}) as call:
        call.observation = "web"
    assert rec.finish("success", final_answer="exit code 137: OOMKilled; memory now 1g", wait=15)

    trace = Trace.objects.get(external_id=rec.external_id)
    assert review_trace(trace.pk) == "reviewed"
    (experience_id,) = trace.experience_sources.values_list("experience_id", flat=True)

    recall = client.recall(
        "The web container restarts again and again", environment=["docker"],
        include_candidates=True,
    )  # fmt: skip
    assert recall.items[0].experience_id == experience_id
    assert "docker_logs" in recall.items[0].advice
