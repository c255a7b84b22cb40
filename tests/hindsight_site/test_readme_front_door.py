"""The README's first example, as a newcomer runs it: the trajectory it sends is reviewed and
yields an experience, and the recall shown right after it returns that experience."""

import json
import re
from pathlib import Path

import pytest

from hindsight_site.review_tasks import review_trace
from traces.models import Trace

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_curl_bodies(section: str) -> dict[str, dict]:
    """The JSON bodies of the curl commands in a README section, by the API path they post to."""
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.index("\n## ", start + 1)
    bodies = {}
    for path, body in re.findall(
        r"curl -s http://localhost:8000/api/v1/(\S+) .*?-d '(.*?)'", text[start:end], re.S
    ):
        bodies.setdefault(path, json.loads(body))
    return bodies


def test_the_first_example_teaches_something_the_next_recall_returns(project, make_key, api_for):
    bodies = readme_curl_bodies("Sending trajectories")
    api = api_for(make_key(project, ("ingest", "recall")))

    sent = api.post("traces", bodies["traces"])
    assert sent.status_code == 201
    trace = Trace.objects.get(pk=sent.json()["id"])
    assert review_trace(trace.pk) == "reviewed"
    trace.refresh_from_db()
    assert trace.review_status == "reviewed", trace.review_status_reason
    (experience_id,) = trace.experience_sources.values_list("experience_id", flat=True)

    answer = api.post("recall", bodies["recall"])
    assert answer.status_code == 200
    first = answer.json()["items"][0]
    assert first["experience_id"] == experience_id
    # What worked, in order: the logs that showed the OOM kill are part of it; the values are
    # named by where they came from (the next container has another name).
    assert first["advice"].startswith(
        "When you use docker_update, first docker_ps all=true, then docker_logs <name from the "
        "request>; call it with <name from the request>"
    )
    assert first["advice"] in answer.json()["prompt_block"]
