"""Relabelling makes a version only when the wording changes, and the version says who wrote the
words (issue 14 point 4): a reviewer confirms a label with the keyboard, then changes one, and the
experience's page shows one version, then two, the second by a person."""

import pytest
from playwright.sync_api import expect

from experiences.models import Experience
from hindsight_site.review_tasks import rederive_trace, review_trace
from tests.support.pipeline_trajectories import seed_000_body
from traces.models import Step
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

pytestmark = pytest.mark.django_db(transaction=True)
KEYS = {"necessary": "1", "redundant": "2", "misleading": "3", "failed": "4"}


def test_a_confirmed_label_makes_no_version_and_a_changed_one_a_human_version(
    page, live_server, login, reviewer, project, shot
):  # fmt: skip
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(seed_000_body())).trace
    assert review_trace(trace.pk) == "reviewed"
    experience = Experience.objects.get()
    login(page.context, reviewer)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("#step-0.is-current")).to_be_attached()  # the page's scripts ran

    page.keyboard.press("j")
    same = Step.objects.get(trace=trace, index=1).label
    page.keyboard.press(KEYS[same])  # the reviewer agrees with the machine
    expect(page.locator("#step-1 .src")).to_contain_text("human")
    rederive_trace(trace.pk)  # what the worker runs after a relabel
    assert experience.versions.count() == 1

    page.goto(f"{live_server.url}/experiences/{experience.pk}/")
    versions = page.locator("table.versions tbody tr")
    expect(versions).to_have_count(1)

    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("#step-0.is-current")).to_be_attached()
    page.keyboard.press("j")
    other = next(label for label in KEYS if label not in (same, "failed"))
    page.keyboard.press(KEYS[other])
    expect(page.locator("#step-1 .chip")).to_have_text(other)
    rederive_trace(trace.pk)
    assert experience.versions.count() == 2

    page.goto(f"{live_server.url}/experiences/{experience.pk}/")
    expect(versions).to_have_count(2)
    newest = versions.first
    expect(newest).to_contain_text("re-derived from corrected labels")
    expect(newest.locator(".badge")).to_have_text("human")
    shot(page, "40-versions-only-when-the-wording-changed", full_page=True)
