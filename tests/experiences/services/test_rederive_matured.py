"""A lesson written before the project knew its tools is written again once it does: an early
WebShop run blames its product click (nothing says a click only reads); once the project's runs
show that they end on click "Buy Now" and other clicks navigate, it is re-derived."""

import pytest

from core.publish import tasks_waiting
from experiences.models import Experience
from experiences.services.families import family_induce
from experiences.services.rederive_matured import tools_matured, traces_to_rederive
from hindsight_site.review_tasks import rederive_trace, review_trace
from traces.models import Trace
from traces.review.tool_effects import Behaviour, tool_effect
from traces.schemas import TraceIn
from traces.services.ingest import trace_ingest

pytestmark = pytest.mark.django_db


def shop(n: int) -> dict:
    """A shopper that picks the wrong product and buys it (score 0.25)."""
    steps = [
        {"index": 0, "kind": "user_input", "content": f"i need a red cotton t-shirt, size {n}"},
        {"index": 1, "kind": "tool_call", "tool": "search", "arguments": "red cotton t-shirt",
         "observation": "[Back to Search] Page 1 [B07X1] Red Tee $12 [B07X2] Blue Tee $9"},
        {"index": 2, "kind": "tool_call", "tool": "click", "arguments": "B07X2",
         "observation": "Blue Tee $9 [Buy Now] [Back to Search] size [S] [M]"},
        {"index": 3, "kind": "tool_call", "tool": "click", "arguments": "Buy Now",
         "observation": "Thank you for shopping. Your score: 0.25"},
    ]  # fmt: skip
    return {"external_id": f"shop-{n}", "agent": "shopper", "task": steps[0]["content"],
            "outcome": "failure", "steps": steps}  # fmt: skip


def reviewed(project, n: int) -> Trace:
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(shop(n))).trace
    assert review_trace(trace.pk) == "reviewed"
    return trace


def lesson_of(trace: Trace) -> Experience:
    return Experience.objects.get(sources__trace=trace, kind=Experience.Kind.EPISODE)


def test_a_tool_matures_when_some_of_its_calls_become_known_to_only_read():
    unknown = tool_effect("click")
    commits = tool_effect("click", behaviour=Behaviour(
        calls=12, fed_calls=8, runs=4, final_in_runs=4, final_in_successes=0,
        final_arguments={'"Buy Now"': 4}, project_runs=4,
    ))  # fmt: skip
    reads = tool_effect("get_page", behaviour=Behaviour(
        calls=12, fed_calls=10, runs=4, final_in_runs=0, final_in_successes=0, project_runs=4,
    ))  # fmt: skip
    assert tools_matured({"click": unknown}, {"click": commits}) == ["click"]
    assert tools_matured({"get_page": tool_effect("get_page")}, {"get_page": reads}) == []
    assert tools_matured({"click": commits}, {"click": commits}) == []  # known already
    assert tools_matured({}, {"click": commits}) == []  # not a tool of the run


def test_early_lessons_that_blamed_a_navigation_click_are_re_derived_once_it_is_known(project):
    first = reviewed(project, 1)
    early = lesson_of(first)
    assert (early.blame["tool"], early.blame["index"]) == ("click", 2)  # the product click
    assert "do not click" in early.advice

    # More runs: by the fourth the project knows its runs end on click "Buy Now".
    later = [reviewed(project, n) for n in (2, 3, 4)]
    waiting = tasks_waiting({rederive_trace.name}) or []
    sent = {args[0] for _, args in waiting}
    assert first.pk in sent  # the review that made click mature sent the re-derivation
    (because,) = {args[1] for _, args in waiting if args[0] == first.pk}
    ids, said = traces_to_rederive(project_id=project.pk, before={"click": tool_effect("click")})
    assert first.pk in ids and said == because
    assert 'click: it ended 4 of the 4 runs it was in, on click "Buy Now"' in because

    rederive_trace(first.pk, because)
    now = lesson_of(first)
    assert now.blame["index"] == 3  # the purchase, not the click that only opened a product
    assert now.advice.endswith("check it against every part of the request before you click.")
    assert "do not click" not in now.advice
    # The early wording is kept as a version, and the new one says why it changed.
    assert now.versions.count() == 2
    assert now.versions.order_by("-version").first().reason.startswith(because)
    for trace in later:  # reviewed with what was known by then: blamed the purchase already
        assert lesson_of(trace).blame["index"] in (2, 3)


def bought(n: int) -> dict:
    """A shopper that finds the product and buys it (score 1.0)."""
    run = shop(n)
    run["steps"][2]["arguments"] = "B07X1"
    run["steps"][2]["observation"] = "Red Tee $12 [Buy Now] [Back to Search] size [S] [M]"
    run["steps"][3]["observation"] = "Thank you for shopping. Your score: 1.0"
    return {**run, "external_id": f"bought-{n}", "outcome": "success"}


def test_early_successes_are_read_again_and_their_family_taught_the_purchase(project):
    """Reviewed before the project knew that its runs end on click "Buy Now", the first
    successes read as runs that changed nothing, and their family's workflow said so ("When the
    request needs no change: …, then answer"). Once click is known, they are re-derived, and
    the family is induced again from the calls as they read now."""
    traces = [
        trace_ingest(project=project, payload=TraceIn.model_validate(bought(n))).trace
        for n in (1, 2, 3, 4)
    ]
    for trace in traces:
        assert review_trace(trace.pk) == "reviewed"
    family = lesson_of(traces[0]).family
    assert family is not None and family_induce(family_id=family.pk) != "up to date"
    early = Experience.objects.get(family=family, kind=Experience.Kind.WORKFLOW)
    assert early.advice.startswith("When the request needs no change")

    ours = {t.pk for t in traces}
    sent = [args for _, args in tasks_waiting({rederive_trace.name}) or [] if args[0] in ours]
    # Every success made a click, the one whose review taught it too.
    assert {trace_id for trace_id, _ in sent} == ours
    for trace_id, because in sent:
        rederive_trace(trace_id, because)
    assert {c["effect"] for c in lesson_of(traces[0]).calls if c["tool"] == "click"} == {
        "read",
        "write",
    }
    family.refresh_from_db()
    assert family.induced_size < family.size  # due again
    assert family_induce(family_id=family.pk) != "up to date"
    early.refresh_from_db()
    # The product click on the way and the purchase are two steps.
    assert early.advice == (
        "When you use click, first search <input from the request>, then click <input from "
        'search>; call it with "Buy Now".'
    )
    assert early.version == 2
