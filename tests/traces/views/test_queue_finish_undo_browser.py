"""In Chromium, keyboard only: a reviewer finishes a trajectory with Ctrl+Enter, sees the next
one with an Undo in the message, undoes it with the keyboard and is back on the first one, its
labels the machine's again and the claim theirs (axe-clean). Ctrl+Enter pressed before the page
has finished loading waits for it. Screenshot:
test-artifacts/finish-undo.png."""

import re

import pytest
from playwright.sync_api import expect

from tests.hindsight_site.test_accessibility_browser import axe_violations
from traces.models import ReviewClaim, Step

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_finish_is_undone_from_the_next_trajectory_with_the_keyboard(
    page, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    first = make_trace(project, steps=3, outcome="failure", task="Failed one")
    second = make_trace(project, steps=2, task="Plain one")
    login(page.context, reviewer)
    page.on("dialog", lambda dialog: dialog.accept())  # "Finish and accept …?": yes

    page.goto(live_server.url + "/queue/")
    # The trace page's later deferred script is held back, so the key below comes after
    # hindsight.js marked the current step but before DOMContentLoaded, when htmx takes the form
    # over: it must wait for htmx, not post the form plainly to the no-script confirm page.
    held = []
    page.route("**/js/nav.js", lambda route: held.append(route))
    page.keyboard.press("Enter")  # claim the next: the failed run first
    expect(page).to_have_url(re.compile(rf"/traces/{first.pk}/(#step-\d+)?$"))
    expect(page.locator("li.step.is-current")).to_be_attached()  # hindsight.js ran
    page.keyboard.press("Control+Enter")
    page.wait_for_timeout(300)
    expect(page).to_have_url(re.compile(rf"/traces/{first.pk}/(#step-\d+)?$"))
    for route in held:
        route.continue_()
    page.unroute("**/js/nav.js")
    expect(page).to_have_url(re.compile(rf"/traces/{second.pk}/(#step-\d+)?$"))
    undo = page.get_by_role("button", name="Undo")
    expect(page.get_by_text(f"Trajectory #{first.pk} finished.")).to_be_visible()
    assert Step.objects.filter(trace=first, is_accepted_as_is=True).count() == 3
    assert axe_violations(page) == []
    shot(page, "finish-undo")

    undo.focus()
    page.keyboard.press("Enter")

    expect(page).to_have_url(f"{live_server.url}/traces/{first.pk}/")
    expect(page.get_by_role("status")).to_contain_text("Finish undone: 3 labels of")
    expect(page.locator(".claim-bar")).to_be_visible()  # the first one is the reviewer's again
    assert not Step.objects.filter(trace=first, is_accepted_as_is=True).exists()
    assert ReviewClaim.objects.get(trace=first, finished_at__isnull=True).user == reviewer
