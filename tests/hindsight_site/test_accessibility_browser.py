"""axe-core on every dashboard page, with realistic data, at desktop and phone widths.

axe (node_modules/axe-core, pinned in package.json) is run with `page.evaluate(<axe.min.js>)`:
a script tag added by Playwright would be an inline script, which the site's CSP refuses, while
an evaluation through the DevTools protocol is not subject to the page's CSP. The pages keep
their real CSP (no `bypass_csp`), so a page that works here works for people too.
Experimental rules (label-content-name-mismatch among them) are switched on as well; a serious
or critical violation on any page fails the test with the list of them.
Screenshots: test-artifacts/a11y-<width>-<page>.png.
"""

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.hindsight_site.dashboard_data import dashboard, dashboard_pages  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
RUN_AXE = """async () => {
  const experimental = axe.getRules(["experimental"]).map((rule) => rule.ruleId);
  const rules = Object.fromEntries(experimental.map((id) => [id, { enabled: true }]));
  const result = await axe.run(document, { rules, resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.join(" ") + " :: " + n.failureSummary.split("\\n")[1]),
  }));
}"""


def axe_violations(page) -> list[dict[str, Any]]:
    """The serious and critical violations axe finds on the page as it is now."""
    if not AXE.exists():  # fail, not skip: an accessibility check that silently ran nothing
        pytest.fail(f"{AXE} is missing: npm ci (make test runs it)")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    found = page.evaluate(RUN_AXE)
    return [v for v in found if v["impact"] in SERIOUS]


def describe(page_name: str, violations: list[dict[str, Any]]) -> list[str]:
    return [
        f"{page_name}: {v['id']} ({v['impact']}) {v['help']} ×{len(v['nodes'])}: {v['nodes'][:3]}"
        for v in violations
    ]


# Each colour scheme once and each width once: colour contrast changes with the scheme, not the
# width, and what the phone's layout hides or folds changes with the width, not the scheme (the
# four pairs cost twice the time).
@pytest.mark.parametrize(("width", "scheme"), [(1440, "light"), (390, "dark")])
def test_no_page_has_a_serious_accessibility_violation(
    browser, live_server, login, admin_user, dashboard, shot, width, scheme  # noqa: F811
):  # fmt: skip
    """Every page in both colour schemes (the system's setting picks one: dark mode)."""
    context = browser.new_context(
        viewport={"width": width, "height": 900 if width > 400 else 844}, color_scheme=scheme
    )
    page = context.new_page()
    problems: list[str] = []

    page.goto(live_server.url + reverse("login"))
    expect(page.get_by_role("button", name="Log in")).to_be_visible()
    problems += describe("login", axe_violations(page))
    login(context, admin_user)
    for name, path in dashboard_pages(dashboard):
        page.goto(live_server.url + path)
        if page.locator('[hx-trigger~="load"]').count():
            # htmx-loaded parts (the stats' experience half); other pages are whole at `load`,
            # and waiting for the network to be idle costs them half a second each.
            page.wait_for_load_state("networkidle")
        problems += describe(name, axe_violations(page))
        shot(page, f"a11y-{width}-{name}" + ("-dark" if scheme == "dark" else ""))
    context.close()
    assert problems == [], "\n".join(problems)


def test_the_review_panels_step_links_are_targets_of_24_px(
    page, live_server, login, admin_user, dashboard  # noqa: F811
):  # fmt: skip
    login(page.context, admin_user)
    page.goto(live_server.url + reverse("traces:detail", args=[dashboard["trace"].pk]))

    links = page.locator(".review-panel .step-links a")
    expect(links).to_have_count(6)
    boxes = [links.nth(i).bounding_box() for i in range(6)]
    assert all(box and box["width"] >= 24 and box["height"] >= 24 for box in boxes), boxes
    links.first.focus()
    page.keyboard.press("Enter")  # a step link still goes to its step
    expect(page).to_have_url(re.compile(r"#step-0$"))


FOCUS_RING = """() => {
  const el = document.activeElement, style = getComputedStyle(el);
  const name = el.tagName + (el.id ? "#" + el.id : "") + " " + el.textContent.trim().slice(0, 30);
  return [name, style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2];
}"""


@pytest.mark.parametrize("path", ["traces:list", "experiences:library", "traces:queue"])
def test_the_keyboard_focus_is_always_visible(
    page, live_server, login, admin_user, dashboard, path  # noqa: F811
):  # fmt: skip
    login(page.context, admin_user)
    page.goto(live_server.url + reverse(path))

    unseen = []
    for _ in range(30):
        page.keyboard.press("Tab")
        name, has_ring = page.evaluate(FOCUS_RING)
        if not has_ring and not name.startswith("BODY"):  # BODY: past the last control
            unseen.append(name)
    assert unseen == []
