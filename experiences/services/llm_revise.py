"""Re-wording an LLM-written experience after a person corrected its trajectory's labels."""

from collections.abc import Mapping

from experiences.services.llm_text import complete_text
from traces.review.scene import action_phrase
from traces.review.types import StepView

PROMPT = """A person corrected the step labels of an AI agent's finished trajectory. Revise the
reusable experience that was written from it so that it agrees with the corrected labels. Keep
its wording, style, length and second person; change only what the corrections contradict: a
step now labelled necessary belongs to what to do, a step now misleading or failed is what to
avoid, a redundant step is left out. Stay concrete about tools and arguments, never paste raw
JSON. The template wording below states the facts of the corrected labels, not the style to
use. Answer with the revised experience only."""


def revise_advice_with_llm(
    *,
    advice: str,
    task: str,
    outcome: str,
    steps: list[StepView],
    labels: Mapping[int, str],
    template_advice: str,
) -> str | None:
    """The LLM's revision of `advice`, or None (the caller then uses the template wording)
    when no endpoint is configured or the call fails."""
    lines = [f"[{s.index}] {action_phrase(s)} -> {labels.get(s.index, '?')}" for s in steps]
    user = (
        f"Experience: {advice}\n"
        f"Task: {task}\n"
        f"Outcome: {outcome}\n"
        "Steps with their corrected labels:\n" + "\n".join(lines) + "\n"
        f"Template wording: {template_advice}"
    )
    return complete_text(system=PROMPT, user=user, purpose="advice revision")
