"""Merging two wordings of the same advice with the configured OpenAI-compatible endpoint."""

import logging

from django.conf import settings

from experiences.models import Experience

logger = logging.getLogger(__name__)

PROMPT = """Two pieces of advice for an AI agent say nearly the same thing. Merge them into one
piece of advice, in the second person ("When you ..., first ..."), keeping every concrete tool,
argument and environment detail from both and nothing that is not in them. Answer with the
merged advice only."""


def merge_advice_with_llm(first: Experience, second: Experience) -> str | None:
    """The merged wording, or None (then the more specific wording is kept) on any failure."""
    if not settings.OPENAI_BASE_URL:
        return None
    import openai  # lazily: importing openai costs seconds at web start

    client = openai.OpenAI(
        base_url=settings.OPENAI_BASE_URL,
        api_key=settings.OPENAI_API_KEY or "unused",
        timeout=settings.HINDSIGHT_LLM_TIMEOUT,
        max_retries=1,
    )
    try:
        completion = client.chat.completions.create(
            model=settings.HINDSIGHT_LLM_MODEL,
            messages=[
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": f"A: {first.advice}\nB: {second.advice}"},
            ],
            temperature=0,
        )
    except openai.OpenAIError:
        logger.warning("LLM merge failed; keeping the more specific wording", exc_info=True)
        return None
    text = (completion.choices[0].message.content or "").strip()
    return text or None
