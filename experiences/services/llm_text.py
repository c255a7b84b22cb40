"""Plain-text completions from the configured OpenAI-compatible endpoint (merges, KB articles)."""

import logging

from django.conf import settings

logger = logging.getLogger(__name__)


def complete_text(*, system: str, user: str, purpose: str) -> str | None:
    """The model's answer, or None when no endpoint is configured or the call fails (callers
    then fall back to their deterministic wording)."""
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
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0,
        )
    except openai.OpenAIError:
        logger.warning("LLM %s failed; using the deterministic wording", purpose, exc_info=True)
        return None
    return (completion.choices[0].message.content or "").strip() or None
