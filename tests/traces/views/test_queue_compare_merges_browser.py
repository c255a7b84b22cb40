"""In a real browser: the review queue as a work list (guidelines, filters, pages, who holds
what), comparing two runs from the list and from one run's other runs, and the merge queue
updating at once after a merge. Screenshots go to test-artifacts/qcm-*.png."""

import pytest
from playwright.sync_api import expect

from experiences.models import MergeProposal
from traces.models import Step, Trace
from traces.services.review_claims import claim_next

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_queue_reads_as_a_work_list_and_goes_with_the_keyboard(
    page, live_server, login, admin_user, reviewer, project, make_trace, shot, console_errors,
):  # fmt: skip
    traces = [
        make_trace(
            project, task=f"Find why web-{n} restarts", agent="ops-bot" if n % 2 else "gpt-4o"
        )
        for n in range(23)
    ]
    Step.objects.filter(trace=traces[3], index=1).update(label_confidence=0.25)
    Step.objects.filter(trace=traces[4], index=1).update(label_confidence=0.6)  # not under 0.6
    Step.objects.filter(trace=traces[5], index=0).update(label_source="human")
    Trace.objects.filter(pk=traces[7].pk).update(outcome="failure")
    Step.objects.filter(trace=traces[7], index=1).update(label="failed", label_confidence=0.7)
    held = claim_next(project=project, user=reviewer)  # rita holds the most urgent one
    errors = console_errors(page)
    login(page.context, admin_user)

    page.goto(live_server.url + "/queue/")
    expect(page.locator("#queue-count")).to_have_text("1–20 of 23")
    # An admin writes the guidelines, with the keyboard only.
    page.locator(".guidelines-edit summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.type("Label a retry as redundant.\nAsk in #review when unsure.")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Guidelines saved.")).to_be_visible()
    expect(page.locator("#guidelines-text")).to_contain_text("Label a retry as redundant.")
    expect(page.locator("#guidelines-text br")).to_have_count(1)

    rows = page.locator("table.queue-table tbody tr")
    first_row = rows.first
    expect(first_row).to_contain_text("Failed run")
    expect(first_row).to_contain_text("the machine blames step 1 (failed)")
    expect(first_row).to_contain_text("rita")
    expect(first_row.locator("td.claimed")).to_contain_text("UTC")
    expect(rows.nth(1)).to_contain_text("Disagreement")
    expect(rows.nth(2)).to_contain_text("Low confidence")
    expect(rows.nth(2)).to_contain_text("1 of 3 labels under 60 % confidence (lowest 25 %)")
    expect(rows.nth(3)).to_contain_text("the least sure 60 %")  # at the threshold: not low
    expect(page.locator("#queue-progress")).to_contain_text("23 waiting")
    shot(page, "qcm-01-queue", full_page=True)

    page.locator("#queue-next").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#queue-count")).to_have_text("21–23 of 23")
    expect(page).to_have_url(f"{live_server.url}/queue/?cursor=" + page.url.split("cursor=")[1])

    page.goto(live_server.url + "/queue/")
    page.locator("select[name=why]").focus()
    page.keyboard.press("ArrowDown")  # "Failed run"; the change filters through htmx
    expect(page.locator("#queue-count")).to_contain_text("1–1 of 1 matching these filters")
    page.locator("select[name=agent]").select_option("gpt-4o")
    page.locator("select[name=why]").select_option("")
    expect(page.locator("#queue-count")).to_contain_text("of 12 matching")
    shot(page, "qcm-02-queue-filtered")

    page.get_by_role("link", name=traces[0].task).click()
    expect(page).to_have_url(f"{live_server.url}/traces/{traces[0].pk}/")
    assert held.trace_id == traces[7].pk
    assert errors == []


def test_two_runs_are_compared_from_the_list_and_from_one_runs_other_runs(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors,
):  # fmt: skip
    task = "Find why the web container keeps restarting"
    good = make_trace(project, task=task, outcome="success", external_id="restart-web-1")
    bad = make_trace(project, task=task, outcome="failure", external_id="restart-web-2")
    scene = make_trace(project, task="Something else entirely", external_id="other-1")
    long_text = "OOMKilled " + " ".join(f"line{n}" for n in range(120))
    Step.objects.filter(trace=good, index=1).update(observation=long_text + " exit 0")
    Step.objects.filter(trace=bad, index=1).update(
        observation=long_text + " exit 137 <img src=x onerror=window.__xss=1>"
    )
    Step.objects.filter(trace=bad, index=0).update(arguments={"cmd": "docker logs api --tail 0"})
    errors = console_errors(page)
    login(page.context, reviewer)

    page.goto(live_server.url + "/traces/")
    button = page.locator("#compare-selected")
    expect(button).to_be_disabled()
    page.get_by_label(f"Tick #{good.pk} to compare").focus()
    page.keyboard.press("Space")
    expect(page.locator("#compare-hint")).to_have_text("One ticked: tick one more.")
    page.get_by_label(f"Tick #{bad.pk} to compare").focus()
    page.keyboard.press("Space")
    expect(button).to_be_enabled()
    expect(page.get_by_label(f"Tick #{good.pk} to compare")).to_be_checked()
    page.wait_for_timeout(400)  # pico fades the tick in: let the screenshot show it
    shot(page, "qcm-03-list-ticked")
    button.focus()
    page.keyboard.press("Enter")

    expect(page.locator("table.compare")).to_be_visible()
    row0 = page.locator("table.compare tbody tr").first
    expect(row0.locator("del")).to_have_text(["web"])
    expect(row0.locator("ins")).to_have_text(["api"])
    long = page.locator("table.compare tbody tr").nth(1).locator("details.long").last
    expect(long.locator("ins")).to_be_hidden()
    long.locator("summary").focus()
    page.keyboard.press("Enter")  # expand the truncated text
    expect(long.locator("ins").first).to_be_visible()
    expect(long).to_contain_text("onerror=window.__xss=1")  # as text
    assert page.evaluate("window.__xss") is None
    shot(page, "qcm-04-compare", full_page=True)

    page.locator(f'a[href="/traces/{bad.pk}/#step-1"]').click()
    expect(page).to_have_url(f"{live_server.url}/traces/{bad.pk}/#step-1")

    page.goto(f"{live_server.url}/traces/compare/?a={good.pk}")
    expect(page.get_by_role("heading", name="Other runs of this task")).to_be_visible()
    runs = page.locator("table.runs tbody tr")
    expect(runs).to_have_count(2)  # the same task first, then the same scene
    expect(runs.nth(0)).to_contain_text(f"#{bad.pk}")
    expect(runs.nth(0)).to_contain_text("same task")
    expect(runs.nth(1)).to_contain_text(f"#{scene.pk}")
    expect(runs.nth(1)).to_contain_text("same scene: operation, docker, 100 % of the tools")
    shot(page, "qcm-05-other-runs")
    page.get_by_role("link", name=f"#{good.pk} and #{bad.pk}").click()
    expect(page.locator("table.compare")).to_be_visible()

    page.goto(f"{live_server.url}/traces/compare/?a={good.pk}&b={good.pk}")
    expect(page.locator("#compare-error")).to_contain_text("the same trajectory twice")
    shot(page, "qcm-06-compare-error")
    assert [e for e in errors if "400" not in e] == []  # the styled 400 logs itself


def test_a_merge_updates_the_other_cards_at_once_and_undo_says_so(
    page, live_server, login, admin_user, project, make_experience, make_proposal, shot,
    console_errors,
):  # fmt: skip
    a, b, c = (
        make_experience(project, advice=f"When the {n} container restarts, read its logs first.")
        for n in ("web", "api", "db")
    )
    ab = make_proposal(a, b, similarity=0.93)
    bc = make_proposal(b, c, similarity=0.91)
    for n in range(21):  # more than a page
        make_proposal(make_experience(project), make_experience(project), similarity=0.8 - n / 1000)
    errors = console_errors(page)
    login(page.context, admin_user)

    page.goto(live_server.url + "/merges/")
    expect(page.locator("#queue-range")).to_have_text("1–20 of 23, most similar first")
    expect(page.locator(f"#proposal-{bc.pk}")).to_be_visible()
    shot(page, "qcm-07-merges-before")

    card = page.locator(f"#proposal-{ab.pk}")
    card.get_by_role("button", name=f"Merge #{b.pk} into #{a.pk}").click()
    expect(card).to_contain_text(f"Merged #{b.pk} into #{a.pk}.")
    ac = MergeProposal.objects.get(first=a, second=c)
    expect(page.locator(f"#proposal-{bc.pk}")).to_have_count(0)  # gone without a reload
    expect(page.locator(f"#proposal-{ac.pk}")).to_be_visible()  # re-pointed to the survivor
    expect(page.locator("#queue-count")).to_have_text("(22)")
    expect(page.locator("#history tr.merge-row")).to_have_count(1)
    shot(page, "qcm-08-merges-after")

    page.locator("#proposals-next").click()
    expect(page.locator("#queue-range")).to_have_text("21–22 of 22, most similar first")
    shot(page, "qcm-09-merges-page-2")

    page.locator("#history tr.merge-row").get_by_role("button", name="Undo").click()
    expect(page.locator("#history .undone-note")).to_have_text(
        f"Merge undone: #{b.pk} is back on its own."
    )
    expect(page.locator(f"#proposal-{ab.pk}")).to_have_count(0)  # page 2 still; ab is on page 1
    expect(page.locator("#queue-count")).to_have_text("(23)")  # the queue reloaded itself
    shot(page, "qcm-10-merges-undone")
    assert errors == []
