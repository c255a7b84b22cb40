"""In Chromium: a filter that cannot be applied says so next to its field (typed with the
keyboard, swapped in by htmx, and on a full page load); the trace list pages older and back
newer with the keyboard, the focus and the scroll going to the top of the list; /stats/
without JavaScript shows its figures as tables. Screenshots: test-artifacts/lists-*.png."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.hindsight_site.test_accessibility_browser import axe_violations
from traces.models import Trace

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_upside_down_date_range_typed_with_the_keyboard_is_refused_next_to_the_field(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors
):  # fmt: skip
    for n in range(3):
        make_trace(project, task=f"Find why web-{n} restarts")
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(live_server.url + reverse("traces:list"))

    page.get_by_label("Since").focus()
    page.keyboard.type("12102026")  # mm/dd/yyyy in this locale
    page.get_by_label("Until (incl.)").focus()
    page.keyboard.type("12012026")
    page.keyboard.press("Enter")  # submits the form: htmx swaps the results in

    until_error = page.locator("#id_until_error")
    expect(until_error).to_have_text("Earlier than Since: neither date was applied.")
    expect(page.locator("#id_since_error")).to_have_text(
        "Later than Until: neither date was applied."
    )
    expect(page.get_by_label("Until (incl.)")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("alert")).to_contain_text("2 filters were not applied")
    expect(page.locator("#results .count")).to_have_text("3 traces.")
    assert axe_violations(page) == []
    shot(page, "lists-01-date-range-refused")

    # Correcting it clears the errors in place.
    page.get_by_label("Until (incl.)").fill("2026-12-31")
    page.get_by_label("Until (incl.)").press("Enter")
    expect(until_error).to_have_text("")
    expect(page.get_by_label("Until (incl.)")).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator(".filter-notice")).to_have_count(0)
    assert errors == []


def test_a_bad_value_in_a_link_is_shown_on_every_list(
    page, live_server, login, admin_user, project, make_trace, make_experience, shot
):  # fmt: skip
    make_trace(project)
    make_experience(project)
    login(page.context, admin_user)

    for path, field in (
        (reverse("traces:list") + "?outcome=bogus", "#id_outcome_error"),
        (reverse("experiences:library") + "?status=bogus", "#id_status_error"),
        (reverse("traces:queue") + "?why=bogus", "#id_why_error"),
        (reverse("accounts:audit") + "?until=2026-02-31", "#id_until_error"),
    ):
        page.goto(live_server.url + path)
        expect(page.locator(field)).not_to_be_empty()
        expect(page.locator(field)).to_be_visible()
        expect(page.locator(".filter-notice")).to_contain_text("One filter was not applied")
        assert axe_violations(page) == []
    shot(page, "lists-02-audit-bad-date")


def test_older_and_newer_pages_with_the_keyboard_go_to_the_top_of_the_list(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors
):  # fmt: skip
    for n in range(105):  # pages of 50
        make_trace(project, labelled=None, task=f"Task number {n}")
    newest = Trace.objects.order_by("-pk").first()
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(live_server.url + reverse("traces:list"))
    expect(page.locator("#page-newer")).to_have_count(0)

    older = page.locator("#page-older")
    older.focus()  # at the bottom of a long page
    assert page.evaluate("window.scrollY") > 1000
    page.keyboard.press("Enter")
    expect(page.locator("#page-newer")).to_be_visible()
    expect(page.locator("#results")).to_be_focused()
    expect(page.locator("table.traces tbody tr")).to_have_count(50)
    top = page.evaluate("document.getElementById('results').getBoundingClientRect().top")
    assert 0 <= top < 120, top  # the list's top, just under the sticky bar
    expect(page).to_have_url(f"{live_server.url}/traces/?cursor=" + page.url.split("cursor=")[1])

    page.locator("#page-newer").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#page-newer")).to_have_count(0)
    expect(page.locator("#results")).to_be_focused()
    expect(page.locator("table.traces tbody tr").first).to_contain_text(newest.task)
    expect(page.locator("table.traces tbody tr")).to_have_count(50)
    expect(page).to_have_url(f"{live_server.url}/traces/")

    page.go_back()  # the history has the older page
    expect(page.locator("#page-newer")).to_be_visible()
    # (the screenshot only now: one taken before the htmx page changes made this history
    # restore report CSP errors on inline styles, none of which the page itself sets)
    shot(page, "lists-03-older-page-from-history")
    page.locator("#page-newest").focus()
    page.keyboard.press("Enter")
    expect(page.locator("table.traces tbody tr")).to_have_count(50)
    assert errors == []


def test_stats_without_javascript_are_tables(
    browser, live_server, login, reviewer, project, make_trace, make_experience, shot
):  # fmt: skip
    from traces.models import ReviewClaim, Step

    make_trace(project, steps=4, review=True)
    make_trace(project, steps=3, labelled="heuristic")
    accepted = make_trace(project, steps=5)  # Ctrl+Enter's acceptances, not judgements
    Step.objects.filter(trace=accepted).update(label_source="human", is_accepted_as_is=True)
    make_experience(project, status="approved")
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    login(context, reviewer)
    page = context.new_page()

    page.goto(live_server.url + reverse("traces:stats"))
    labels = page.get_by_role("table", name="Step labels by source")
    expect(labels).to_be_visible()
    expect(labels.get_by_role("columnheader", name="accepted as is")).to_be_visible()
    cells = labels.get_by_role("row", name="necessary").get_by_role("cell")
    expect(cells).to_have_text(["4", "3", "0", "5", "12"])  # llm, heuristic, judged, accepted
    expect(page.get_by_role("table", name="Review status")).to_contain_text("reviewed")
    expect(page.get_by_role("table", name="Traces per day (last 30 days)")).to_contain_text("2")
    expect(page.get_by_text("Loading")).to_be_hidden()
    expect(page.locator("canvas").first).to_be_hidden()
    shot(page, "lists-04-stats-without-js", full_page=True)

    page.get_by_role("link", name="Experience and recall statistics").click()
    expect(page.get_by_role("heading", name="Experiences and recall")).to_be_visible()
    expect(page.get_by_text("Experiences by status")).to_be_visible()
    shot(page, "lists-05-experience-stats-without-js")

    # Without JavaScript, Ctrl+Enter's form ("Finish & next") asks first too.
    page.goto(live_server.url + reverse("traces:queue"))
    page.get_by_role("button", name="Claim the next trajectory").click()
    page.get_by_role("button", name="Finish & next").click()
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text("Finish and accept the remaining 4 machine labels as is?")
    shot(page, "lists-07-finish-asks-without-js")
    claim = ReviewClaim.objects.get()
    assert (
        claim.finished_at is None
        and not Step.objects.filter(trace_id=claim.trace_id, is_accepted_as_is=True).exists()
    )
    question.get_by_role("button", name="Finish & next").click()
    expect(page.get_by_text("4 machine label(s) confirmed")).to_be_visible()
    context.close()


def test_stats_with_javascript_draw_charts_over_the_tables(
    page, live_server, login, reviewer, project, make_trace, console_errors
):  # fmt: skip
    make_trace(project, steps=4, review=True)
    errors = console_errors(page)
    login(page.context, reviewer)

    page.goto(live_server.url + reverse("traces:stats"))
    expect(page.locator("#chart-labels")).to_be_visible()
    expect(page.locator("#experience-stats")).to_contain_text("Experiences by status")
    # the table stays for screen readers, out of sight and out of the Tab order
    labels = page.get_by_role("table", name="Step labels by source")
    expect(labels).to_have_count(1)
    assert labels.evaluate("t => t.closest('.figure-table').getBoundingClientRect().width") <= 1
    assert page.locator(".figure.has-chart .figure-table[tabindex]").count() == 0
    assert errors == []


def test_search_finds_a_run_by_an_observation_and_opens_it_at_the_step(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors
):  # fmt: skip
    from traces.models import Step

    runs = [make_trace(project, task=f"Look at web-{n}", steps=4) for n in range(3)]
    Step.objects.filter(trace=runs[1], index=3).update(observation="Killed process 4411 OOMKilled")
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(live_server.url + reverse("traces:list"))

    page.get_by_label("Search tasks, steps and observations").focus()
    page.keyboard.type("oomkill")  # typed: the list follows through htmx
    expect(page.locator("#results .count")).to_have_text("1 trace matches these filters.")
    found = page.get_by_role("link", name="found in 1 step, first step 3")
    expect(found).to_be_visible()
    assert axe_violations(page) == []
    shot(page, "lists-06-search-steps")
    found.click()
    expect(page).to_have_url(f"{live_server.url}/traces/{runs[1].pk}/#step-3")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "3")

    page.go_back()
    page.get_by_label("Search tasks, steps and observations").fill("")
    page.get_by_label("Run id").fill(runs[2].external_id)
    page.get_by_label("Run id").press("Enter")
    expect(page.locator("#results .count")).to_have_text("1 trace matches these filters.")
    expect(page.get_by_role("link", name="Look at web-2")).to_be_visible()
    assert errors == []
