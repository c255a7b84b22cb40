"""A reviewer in a real browser: log in, open a trajectory, relabel with the keyboard, see the
chip and the audit entry change, the 409 conflict with two browsers, and the queue flow."""

import re

import pytest
from playwright.sync_api import expect

from accounts.models import AuditEvent
from tests.support.personas import PASSWORD
from traces.models import Step

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reviewer_logs_in_and_relabels_with_the_keyboard(
    page, live_server, admin_user, project, make_trace, shot, console_errors
):  # fmt: skip
    trace = make_trace(project, steps=6, review=True)
    make_trace(project, task="Rotate the TLS certificate of the ingress", labelled="heuristic")
    errors = console_errors(page)

    page.goto(live_server.url + "/traces/")
    expect(page).to_have_url(re.compile("/accounts/login/"))
    shot(page, "01-login")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Traces")).to_be_visible()
    shot(page, "02-trace-list")

    page.get_by_role("link", name=trace.task).click()
    expect(page.locator("li.step")).to_have_count(6)
    shot(page, "03-inspector")

    page.keyboard.press("j")  # step 0 is current on load; j moves to step 1
    expect(page.locator("#step-1")).to_have_class(re.compile("is-current"))
    page.keyboard.press("3")
    chip = page.locator("#step-1 .chip")
    expect(chip).to_have_text("misleading")
    expect(page.locator("#step-1 .src")).to_contain_text("human · ada")
    expect(page.locator("#step-1")).to_be_focused()

    page.keyboard.press("r")
    reason = page.locator("#step-1 input[name=reason]")
    expect(reason).to_be_focused()
    reason.type("went to the wrong log 4")  # typing digits must not relabel
    expect(chip).to_have_text("misleading")
    page.keyboard.press("Enter")
    expect(page.locator("#step-1 .label-reason")).to_have_text("went to the wrong log 4")

    page.keyboard.press("j")
    page.keyboard.press("4")
    expect(page.locator("#step-2 .chip")).to_have_text("failed")
    page.keyboard.press("k")
    expect(page.locator("#step-1")).to_be_focused()

    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    shot(page, "04-cheatsheet")
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()
    shot(page, "05-inspector-relabelled")

    step = Step.objects.get(trace=trace, index=1)
    assert (step.label, step.label_source, step.label_version) == ("misleading", "human", 3)

    page.get_by_role("link", name="Audit").click()
    rows = page.locator("tr.audit-row[data-action='step.relabel']")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("failed")
    shot(page, "06-audit")
    assert errors == []


def test_a_stale_relabel_is_refused_in_the_second_browser(
    browser, live_server, login, reviewer, admin_user, project, make_trace, shot
):  # fmt: skip
    trace = make_trace(project, steps=3)
    first, second = browser.new_context(), browser.new_context()
    login(first, admin_user)
    login(second, reviewer)
    ada, rita = first.new_page(), second.new_page()
    for page in (ada, rita):
        page.goto(f"{live_server.url}/traces/{trace.pk}/")
        expect(page.locator("#step-0")).to_be_visible()

    ada.keyboard.press("2")
    expect(ada.locator("#step-0 .chip")).to_have_text("redundant")

    rita.keyboard.press("4")  # rita still sees version 1
    conflict = rita.locator("#step-0 .conflict")
    expect(conflict).to_contain_text("changed meanwhile by ada")
    expect(conflict).to_contain_text("'redundant'")
    expect(rita.locator("#step-0 .chip")).to_have_text("redundant")
    shot(rita, "07-conflict")
    assert Step.objects.get(trace=trace, index=0).label == "redundant"

    rita.keyboard.press("4")  # a deliberate second choice, on the version now shown
    expect(rita.locator("#step-0 .chip")).to_have_text("failed")
    expect(rita.locator("#step-0 .conflict")).to_have_count(0)
    assert AuditEvent.objects.filter(action="step.relabel").count() == 2
    first.close()
    second.close()


def test_the_queue_goes_with_the_keyboard_alone(
    page, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    heuristic = make_trace(project, steps=3, labelled="heuristic", task="Heuristic one")
    plain = make_trace(project, steps=2, task="Plain one")
    failed = make_trace(project, steps=6, outcome="failure", task="Failed one")
    Step.objects.filter(trace=failed, index=4).update(label="failed", label_confidence=0.4)
    login(page.context, reviewer)
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))

    page.goto(live_server.url + "/queue/")
    expect(page.locator("#claim-next")).to_be_focused()
    shot(page, "08-queue")
    page.keyboard.press("Enter")
    # The failed run first, opened at the step the machine blames, saying why it is there.
    expect(page).to_have_url(f"{live_server.url}/traces/{failed.pk}/#step-4")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "4")
    expect(page.locator("#queue-reason")).to_contain_text(
        "Failed run: the machine blames step 4 (failed)"
    )
    shot(page, "08b-queue-failed-run")
    page.get_by_role("link", name="Show the blamed steps").click()
    expect(page.locator("li.step:visible")).to_have_count(1)
    expect(page.locator("ol.steps")).to_have_attribute("data-show", "blamed")
    page.keyboard.press("f")  # blamed → all
    page.keyboard.press("k")
    page.keyboard.press("l")  # back to the label of low confidence
    expect(page.locator(".step-status")).to_have_text("Step 4: low-confidence label 1 of 1.")
    page.keyboard.press("Control+Enter")
    expect(page).to_have_url(f"{live_server.url}/traces/{heuristic.pk}/")
    expect(page.locator(".claim-bar")).to_be_visible()
    expect(page.locator("#step-0.is-current")).to_be_attached()  # the page's scripts ran
    page.keyboard.press("j")
    page.keyboard.press("2")
    expect(page.locator("#step-1 .chip")).to_have_text("redundant")
    shot(page, "09-queue-claimed")

    page.keyboard.press("Control+Enter")
    expect(page).to_have_url(f"{live_server.url}/traces/{plain.pk}/")
    expect(
        page.get_by_text("2 machine label(s) confirmed, recorded as accepted as is.")
    ).to_be_visible()
    page.keyboard.press("Control+Enter")
    expect(page).to_have_url(f"{live_server.url}/queue/")
    expect(page.get_by_text("the queue is empty")).to_be_visible()

    sources = Step.objects.filter(trace__project=project).values_list("label_source", flat=True)
    assert set(sources) == {"human"}
    assert len(asked) == 3 and "remaining 2 machine labels (steps 0, 2)" in asked[1]
    assert AuditEvent.objects.filter(action="queue.finish").count() == 3


def test_a_lapsed_session_keeps_the_label_and_sends_it_after_signing_in_in_place(
    page, live_server, login, admin_user, project, make_trace, shot, console_errors
):  # fmt: skip
    from django.contrib.sessions.models import Session

    trace = make_trace(project, steps=4)
    errors = console_errors(page)
    login(page.context, admin_user)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("li.step")).to_have_count(4)
    Session.objects.all().delete()  # the session lapses while the page is open

    page.keyboard.press("j")
    page.keyboard.press("2")
    dialog = page.locator("#session-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("step 1: redundant")
    expect(page.locator("#session-password")).to_be_focused()
    expect(page.locator("#step-1 .chip")).to_have_text("necessary")  # no sign-in page swapped in
    assert page.locator("li.step form[action^='/accounts/login/']").count() == 0
    shot(page, "04b-session-lapsed")

    page.keyboard.type("not the password")
    page.keyboard.press("Enter")
    expect(page.locator("#session-error")).to_contain_text("didn't match")
    page.keyboard.press("Escape")  # later: the banner keeps saying what is not saved
    banner = page.locator("#session-banner")
    expect(banner).to_contain_text("Not saved yet: step 1: redundant. Your session has ended")
    shot(page, "04c-session-banner")
    banner.get_by_role("button", name="Sign in again").click()
    page.locator("#session-password").fill(PASSWORD)
    page.keyboard.press("Enter")

    expect(page.locator("#step-1 .chip")).to_have_text("redundant")
    expect(banner).to_be_hidden()
    expect(dialog).to_be_hidden()
    page.keyboard.press("j")  # the next label goes with the rotated CSRF token
    page.keyboard.press("3")
    expect(page.locator("#step-2 .chip")).to_have_text("misleading")
    saved = dict(Step.objects.filter(trace=trace).values_list("index", "label"))
    assert (saved[1], saved[2]) == ("redundant", "misleading")
    assert Step.objects.get(trace=trace, index=1).labelled_by == admin_user
    # the browser reports the refused requests themselves; nothing else went wrong
    assert [e for e in errors if "401" not in e] == []


def test_a_trajectory_another_reviewer_holds_says_so_and_asks_before_a_label(
    page, live_server, login, admin_user, project, make_trace, shot, console_errors
):  # fmt: skip
    from accounts.models import Membership
    from tests.support.personas import make_user
    from traces.services.review_claims import claim_next

    trace = make_trace(project, steps=3)
    rita = make_user("rita")
    Membership.objects.create(project=project, user=rita, role=Membership.Role.REVIEWER)
    claim_next(project=project, user=rita)
    errors = console_errors(page)
    questions: list[str] = []
    answers = iter([False, True])  # no the first time, yes the second
    page.on(
        "dialog",
        lambda d: (questions.append(d.message), d.accept() if next(answers) else d.dismiss()),
    )  # noqa: E501
    login(page.context, admin_user)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")

    bar = page.locator("#claim-held")
    expect(bar).to_contain_text("Claimed from the queue by rita until")
    shot(page, "04d-claim-held")
    page.keyboard.press("2")  # asked: no
    page.wait_for_timeout(300)
    assert questions and questions[0].startswith("rita is reviewing this trajectory from the queue")
    expect(page.locator("#step-0 .chip")).to_have_text("necessary")
    page.keyboard.press("2")  # asked again: yes
    expect(page.locator("#step-0 .chip")).to_have_text("redundant")
    expect(bar).to_contain_text("You chose to label it anyway (in the audit log).")
    page.keyboard.press("j")
    page.keyboard.press("3")  # not asked again
    expect(page.locator("#step-1 .chip")).to_have_text("misleading")
    assert len(questions) == 2
    assert AuditEvent.objects.filter(action="queue.override", actor_user=admin_user).count() == 1
    assert Step.objects.get(trace=trace, index=0).labelled_by == admin_user
    assert errors == []
