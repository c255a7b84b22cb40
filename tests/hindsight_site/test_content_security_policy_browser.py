"""Every kind of page works under the strict Content-Security-Policy: the header is sent, and
the browser reports no violation (a blocked script, style or font is a console error)."""

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_pages_run_under_the_policy_without_a_violation(
    page, live_server, login, admin_user, project, make_trace, console_errors, shot
):  # fmt: skip
    errors = console_errors(page)
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else 0)

    answer = page.goto(live_server.url + "/accounts/login/")
    policy = answer.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy and "frame-ancestors 'none'" in policy

    login(page.context, admin_user)
    trace = make_trace(project, steps=5, review=True, outcome="success")
    for path in (
        "/traces/", f"/traces/{trace.pk}/", "/queue/", "/stats/", "/experiences/",
        "/experiences/stats/", "/merges/", "/kb/", "/audit/", "/settings/", "/admin/",
    ):  # fmt: skip
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
    # The stats page's bars get their width from classes, not inline styles.
    page.goto(live_server.url + "/stats/")
    expect(page.locator("#chart-labels")).to_be_visible()

    page.goto(live_server.url + "/api/v1/docs")
    expect(page.locator(".swagger-ui .info")).to_be_visible()  # the API docs run too
    shot(page, "csp-api-docs")
    assert violations == [] and missing == [] and errors == []
