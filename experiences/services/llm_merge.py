"""Merging two wordings of the same advice with the configured OpenAI-compatible endpoint."""

from experiences.models import Experience
from experiences.services.llm_text import complete_text

PROMPT = """Two pieces of advice for an AI agent say nearly the same thing. Merge them into one
piece of advice, in the second person ("When you ..., first ..."), keeping every concrete tool,
argument and environment detail from both and nothing that is not in them. Answer with the
merged advice only."""


def merge_advice_with_llm(first: Experience, second: Experience) -> str | None:
    """The merged wording, or None (then the more specific wording is kept) on any failure."""
    return complete_text(
        system=PROMPT, user=f"A: {first.advice}\nB: {second.advice}", purpose="advice merge"
    )
