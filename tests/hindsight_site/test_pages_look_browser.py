"""The other pages render without script errors; screenshots for people to look at."""

import pytest
from playwright.sync_api import expect

from traces.models import Step

pytestmark = pytest.mark.django_db(transaction=True)


def test_stats_settings_and_empty_states_render(
    page, live_server, login, admin_user, project, make_trace, shot, console_errors
):  # fmt: skip
    errors = console_errors(page)
    login(page.context, admin_user)

    page.goto(live_server.url + "/traces/")
    expect(page.get_by_text("No trajectories yet")).to_be_visible()
    shot(page, "11-empty-traces")

    first = make_trace(project, steps=4, review=True, outcome="success")
    second = make_trace(project, steps=5, outcome="failure", labelled="heuristic")
    Step.objects.filter(trace=first, index__in=[0, 1]).update(label_source="human")
    Step.objects.filter(trace=first, index=1).update(label="redundant")

    page.goto(live_server.url + "/stats/")
    expect(page.locator("#chart-labels")).to_be_visible()
    page.wait_for_function("document.querySelector('#chart-labels').width > 0")
    shot(page, "12-stats", full_page=True)

    page.goto(live_server.url + "/settings/")
    page.get_by_label("Name (what uses it)").fill("ci pipeline")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#new-key-value")).to_contain_text("hs_")
    shot(page, "13-settings", full_page=True)

    page.goto(f"{live_server.url}/traces/compare/?a={first.pk}&b={second.pk}")
    expect(page.locator("table.compare")).to_be_visible()
    shot(page, "14-compare", full_page=True)
    assert errors == []
