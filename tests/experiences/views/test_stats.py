"""The experience half of /stats/: experiences over time, statuses, recall hit rate."""

import pytest

from experiences.models import RecallLog

pytestmark = pytest.mark.django_db


def test_stats_page_loads_the_experience_statistics(client_for, reviewer):
    body = client_for(reviewer).get("/stats/").content.decode()
    assert 'hx-get="/experiences/stats/"' in body


def test_the_partial_shows_experiences_per_day_statuses_and_hit_rate(
    client_for, reviewer, project, make_experience
):
    make_experience(project, status="approved")
    make_experience(project, status="candidate")
    answered = {"returned": [], "feedback_at": "2026-11-30T00:00Z"}
    RecallLog.objects.create(project=project, helpful=[1], **answered)
    RecallLog.objects.create(project=project, unhelpful=[2], **answered)
    RecallLog.objects.create(project=project, returned=[])

    response = client_for(reviewer).get("/experiences/stats/", headers={"HX-Request": "true"})
    body = response.content.decode()

    assert response.status_code == 200
    # the peak day's bar is full
    assert "Experiences distilled per day" in body and 'class="bar w100"' in body
    assert "3 recalls in the last 30 days" in body and "2 with feedback" in body
    assert "Hit rate: <strong>50 %</strong>" in body


def test_the_partial_needs_a_login(client):
    assert client.get("/experiences/stats/").status_code == 302
