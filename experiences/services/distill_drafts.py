"""Distillation drafts: what a review says, as an experience (scene, path, advice, polarity)
and as failure patterns, built without touching the database and embedded before the
transaction opens, so the transaction that stores labels, reviews and experiences stays short.
"""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from experiences.embeddings import embed_in_batches
from experiences.services.family_induction import HAND_OFF
from experiences.services.patterns import argument_shape, error_signature
from traces.review.heuristic.blame import (
    Blame,
    blame_of,
    blames_a_failed_look_up,
    blames_the_answer,
    errored,
)
from traces.review.heuristic.placeholders import Sources, call_pattern, is_aside, literal_call
from traces.review.scene import action_phrase, keywords_of, scene_request, scene_summary, scene_text
from traces.review.types import (
    ReviewOutcome,
    ReviewRequest,
    ReviewTemplate,
    StepView,
    TraceView,
    Window,
    counts_as_success,
)


@dataclass
class ExperienceDraft:
    window: Window
    polarity: str
    advice: str
    source: str
    path: list[dict[str, Any]]
    step_indexes: list[int]
    summary: str
    request: str
    strategy: str
    pitfall: str
    keywords: str
    embed_text: str
    labels: dict[str, str]  # the step labels it is derived from (JSON keys)
    replay: str = ""
    blame: dict[str, Any] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    same_case_only: bool = False  # see teaches_its_case_only
    embedding: list[float] | None = None
    revision_note: str = ""  # who worded a re-derivation, for its version's reason


@dataclass
class PatternDraft:
    tool: str
    argument_shape: dict[str, str]
    error_signature: str
    instead: str
    example_arguments: Any
    trace_id: int
    index: int
    signature_hash: str = field(init=False)

    def __post_init__(self) -> None:
        key = json.dumps([self.tool, self.argument_shape, self.error_signature], sort_keys=True)
        self.signature_hash = hashlib.sha256(key.encode()).hexdigest()


# ---------------------------------------------------------------------------- drafts


def _polarity(trace: TraceView) -> str:
    return "success" if counts_as_success(trace.outcome) else "failure"


def _path(
    trace: TraceView, steps: list[StepView], labels: Mapping[int, str]
) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": trace.id,
            "index": s.index,
            "tool": s.tool,
            "kind": s.kind,
            "summary": action_phrase(s)[:160],
        }
        for s in steps
        if labels.get(s.index) == "necessary"
    ]


MAX_CALLS = 60  # of a run, kept for family induction


def run_calls(
    trace: TraceView, steps: list[StepView], labels: Mapping[int, str]
) -> list[dict[str, Any]]:
    """Every call of the run as a placeholder pattern, with its effect, whether it failed and
    whether it was necessary: what a family's workflow and insights are induced from."""
    sources = Sources.of(trace.task, steps, trace)
    calls = []
    for step in steps:
        if step.kind != "tool_call" or is_aside(step):
            continue
        effect = trace.call_effect(step)
        kind = (
            HAND_OFF
            if effect.hands_off
            else {True: "read", False: "write", None: "unknown"}[effect.read_only]
        )
        calls.append(
            {
                "tool": step.tool,
                "pattern": call_pattern(step, sources),
                # A hand-off is its own effect: never a family's change (families._signature)
                # nor a workflow's step (family_induction).
                "effect": kind,
                "errored": errored(step),
                "necessary": labels.get(step.index) == "necessary",
                # A change as the replay shows it: two runs of one case compared (recall_block).
                **({"literal": literal_call(step)} if kind == "write" else {}),
            }
        )
    return calls[:MAX_CALLS]


def teaches_its_case_only(
    polarity: str, blame: Blame | None, calls: list[dict[str, Any]], request: ReviewRequest
) -> bool:
    """Whether an episode teaches no way to do another case, and is served only as its own
    case's replay (Experience.same_case_only, recall_block.servable):

    - a success whose only change handed the case to a person: its advice says how to hand over,
      not how to do the task (its family's workflow counts the hand-off);
    - a failure whose lesson is about its own final answer (blame.blames_the_answer): "the
      answer was refused; check it against every part of the request" is all it says to another
      case;
    - a failure whose lesson is a look-up that failed on its case's values
      (blame.blames_a_failed_look_up): "change its arguments" is all it says to another case.

    Judged for the tasks they were served to (bench/datasets/judged_experiences.json), such items
    served to another case were neutral or misleading nearly always: final-answer lessons 3
    helpful, 62 neutral, 5 misleading over the three datasets; failed look-ups 22 neutral of 22."""
    if polarity == "success":
        made = {c["effect"] for c in calls if not c["errored"]}
        return HAND_OFF in made and "write" not in made
    return blame is not None and (
        blames_the_answer(blame, request) or blames_a_failed_look_up(blame, request)
    )


def experience_draft(
    *,
    trace: TraceView,
    steps: list[StepView],
    window: Window,
    template: ReviewTemplate,
    labels: Mapping[int, str],
    source: str,
) -> ExperienceDraft:
    """One experience from a review: the scene (summary, keywords) is what it is matched on
    and embedded, the advice what it says."""
    polarity = _polarity(trace) if window.kind == "full" else "failure"
    request_view = ReviewRequest(trace=trace, steps=steps, window=window, prompt="")
    blame = blame_of(request_view, labels)
    summary = template.scene_summary.strip() or scene_summary(trace.task, steps)
    request = scene_request(trace.task, steps)
    path = _path(trace, steps, labels)
    calls = run_calls(trace, steps, labels)
    return ExperienceDraft(
        window=window,
        polarity=polarity,
        advice=template.experience,
        source=source,
        path=path,
        step_indexes=[s.index for s in steps if labels.get(s.index) == "necessary"],
        summary=summary[:300],
        request=request,
        strategy=template.strategy,
        pitfall=template.pitfall,
        keywords=keywords_of([trace.task, trace.final_answer, *(p["summary"] for p in path)]),
        embed_text=scene_text(summary=summary, intent=trace.intent, request=request),
        labels={str(s.index): labels[s.index] for s in steps if s.index in labels},
        replay=template.replay,
        blame=blame.as_json() if blame is not None else {},
        calls=calls,
        same_case_only=teaches_its_case_only(polarity, blame, calls, request_view),
    )


def pattern_drafts(
    *, trace: TraceView, steps: list[StepView], labels: Mapping[int, str]
) -> list[PatternDraft]:
    drafts = []
    for step in steps:
        if labels.get(step.index) not in ("failed", "misleading") or not step.tool:
            continue
        if labels[step.index] == "misleading" and not step.is_error:
            continue  # a misleading call that did not fail has no error to warn about
        instead_step = next(
            (
                s
                for s in steps
                if s.index > step.index and s.tool and labels.get(s.index) == "necessary"
            ),
            None,
        )
        instead = ""
        if instead_step is not None:
            instead = f"use {action_phrase(instead_step)}"
        drafts.append(
            PatternDraft(
                tool=step.tool,
                argument_shape=argument_shape(step.arguments),
                error_signature=error_signature(step),
                instead=instead,
                example_arguments=step.arguments,
                trace_id=trace.id,
                index=step.index,
            )
        )
    return drafts


def drafts_from_outcomes(
    outcomes: list[ReviewOutcome],
) -> tuple[list[ExperienceDraft], list[PatternDraft]]:
    experiences, patterns = [], []
    has_full = any(o.request.window.kind == "full" for o in outcomes)
    for outcome in outcomes:
        template, request = outcome.template, outcome.request
        if not template.worth_reference:
            continue  # not worth referencing: the labels are all it leaves
        if has_full and request.window.kind == "local":
            # The full review already speaks for the whole trajectory; a local review adds its
            # Review record and failure patterns, not a second, overlapping experience.
            labels = {j.index: j.label for j in template.labels}
            patterns.extend(pattern_drafts(trace=request.trace, steps=request.steps, labels=labels))
            continue
        labels = {j.index: j.label for j in template.labels}
        experiences.append(
            experience_draft(
                trace=request.trace,
                steps=request.steps,
                window=request.window,
                template=template,
                labels=labels,
                source=outcome.reviewer,
            )
        )
        patterns.extend(pattern_drafts(trace=request.trace, steps=request.steps, labels=labels))
    unique = {(p.trace_id, p.index): p for p in patterns}  # full and local may see the same step
    return experiences, list(unique.values())


def drafts_embed(drafts: list[ExperienceDraft]) -> None:
    vectors = embed_in_batches([d.embed_text for d in drafts])
    for draft, vector in zip(drafts, vectors, strict=True):
        draft.embedding = vector
