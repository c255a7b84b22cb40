"""In Chromium, keyboard only: on a list, j / k move from row to row, x ticks the row's box,
Enter opens it, ? shows the keys (and is clean for axe); typing in a filter moves nothing.
Screenshot: test-artifacts/list-keys.png."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.hindsight_site.test_accessibility_browser import axe_violations

pytestmark = pytest.mark.django_db(transaction=True)

ROW_OF_FOCUS = "document.activeElement.closest('tr')?.querySelector('input[name=id]')?.value"


def test_the_trace_list_is_worked_with_the_keyboard(
    page, live_server, login, reviewer, project, make_trace, shot, console_errors
):  # fmt: skip
    traces = [make_trace(project, task=f"Find why web-{n} restarts") for n in range(3)]
    newest_first = [str(t.pk) for t in reversed(traces)]
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(live_server.url + reverse("traces:list"))

    page.keyboard.press("j")
    assert page.evaluate(ROW_OF_FOCUS) == newest_first[0]
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")  # the last row stays the last
    assert page.evaluate(ROW_OF_FOCUS) == newest_first[2]
    page.keyboard.press("k")
    assert page.evaluate(ROW_OF_FOCUS) == newest_first[1]

    page.keyboard.press("x")
    page.keyboard.press("k")
    page.keyboard.press("x")
    ticked = page.locator("#results input[name=id]:checked")
    expect(ticked).to_have_count(2)
    assert sorted(ticked.evaluate_all("boxes => boxes.map(b => b.value)")) == sorted(
        newest_first[:2]
    )
    page.keyboard.press("x")  # untick
    expect(ticked).to_have_count(1)

    page.keyboard.press("?")
    keys = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(keys).to_be_visible()
    expect(keys).to_contain_text("tick or untick the row's box")
    assert axe_violations(page) == []
    shot(page, "list-keys")
    page.keyboard.press("Escape")
    expect(keys).to_be_hidden()

    search = page.get_by_label("Search tasks, steps and observations")
    search.focus()
    page.keyboard.type("jk")  # typed, not moved
    expect(search).to_have_value("jk")
    assert page.evaluate(ROW_OF_FOCUS) is None
    # The typed words filter the list once the 400 ms pause passes: nothing matches "jk".
    rows = page.locator("#results input[name=id]")
    expect(rows).to_have_count(0)
    search.press("Control+a")
    search.press("Backspace")  # emptied, the list comes back whole
    expect(rows).to_have_count(3)

    page.locator("body").focus()
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    expect(page).to_have_url(live_server.url + reverse("traces:detail", args=[traces[-1].pk]))
    assert errors == []
