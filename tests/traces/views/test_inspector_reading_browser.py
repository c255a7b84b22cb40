"""A long trajectory in a real browser: folded long parts, filters and jumps with the keyboard,
the review panel below the measured top bar at 1440 and 1024 px, hostile Markdown and JSON."""

import re

import pytest
from playwright.sync_api import expect

from tests.hindsight_site.test_accessibility_browser import axe_violations, describe
from tests.traces.views.test_inspector_reading import colleague, ingest_reading_trace  # noqa: F401
from traces.models import Step

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reading_trace(api, reviewer, colleague):  # noqa: F811
    return ingest_reading_trace(api, user=reviewer, other_user=colleague)


def _open(page, live_server, login, user, trace, query: str = "", *, drawn: int = 10):
    login(page.context, user)
    page.goto(f"{live_server.url}/traces/{trace.pk}/{query}")
    expect(page.locator("li.step")).to_have_count(drawn)


def _current(page) -> str:
    return page.locator("li.step.is-current").get_attribute("data-index")


def test_long_parts_start_folded_and_open_by_mouse_and_key(
    page, live_server, login, reviewer, reading_trace, shot, console_errors
):  # fmt: skip
    errors = console_errors(page)
    _open(page, live_server, login, reviewer, reading_trace)
    shot(page, "30-inspector-long-folded")

    system = page.locator("#step-0")
    assert system.bounding_box()["height"] < 140  # was ~2,100 px at full height
    preview = system.locator("summary .preview")
    expect(preview).to_be_visible()
    expect(preview).to_contain_text("Rule 1: you are the operations assistant")
    expect(system.locator(".content")).to_be_hidden()

    system.locator("summary").first.click()
    expect(system.locator(".content")).to_be_visible()
    expect(preview).to_be_hidden()  # the preview gives way to the text
    assert system.bounding_box()["height"] > 600

    page.keyboard.press("j")  # step 1 ...
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")  # ... step 6, the long reasoning
    assert _current(page) == "6"
    reasoning = page.locator("#step-6 .content")
    expect(reasoning).to_be_hidden()
    page.keyboard.press("o")
    expect(reasoning).to_be_visible()
    page.keyboard.press("o")
    expect(reasoning).to_be_hidden()

    # A relabel swaps the step: what the reader opened stays open.
    page.keyboard.press("o")
    page.keyboard.press("2")
    expect(page.locator("#step-6 .chip")).to_have_text("redundant")
    expect(reasoning).to_be_visible()
    shot(page, "31-inspector-opened-after-relabel")
    assert errors == []


def test_json_is_formatted_and_markdown_rendered_and_hostile_text_stays_text(
    page, live_server, login, reviewer, reading_trace, shot, console_errors
):  # fmt: skip
    errors = console_errors(page)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _open(page, live_server, login, reviewer, reading_trace)

    message = page.locator("#step-2 .content.markdown")
    expect(message.locator("h4")).to_have_text("Plan")
    expect(message.locator("strong")).to_have_text("read the logs")
    expect(message.locator("ol > li")).to_have_count(2)
    expect(message.locator("a")).to_have_count(1)  # the javascript: link is not a link
    expect(message.locator("a")).to_have_attribute("href", "https://example.com/runbook")
    expect(message).to_contain_text("<script>window.__xss='md'</script>")
    expect(message).to_contain_text("<img src=x onerror=")

    observation = page.locator("#step-3 .observation")
    expect(observation.locator("summary .part").first).to_have_text("Observation")
    expect(observation.locator("pre.obs.json")).to_contain_text('"exit_code": 137')
    expect(observation.locator("pre.obs.json")).to_contain_text("<script>window.__xss='md'")
    observation.locator("details.raw > summary").click()  # formatted / raw, via htmx
    formatted = observation.locator(".raw-json")
    expect(formatted).to_contain_text('"oom_killed": true')
    observation.locator("details.json-raw > summary").click()
    expect(observation.locator(".raw-text")).to_contain_text('"oom_killed":true')
    shot(page, "32-inspector-json-and-markdown")

    assert dialogs == [] and page.evaluate("window.__xss") is None
    assert page.locator("img[src=x], [onerror], #step-2 script").count() == 0
    for script in page.locator("script").all():
        assert "__xss" not in (script.text_content() or "")
    assert errors == []


def test_filters_and_jumps_work_from_the_keyboard(
    page, live_server, login, reviewer, reading_trace, shot, console_errors
):  # fmt: skip
    errors = console_errors(page)
    _open(page, live_server, login, reviewer, reading_trace)
    steps = page.locator("ol.steps")

    page.keyboard.press("e")  # next error
    assert _current(page) == "4"
    expect(page.locator("#step-4")).to_be_focused()
    expect(page.locator(".step-status")).to_have_text("Step 4: error 1 of 1.")
    page.keyboard.press("e")  # the only one: from the top again
    expect(page.locator(".step-status")).to_contain_text("from the top again")
    # n: the next step no person checked (5 and 7 carry the machine's label alone, 6 was
    # accepted as is, 8 and 9 have none)
    page.keyboard.press("n")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "5")
    page.keyboard.press("n")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "7")
    page.keyboard.press("Shift+N")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "5")
    page.keyboard.press("l")  # no label of low confidence here: it says so
    expect(page.locator(".step-status")).to_have_text("No low-confidence label in this trajectory.")
    page.keyboard.press("n")
    page.keyboard.press("n")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "8")

    page.keyboard.press("f")
    expect(steps).to_have_attribute("data-show", "tools")
    expect(page.locator("li.step:visible")).to_have_count(5)
    expect(page.locator(".step-status")).to_have_text("Showing 5 of 10 steps: tool calls.")
    assert "show=tools" in page.url
    page.keyboard.press("k")  # j / k move among the shown steps only
    assert _current(page) == "7"
    page.keyboard.press("k")
    assert _current(page) == "4"
    shot(page, "33-inspector-filter-tools")

    page.keyboard.press("f")
    expect(page.locator("li.step:visible")).to_have_count(1)  # errors
    assert _current(page) == "4"
    page.keyboard.press("f")
    expect(steps).to_have_attribute("data-show", "mine")
    expect(page.locator("li.step:visible")).to_have_count(1)
    assert _current(page) == "3"
    expect(page.locator('[data-count="mine"]')).to_have_text("1")
    page.keyboard.press("u")  # back to the machine's label: no longer "mine", out of the filter
    expect(page.locator('[data-count="mine"]')).to_have_text("0")
    expect(page.locator("li.step:visible")).to_have_count(0)
    expect(page.locator(".step-status")).to_have_text("Showing 0 of 10 steps: labels you set.")

    # Labelling a step makes it "mine" and checked: counts and jumps follow without a reload.
    page.keyboard.press("f")  # low confidence, blamed, then all again
    expect(steps).to_have_attribute("data-show", "low")
    page.keyboard.press("f")
    page.keyboard.press("f")
    expect(steps).to_have_attribute("data-show", "")
    expect(page.locator("li.step:visible")).to_have_count(10)
    page.locator("#step-7").click(position={"x": 5, "y": 5})
    page.keyboard.press("n")  # step 8, unlabelled
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "8")
    page.keyboard.press("1")
    expect(page.locator("#step-8 .chip")).to_have_text("necessary")
    expect(page.locator('[data-count="mine"]')).to_have_text("1")
    page.keyboard.press("n")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "9")
    page.keyboard.press("n")  # 8 is checked now: round to the first unchecked step
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "0")

    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_contain_text("next / previous error")
    shot(page, "34-inspector-keys")
    page.keyboard.press("Escape")
    step = Step.objects.get(trace=reading_trace, index=8)
    assert (step.label, step.labelled_by_id) == ("necessary", reviewer.pk)

    # The filter bar works by mouse too, and a review-panel link to a hidden step shows all.
    page.get_by_role("link", name=re.compile("^Errors")).click()
    expect(page.locator("li.step:visible")).to_have_count(1)
    page.locator(".review-panel .step-links a", has_text="0").first.click()
    expect(steps).to_have_attribute("data-show", "")
    expect(page.locator("#step-0")).to_be_in_viewport()
    assert errors == []


def test_a_filter_link_works_without_javascript(
    browser, live_server, login, reviewer, reading_trace
):  # fmt: skip
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1440, "height": 900}
    )
    page = context.new_page()
    _open(page, live_server, login, reviewer, reading_trace, "?show=errors", drawn=1)

    expect(page.locator("li.step:visible")).to_have_count(1)
    expect(page.locator("#step-4")).to_be_visible()
    expect(page.locator(".step-status")).to_have_text("Showing 1 of 10 steps: errors.")
    page.locator("#step-4 details.args > summary").click()  # <details> opens without JS too
    expect(page.locator("#step-4 details.args pre")).to_contain_text('"cmd": "docker logs web"')
    context.close()


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_review_panel_and_steps_stay_below_the_top_bar(
    page, live_server, login, reviewer, reading_trace, shot, width
):  # fmt: skip
    page.set_viewport_size({"width": width, "height": 900})
    _open(page, live_server, login, reviewer, reading_trace)
    bar = page.locator(".topbar").bounding_box()
    print(f"top bar at {width} px: {bar['height']:.1f} px high")
    assert page.evaluate(
        "getComputedStyle(document.documentElement).getPropertyValue('--hs-topbar-height')"
    ) == f"{bar['height']:g}px"  # fmt: skip

    page.locator("#step-0 summary").first.click()  # a long page to scroll
    page.locator("#step-7 summary").first.click()
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)
    heading = page.locator(".review-panel > h2").first
    if width > 1024:  # two columns: the panel sticks below the bar, its heading readable
        box = heading.bounding_box()
        assert box["y"] >= bar["y"] + bar["height"]
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('.review-panel') !== null",
            [box["x"] + 5, box["y"] + box["height"] / 2],
        )
        assert hit  # nothing lies on top of it
    shot(page, f"35-inspector-scrolled-{width}")

    page.keyboard.press("e")  # a jump lands below the bar, not under it
    page.wait_for_timeout(200)
    step = page.locator("#step-4").bounding_box()
    assert step["y"] >= bar["height"]
    page.keyboard.press("n")
    page.wait_for_timeout(200)
    assert page.locator("#step-8").bounding_box()["y"] >= bar["height"]
    shot(page, f"36-inspector-jumped-{width}")


def test_with_a_queue_claim_the_panel_sits_below_the_bar_and_the_claim_bar(
    page, live_server, login, reviewer, project, reading_trace, shot
):  # fmt: skip
    from traces.services.review_claims import claim_next

    claim = claim_next(project=project, user=reviewer)
    assert claim is not None and claim.trace_id == reading_trace.pk
    _open(page, live_server, login, reviewer, reading_trace)
    page.locator("#step-0 summary").first.click()
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)

    bar = page.locator(".topbar").bounding_box()
    claim_bar = page.locator(".claim-bar").bounding_box()
    heading = page.locator(".review-panel > h2").first.bounding_box()
    assert abs(claim_bar["y"] - (bar["y"] + bar["height"])) < 1  # stuck right below the bar
    assert heading["y"] >= claim_bar["y"] + claim_bar["height"]
    shot(page, "37-inspector-claimed-scrolled")


# ---------------------------------------------------------------------------- a 2,000-step run


def _long_run(project, steps: int = 2000):
    """A run the size the issue met (1,900 steps, a 20 KB system prompt): reasoning, tool calls
    with JSON and log observations, an error every 97 steps, machine labels of mixed confidence."""
    from traces.models import Review, Trace
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest

    rule = "read the logs, the events and the limits first."
    prompt = " ".join(f"Rule {n}: {rule}" for n in range(360))
    body: list[dict] = [{"index": 0, "kind": "system", "content": prompt}]
    for i in range(1, steps):
        if i % 3 == 1:
            body.append({"index": i, "kind": "llm_reasoning",
                         "content": f"**Step {i}.** The restarts follow the memory curve; "
                                    "next I read the container's logs. " * 4})  # fmt: skip
        else:
            pods = [{"name": f"web-{n}", "restarts": i, "memory": "512Mi"} for n in range(12)]
            log = "\n".join(f"2026-12-01T10:{n:02d} web worker {i} memory 480MB" for n in range(24))
            observation = {"pods": pods} if i % 3 == 2 else log
            body.append({"index": i, "kind": "tool_call", "tool": ("kubectl", "shell")[i % 2],
                         "arguments": {"cmd": f"kubectl logs web-{i} --tail 200"},
                         "observation": observation, "is_error": i % 97 == 0})  # fmt: skip
    payload = {"external_id": "long-2000", "agent": "ops-bot", "task": "Why does web restart?",
               "environment": ["k8s"], "outcome": "failure", "steps": body}  # fmt: skip
    trace = trace_ingest(project=project, payload=TraceIn(**payload)).trace
    Step.objects.filter(trace=trace).update(
        label="necessary", label_source="llm", label_confidence=0.9, label_version=1
    )
    Step.objects.filter(trace=trace, index__in=[3, 1203, 1777]).update(label_confidence=0.3)
    Trace.objects.filter(pk=trace.pk).update(review_status=Trace.ReviewStatus.REVIEWED)
    Review.objects.create(
        trace=trace, kind=Review.Kind.FULL, trigger="long_enough", window_start=0,
        window_end=steps - 1, reviewer="llm", prompt_version="v1", goal="Find the restart cause",
        effective_steps=[0, 1900], ineffective_steps=[1203],
    )  # fmt: skip
    return trace


def test_a_2000_step_run_is_usable_at_once_and_loads_the_rest_as_the_reviewer_moves(
    page, live_server, login, reviewer, project, shot, console_errors
):  # fmt: skip
    import time

    trace = _long_run(project)
    errors = console_errors(page)
    login(page.context, reviewer)
    url = f"{live_server.url}/traces/{trace.pk}/"
    page.goto(f"{live_server.url}/queue/")  # a warm connection, as a reviewer has

    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.locator("li.step.is-current").wait_for()
    page.keyboard.press("j")  # usable: the keyboard moves and labels
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "1")
    usable = time.perf_counter() - started
    timing = page.evaluate(
        "(() => { const t = performance.getEntriesByType('navigation')[0];"
        " return [t.responseEnd, t.domContentLoadedEventEnd, t.loadEventEnd, t.transferSize]; })()"
    )
    drawn = page.locator("li.step").count()
    print(
        f"\n2,000 steps: usable in {usable:.2f} s (response {timing[0] / 1000:.2f} s, DOM ready "
        f"{timing[1] / 1000:.2f} s, load {timing[2] / 1000:.2f} s; {drawn} steps drawn, "
        f"{timing[3] / 1024:.0f} KB, {page.evaluate('document.querySelectorAll(`*`).length')} "
        "DOM nodes)"
    )
    # Usable at once because only a window of steps is drawn (drawing all 2,000 took 42-65 s).
    # How fast is measured by bench/pages.py, not here: beside the suite's other worker this
    # took 1.67 and 1.97 s in two runs; the bound only catches the whole run being drawn again.
    assert drawn == 50
    assert usable <= 10
    expect(page.locator('[data-count="all"]')).to_have_text("2000")
    expect(page.locator('[data-count="errors"]')).to_have_text("13")
    shot(page, "38-inspector-2000-steps")

    # Scrolling to the end of the window draws the next steps.
    page.locator("li.steps-more[data-more=after]").scroll_into_view_if_needed()
    expect(page.locator("li.step")).to_have_count(100)
    # j past the last step drawn draws more and goes on.
    page.locator("#step-99").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "100")

    # A link to a step outside the window (the review panel's 1900) draws it.
    page.locator(".review-panel .step-links a", has_text="1900").click()
    expect(page.locator("#step-1900")).to_be_in_viewport()
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "1900")
    assert page.url.endswith("#step-1900")
    page.keyboard.press("e")  # the next error, 1940, is in this window
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "1940")
    expect(page.locator(".step-status")).to_have_text("Step 1940: error 13 of 13.")
    page.keyboard.press("e")  # from the top again: step 194, far outside the window
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "194")
    expect(page.locator("#step-194")).to_be_in_viewport()
    page.wait_for_timeout(300)
    drawn_after_jump = page.locator("li.step").count()
    print(f"after the jump to 194: {drawn_after_jump} steps drawn")
    assert drawn_after_jump <= 100  # the window around it, not a cascade of earlier loads
    for _ in range(6):  # k before the first step drawn (189) draws the earlier ones
        page.keyboard.press("k")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "188")
    shot(page, "39-inspector-2000-steps-jumped")

    # A label key on a step drawn later saves it, and "Accept all" still names every label.
    page.keyboard.press("2")
    expect(page.locator("#step-188 .chip")).to_have_text("redundant")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.locator("#accept-all").click()
    page.wait_for_timeout(200)
    assert dialogs and dialogs[0].startswith("Accept the 1999 machine labels (steps 0, 1, 2,")

    # Opened at #step-1500 (a link from elsewhere): that step, drawn and current.
    page.goto(url + "#step-1500")
    expect(page.locator("li.step.is-current")).to_have_attribute("data-index", "1500")
    expect(page.locator("#step-1500")).to_be_in_viewport()
    assert describe("2,000 steps at 1440 px", axe_violations(page)) == []
    page.set_viewport_size({"width": 390, "height": 844})
    assert describe("2,000 steps at 390 px", axe_violations(page)) == []
    shot(page, "39b-inspector-2000-steps-390")
    assert Step.objects.get(trace=trace, index=188).label == "redundant"
    assert errors == []


def test_an_imported_chats_run_details_show_its_model_tokens_and_system_prompt(
    page, live_server, login, reviewer, api, shot, console_errors
):  # fmt: skip
    from tests.traces.views.test_inspector_reading import SYSTEM_PROMPT

    response = api.post("traces/import", {
        "format": "openai", "external_id": "chat-details", "agent": "ops-bot",
        "outcome": "success", "environment": ["k8s"],
        "metadata": {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 5120,
                     "completion_tokens": 96}},
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT + " <img src=x onerror=window.__xss=1>"},
            {"role": "user", "content": "Why does web restart?"},
            {"role": "assistant", "content": "It is OOMKilled."},
        ],
    })  # fmt: skip
    assert response.status_code == 201, response.content
    errors = console_errors(page)
    login(page.context, reviewer)
    page.goto(f"{live_server.url}/traces/{response.json()['id']}/")

    details = page.locator("#run-details")
    size = len(SYSTEM_PROMPT + " <img src=x onerror=window.__xss=1>")
    expect(details.locator("summary .preview")).to_have_text(
        f"gpt-4o-mini · 5,120 input tokens · 96 output tokens · system prompt {size:,} chars"
    )
    details.locator("summary").first.focus()
    page.keyboard.press("Enter")
    expect(details.locator(".run-meta")).to_contain_text("openai transcript")
    expect(details.locator(".run-meta")).to_contain_text("5120 input · 96 output")
    prompt = page.locator("#system-prompt")
    prompt.locator("summary").click()
    expect(prompt.locator("pre")).to_contain_text("Rule 20: you are the operations assistant")
    expect(prompt.locator("pre")).to_contain_text("<img src=x onerror=window.__xss=1>")
    shot(page, "40-inspector-run-details")
    assert page.evaluate("window.__xss") is None and errors == []
