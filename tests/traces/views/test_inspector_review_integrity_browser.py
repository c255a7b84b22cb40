"""What a reviewer's keys write is what they meant: Ctrl+Enter asks before accepting machine labels
(and those stay out of kappa), number keys label the step in view, and an override keeps the
machine's opinion visible with a way back to it."""

import re

import pytest
from playwright.sync_api import expect

from accounts.models import AuditEvent
from traces.models import Review, Step

pytestmark = pytest.mark.django_db(transaction=True)


def test_ctrl_enter_asks_before_accepting_and_accepted_labels_stay_out_of_kappa(
    page, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    trace = make_trace(project, steps=5, labelled="heuristic", review=True)
    login(page.context, reviewer)
    page.goto(live_server.url + "/queue/")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("#step-0.is-current")).to_be_attached()  # the page's scripts ran
    page.keyboard.press("j")
    page.keyboard.press("2")  # the one step rita judges herself
    expect(page.locator("#step-1 .chip")).to_have_text("redundant")
    # saved, and the server's answer swapped in (the finish form counts what is left from it):
    # under load the chip could read "redundant" before the page knew the label was saved
    for _ in range(50):
        if Step.objects.filter(trace=trace, index=1, label_source="human").exists():
            break
        page.wait_for_timeout(100)
    page.wait_for_load_state("networkidle")

    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.keyboard.press("Control+Enter")
    expect(page.locator("#step-1 .chip")).to_have_text("redundant")
    page.wait_for_timeout(300)  # a submit that was not stopped would have navigated by now
    assert len(asked) == 1, "Ctrl+Enter confirmed the machine labels without asking"
    assert "remaining 4 machine labels (steps 0, 2, 3, 4) as is" in asked[0]
    assert "not as your own judgement" in asked[0]
    expect(page).to_have_url(f"{live_server.url}/traces/{trace.pk}/")
    assert Step.objects.filter(trace=trace, label_source="heuristic").count() == 4

    page.once("dialog", lambda dialog: dialog.accept())
    page.keyboard.press("Control+Enter")
    expect(page).to_have_url(f"{live_server.url}/queue/")
    expect(
        page.get_by_text("4 machine label(s) confirmed, recorded as accepted as is.")
    ).to_be_visible()
    flags = sorted(Step.objects.filter(trace=trace).values_list("index", "is_accepted_as_is"))
    assert flags == [(0, True), (1, False), (2, True), (3, True), (4, True)]

    page.goto(live_server.url + "/stats/")
    expect(page.get_by_text("1 step labelled by a person")).to_be_visible()
    expect(page.locator(".accepted-note")).to_contain_text("4 labels accepted as is")
    shot(page, "20-stats-accepted-left-out", full_page=True)

    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("#step-0 .src")).to_contain_text("human · rita · accepted as is")
    expect(page.locator("#step-1 .src")).not_to_contain_text("accepted as is")


def _long_trace(project, make_trace):
    trace = make_trace(project, steps=25)
    Review.objects.create(
        trace=trace, kind=Review.Kind.FULL, trigger="long_enough", window_start=0, window_end=24,
        reviewer="llm", prompt_version="v1", effective_steps=[12], ineffective_steps=[20],
        labels={str(i): {"label": "necessary", "reason": "r"} for i in range(25)},
    )  # fmt: skip
    return trace


def _label_of(trace, index: int) -> tuple[str, str]:
    step = Step.objects.get(trace=trace, index=index)
    return step.label, step.label_source


def test_number_keys_label_the_step_of_the_url_fragment(
    page, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    trace = _long_trace(project, make_trace)
    login(page.context, reviewer)

    page.goto(f"{live_server.url}/traces/{trace.pk}/#step-20")
    expect(page.locator("#step-20")).to_have_class(re.compile("is-current"))
    expect(page.locator("#step-20")).to_be_focused()
    page.keyboard.press("3")
    expect(page.locator("#step-20 .chip")).to_have_text("misleading")
    shot(page, "21-fragment-labels-the-step-in-view")
    assert _label_of(trace, 0) == ("necessary", "llm")  # the off-screen first step is untouched

    page.evaluate("location.hash = '#step-5'")  # hashchange: back/forward, a pasted link
    expect(page.locator("#step-5")).to_have_class(re.compile("is-current"))
    page.keyboard.press("4")
    expect(page.locator("#step-5 .chip")).to_have_text("failed")
    assert _label_of(trace, 20) == ("misleading", "human")


def test_number_keys_label_the_step_a_review_link_or_focus_moved_to(
    page, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    trace = _long_trace(project, make_trace)
    login(page.context, reviewer)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("#step-0")).to_have_class(re.compile("is-current"))

    page.locator('.review-panel a[href="#step-12"]').click()
    expect(page.locator("#step-12")).to_have_class(re.compile("is-current"))
    expect(page.locator("#step-0")).not_to_have_class(re.compile("is-current"))
    page.keyboard.press("2")
    expect(page.locator("#step-12 .chip")).to_have_text("redundant")
    shot(page, "22-review-link-labels-the-linked-step")

    page.keyboard.press("j")  # now 13; the same link again changes no fragment
    expect(page.locator("#step-13")).to_have_class(re.compile("is-current"))
    page.locator('.review-panel a[href="#step-12"]').click()
    expect(page.locator("#step-12")).to_have_class(re.compile("is-current"))
    page.keyboard.press("4")
    expect(page.locator("#step-12 .chip")).to_have_text("failed")

    page.locator("#step-8").focus()  # e.g. Tab, or a screen reader's focus
    expect(page.locator("#step-8")).to_have_class(re.compile("is-current"))
    page.keyboard.press("3")
    expect(page.locator("#step-8 .chip")).to_have_text("misleading")

    assert _label_of(trace, 0) == ("necessary", "llm")
    assert _label_of(trace, 13) == ("necessary", "llm")
    assert _label_of(trace, 12) == ("failed", "human")


def test_an_override_shows_the_machine_label_and_goes_back_to_it(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors
):  # fmt: skip
    trace = make_trace(project, steps=3, labelled="heuristic")
    reason = "a second look at the same log"
    Review.objects.create(
        trace=trace, kind=Review.Kind.FULL, trigger="long_enough", window_start=0, window_end=2,
        reviewer="heuristic", prompt_version="v1",
        labels={str(i): {"label": "redundant", "reason": reason, "confidence": 0.5}
                for i in range(3)},
    )  # fmt: skip
    Step.objects.filter(trace=trace).update(
        label="redundant", label_reason=reason, label_confidence=0.5
    )
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")

    page.keyboard.press("j")
    page.keyboard.press("1")
    step = page.locator("#step-1")
    expect(step.locator(".chip")).to_have_text("necessary")
    expect(step.locator(".machine-was")).to_have_text(f"was: redundant · heuristic 0.50 · {reason}")
    expect(step.get_by_role("button", name="back to the machine label")).to_be_visible()
    expect(page.locator("#step-0 .machine-was")).to_have_count(0)
    shot(page, "23-override-shows-the-machine-label")

    page.keyboard.press("u")
    expect(step.locator(".chip")).to_have_text("redundant")
    expect(step.locator(".src")).to_have_text("heuristic · 0.50")
    expect(step.locator(".machine-was")).to_have_count(0)
    expect(step.get_by_role("button", name="back to the machine label")).to_have_count(0)
    restored = Step.objects.get(trace=trace, index=1)
    assert (restored.label_source, restored.label_reason, restored.label_version) == (
        "heuristic", reason, 3,
    )  # fmt: skip

    page.keyboard.press("4")
    expect(step.locator(".chip")).to_have_text("failed")
    step.get_by_role("button", name="back to the machine label").click()
    expect(step.locator(".chip")).to_have_text("redundant")
    expect(step).to_be_focused()
    shot(page, "24-back-to-the-machine-label")
    events = AuditEvent.objects.filter(action="step.relabel").order_by("pk")
    assert [e.after["source"] for e in events] == ["human", "heuristic", "human", "heuristic"]

    # Accept all asks too, naming the labels as they are now (step 1 is the machine's again) and
    # sending the versions shown now: step 1 is accepted, not reported as changed by others.
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name="Accept all machine labels").click()
    expect(
        page.get_by_text("3 machine label(s) confirmed, recorded as accepted as is.")
    ).to_be_visible()
    assert asked and "Accept the 3 machine labels (steps 0, 1, 2) as is?" in asked[0]
    expect(page.get_by_text("Changed by someone else")).to_have_count(0)
    assert Step.objects.filter(trace=trace, is_accepted_as_is=True).count() == 3
    assert errors == []
