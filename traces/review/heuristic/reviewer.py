"""The heuristic reviewer: labels the steps by the rules, builds the template from the labels,
and reports what a review costs (estimated tokens, latency) the same way the LLM reviewer does.
"""

import json
import time

from traces.review.compression import estimate_tokens
from traces.review.heuristic.labels import label_steps
from traces.review.heuristic.template import build_template
from traces.review.types import ReviewOutcome, ReviewRequest

PROMPT_VERSION = "heuristic-2"
MODEL = "rules"


class HeuristicReviewer:
    name = "heuristic"

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        started = time.monotonic()
        template = build_template(request, label_steps(request))
        return ReviewOutcome(
            request=request,
            template=template,
            reviewer="heuristic",
            model=MODEL,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=estimate_tokens(request.prompt),
            completion_tokens=estimate_tokens(json.dumps(template.model_dump())),
            latency_ms=int((time.monotonic() - started) * 1000),
        )
