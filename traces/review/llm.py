"""The LLM reviewer: any OpenAI-compatible endpoint, structured output against ReviewTemplate."""

import time

import openai
from django.conf import settings
from pydantic import ValidationError

from traces.review.types import (
    InvalidReview,
    ReviewOutcome,
    ReviewRequest,
    ReviewTemplate,
    check_labels_cover_window,
)

PROMPT_VERSION = "llm-1"

SYSTEM_PROMPT = """You review an AI agent's finished trajectory after the fact, with the global
view. Label every step with exactly one label. The labels are mutually exclusive; apply the first
that fits:
- failed: the step itself failed (an error, a refused or timed-out call).
- necessary: removing this step would make the conclusion unreachable. Causal, not merely
  correlated: its result is used later or is the result.
- misleading: it led the agent the wrong way, and the agent later corrected course.
- redundant: its result did not affect the conclusion.
Then fill the template: the goal in one sentence; the execution path (the steps that mattered,
in order, short); effective and ineffective step indexes; key decision points; improvements;
one reusable experience written in the second person as tool-usage advice
("When you use X and ..., first ..."), concrete about tools and arguments, without names of this
particular run; and whether this trajectory is worth using as a reference for similar tasks.
Give a short reason and a confidence between 0 and 1 for each label. Label exactly the steps
shown."""

# Errors worth retrying with backoff; the task turns the last one into a visible failure.
RETRYABLE = (
    openai.APIConnectionError,  # includes timeouts
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APIStatusError,
    InvalidReview,
)


class LLMReviewer:
    name = "llm"

    def __init__(self) -> None:
        self.model = settings.HINDSIGHT_LLM_MODEL
        self.client = openai.OpenAI(
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY or "unused",
            timeout=settings.HINDSIGHT_LLM_TIMEOUT,
            max_retries=0,  # retries belong to the Celery task, with backoff and a visible end
        )

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        started = time.monotonic()
        try:
            completion = self.client.chat.completions.parse(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": request.prompt},
                ],
                response_format=ReviewTemplate,
                temperature=0,
            )
        except (ValidationError, ValueError) as error:
            raise InvalidReview(
                f"the reviewer's answer is not valid JSON for the template: {error}"
            ) from error
        message = completion.choices[0].message
        if message.parsed is None:
            raise InvalidReview(
                f"the reviewer gave no structured answer: {message.refusal or message.content!r}"
            )
        check_labels_cover_window(message.parsed, request)
        usage = completion.usage
        return ReviewOutcome(
            request=request,
            template=message.parsed,
            reviewer="llm",
            model=completion.model or self.model,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=int((time.monotonic() - started) * 1000),
        )
