"""In Chromium, keyboard only: a reviewer whose browser runs in Tokyo takes its time zone on the
account page in one key press, and the trace list then shows times in it, in the one format
(axe-clean at 1440 and 390 px). Screenshot: test-artifacts/account-time-zone.png."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from accounts.models import AccountSettings
from tests.hindsight_site.test_accessibility_browser import axe_violations
from traces.models import Trace

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_browser_s_zone_is_taken_in_one_key_press_and_the_list_follows(
    browser, live_server, login, reviewer, project, make_trace, shot
):  # fmt: skip
    trace = make_trace(project)
    Trace.objects.filter(pk=trace.pk).update(created_at=datetime(2026, 12, 3, 12, 0, tzinfo=UTC))
    context = browser.new_context(timezone_id="Asia/Tokyo", viewport={"width": 1440, "height": 900})
    login(context, reviewer)
    page = context.new_page()
    page.goto(live_server.url + reverse("traces:list"))
    shown = page.locator(f"tr:has(a[href='/traces/{trace.pk}/']) time").first
    expect(shown).to_have_text("2026-12-03 12:00 UTC")  # the site's zone until it is set

    page.get_by_role("link", name="Account").click()
    use = page.get_by_role("button", name="Use this browser's: Asia/Tokyo")
    expect(use).to_be_visible()
    assert axe_violations(page) == []
    use.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Time zone")).to_have_value("Asia/Tokyo")
    expect(page.get_by_label("Time zone")).to_be_focused()
    page.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    saved = "Times are shown in Asia/Tokyo from now on."
    expect(page.get_by_role("status")).to_contain_text(saved)
    assert AccountSettings.objects.get(user=reviewer).time_zone == "Asia/Tokyo"
    shot(page, "account-time-zone")
    page.set_viewport_size({"width": 390, "height": 844})
    assert axe_violations(page) == []

    page.goto(live_server.url + reverse("traces:list"))
    expect(shown).to_have_text("2026-12-03 21:00 JST")
    assert shown.get_attribute("title") == "2026-12-03 21:00:00 JST (Asia/Tokyo)"
    context.close()
