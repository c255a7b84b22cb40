"""A trajectory full of XSS payloads renders inert in every page that shows it."""

import pytest
from playwright.sync_api import expect

from traces.models import Step

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "<script>window.__xss = 'script'; alert('script')</script>"
IMG = "<img src=x onerror=\"window.__xss='img'; alert('img')\">"
SVG = "<svg onload=\"window.__xss='svg'\"></svg>"
LINK = "<a id=evil href=\"javascript:window.__xss='link'\">click me</a>"
UNICODE = "safe\u202egnp.exe\u200b <scr\u200bipt>window.__xss='zw'</scr\u200bipt> \ufeff"
ATTR = '" autofocus onfocus="window.__xss=\'attr\'" x="'
CORPUS = " ".join([SCRIPT, IMG, SVG, LINK, UNICODE, ATTR])


def _xss_trace(project, factory):
    trace = factory(
        project, steps=2, review=True,
        task=f"Deploy {SCRIPT} {UNICODE}", agent=IMG, environment=["docker"],
        external_id=f"x-{LINK[:40]}", intent=ATTR, feedback=SVG, final_answer=LINK,
        metadata={"note": SCRIPT},
    )  # fmt: skip
    Step.objects.filter(trace=trace, index=0).update(
        tool=IMG, arguments={"cmd": SCRIPT, ATTR: LINK}, observation=CORPUS,
        observation_raw=CORPUS, content=CORPUS, error_type=SVG,
        context={"task_goal": SCRIPT, "subtask": IMG, "extra": LINK},
        label_reason=IMG,
    )  # fmt: skip
    return trace


def _assert_inert(page, dialogs: list[str]) -> None:
    assert dialogs == []
    assert page.evaluate("window.__xss") is None
    assert page.locator("#evil").count() == 0
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("svg[onload]").count() == 0
    assert page.locator("[onfocus], [onerror]").count() == 0
    for script in page.locator("script").all():
        assert "__xss" not in (script.text_content() or "")


def test_an_xss_corpus_renders_inert(
    page, live_server, login, admin_user, project, make_trace, shot
):  # fmt: skip
    trace = _xss_trace(project, make_trace)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    login(page.context, admin_user)

    page.goto(live_server.url + "/traces/")
    expect(page.locator("table.traces")).to_contain_text("<script>")
    _assert_inert(page, dialogs)

    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    expect(page.locator("h1.task")).to_contain_text("<script>window.__xss")
    expect(page.locator("h1.task")).to_contain_text("safe[U+202E]gnp.exe[U+200B]")  # no bidi trick
    page.locator("#step-0 details.args summary").click()
    page.locator("#step-0 details.context summary").click()
    page.locator("#step-0 details.raw summary").click()  # the raw observation, via htmx
    expect(page.locator("#step-0 .raw-text")).to_contain_text("onerror=")
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    _assert_inert(page, dialogs)
    shot(page, "10-xss-inspector")

    for path in (f"/traces/compare/?a={trace.pk}&b={trace.pk}", "/audit/", "/queue/", "/stats/"):
        page.goto(live_server.url + path)
        _assert_inert(page, dialogs)
