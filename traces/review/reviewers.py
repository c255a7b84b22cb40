"""One reviewer interface, chosen by settings: the LLM one when an endpoint is configured."""

from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from traces.review.types import ReviewOutcome, ReviewRequest


class Reviewer(Protocol):
    name: str

    def review(self, request: ReviewRequest) -> ReviewOutcome: ...


def reviewer_name() -> str:
    choice = settings.HINDSIGHT_REVIEWER
    if choice == "auto":
        return "llm" if settings.OPENAI_BASE_URL else "heuristic"
    if choice not in ("llm", "heuristic"):
        raise ImproperlyConfigured(
            f"HINDSIGHT_REVIEWER must be auto, llm or heuristic; got {choice!r}"
        )
    return choice


def get_reviewer() -> Reviewer:
    if reviewer_name() == "llm":
        from traces.review.llm import LLMReviewer

        return LLMReviewer()
    return offline_reviewer()


def offline_reviewer() -> Reviewer:
    """The deterministic reviewer: the default, and the one for short runs whatever is set."""
    from traces.review.heuristic import HeuristicReviewer

    return HeuristicReviewer()
