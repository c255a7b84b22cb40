"""The dashboard on a phone (390 × 844, Chromium): no page is wider than the screen, the menu
folds into a button that works with the keyboard, tables scroll inside their own box, and the
list filters are folded into a <details>. Screenshots: test-artifacts/mobile-*.png."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.hindsight_site.dashboard_data import dashboard, dashboard_pages  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
# Elements sticking out of the viewport, unless a scrolling box of theirs holds them.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clips = (p) => ["auto", "scroll", "hidden"].includes(getComputedStyle(p).overflowX);
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (clips(p)) return true;
    }
    return false;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (typeof el.className === "string" && el.className ? "." + el.className.trim() : "");
  return [...document.querySelectorAll("body *")]
    .filter((el) => el.getClientRects().length && !scrolls(el))
    .filter((el) => el.getBoundingClientRect().right > width + 0.5)
    .slice(0, 8)
    .map((el) => name(el) + " right=" + Math.round(el.getBoundingClientRect().right));
}"""


@pytest.fixture
def phone(browser, login, admin_user):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    login(context, admin_user)
    yield context.new_page()
    context.close()


def test_no_page_is_wider_than_a_phone(phone, live_server, dashboard, shot, console_errors):  # noqa: F811
    errors = console_errors(phone)
    too_wide = {}
    for name, path in dashboard_pages(dashboard):
        phone.goto(live_server.url + path)
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            too_wide[name] = (width, phone.evaluate(OVERFLOWING))
        shot(phone, f"mobile-{name}")
    assert too_wide == {}, "\n".join(f"{k}: {v}" for k, v in too_wide.items())
    assert [e for e in errors if "404" not in e] == []


def test_the_menu_opens_and_closes_with_the_keyboard(phone, live_server, dashboard, shot):  # noqa: F811
    phone.goto(live_server.url + reverse("traces:list"))
    menu = phone.get_by_role("button", name="Menu")
    links = phone.locator("#main-menu")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(links.get_by_role("link", name="Queue")).to_be_hidden()
    shot(phone, "mobile-menu-closed")

    for _ in range(6):  # skip link, brand, then the menu button
        phone.keyboard.press("Tab")
        if phone.evaluate("document.activeElement.id") == "menu-button":
            break
    expect(menu).to_be_focused()
    phone.keyboard.press("Enter")
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(links.get_by_role("link", name="Queue")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(phone, "mobile-menu-open")

    phone.keyboard.press("Escape")  # closes, the focus back on the button
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_focused()
    phone.keyboard.press("Space")
    phone.keyboard.press("Tab")  # the first link of the menu
    expect(links.get_by_role("link", name="Traces")).to_be_focused()
    phone.keyboard.press("Tab")
    phone.keyboard.press("Enter")
    expect(phone).to_have_url(live_server.url + reverse("traces:queue"))
    expect(phone.get_by_role("button", name="Menu")).to_have_attribute("aria-expanded", "false")


def test_the_menu_is_a_plain_bar_on_a_desktop(page, live_server, login, admin_user):
    login(page.context, admin_user)
    page.goto(live_server.url + reverse("traces:list"))

    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    expect(page.locator("#main-menu").get_by_role("link", name="Queue")).to_be_visible()


def test_tables_scroll_inside_their_box(phone, live_server, dashboard, shot):  # noqa: F811
    for path in (reverse("traces:list"), reverse("experiences:library"), reverse("accounts:audit")):
        phone.goto(live_server.url + path)
        box = phone.locator(".table-wrap").first
        sizes = box.evaluate(
            "el => [el.scrollWidth, el.clientWidth, el.getBoundingClientRect().right]"
        )
        assert sizes[0] > sizes[1], f"{path}: the table fits, nothing to scroll"
        assert sizes[2] <= PHONE["width"], f"{path}: the box itself sticks out"
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # the box scrolls with the keyboard: it takes the focus, and the arrows move it
    phone.goto(live_server.url + reverse("traces:list"))
    box = phone.locator(".table-wrap").first
    box.focus()
    phone.keyboard.press("ArrowRight")
    phone.keyboard.press("ArrowRight")
    expect(box).to_be_focused()
    for _ in range(40):  # smooth scrolling takes a moment (no wait_for_function: the CSP)
        if box.evaluate("el => el.scrollLeft") > 0:
            break
        phone.wait_for_timeout(50)
    assert box.evaluate("el => el.scrollLeft") > 0
    shot(phone, "mobile-table-scrolled")


def test_list_filters_are_folded_and_open_with_the_keyboard(
    phone, live_server, dashboard, shot  # noqa: F811
):  # fmt: skip
    for path in (reverse("traces:list"), reverse("experiences:library"), reverse("traces:queue"),
                 reverse("accounts:audit")):  # fmt: skip
        phone.goto(live_server.url + path)
        fold = phone.locator("details.filter-fold")
        expect(fold).not_to_have_attribute("open", "")
        expect(fold.locator(".filter-grid")).to_be_hidden()
    shot(phone, "mobile-filters-folded")

    phone.goto(live_server.url + reverse("traces:list"))
    summary = phone.locator("details.filter-fold > summary")
    summary.focus()
    phone.keyboard.press("Enter")
    outcome = phone.get_by_label("Outcome")
    expect(outcome).to_be_visible()
    outcome.focus()
    phone.keyboard.press("ArrowDown")  # success, then failure; each change filters (htmx)
    phone.keyboard.press("ArrowDown")
    expect(outcome).to_have_value("failure")
    expect(phone.locator("#results .count")).to_contain_text("4 traces match")
    expect(summary).to_contain_text("1 active")
    shot(phone, "mobile-filters-open")
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
