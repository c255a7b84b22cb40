"""The LLM reviewer: any OpenAI-compatible endpoint, structured output against ReviewTemplate."""

import time

import openai
from django.conf import settings
from pydantic import ValidationError

from traces.review.heuristic.guard import lesson_checked
from traces.review.types import (
    InvalidReview,
    ReviewOutcome,
    ReviewRequest,
    ReviewTemplate,
    check_labels_cover_window,
)

PROMPT_VERSION = "llm-7"

SYSTEM_PROMPT = """You review an AI agent's finished trajectory after the fact, with the global
view. Label every step with exactly one label. The labels are mutually exclusive; apply the first
that fits:
- failed: the step itself failed: an error, a refused or timed-out call, an empty or "not found"
  result, or a final answer / action that the environment's checker refused.
- necessary: removing this step would make the conclusion unreachable. Causal, not merely
  correlated: its result is used later (a value, a name, an element it offered is taken up by a
  later step or the final answer) or it is the result. The first user input states the request.
  Example of correlated but unnecessary: the service was fixed by patching a network policy
  found in the logs; restarting the containers earlier happened in the same successful run, but
  the conclusion is reachable without it, so the restarts are redundant.
- misleading: it led the agent the wrong way: a wrong inference or a wrong choice (the wrong
  item, entity or option) that was corrected later, or that the failure rests on.
- redundant: its result did not affect the conclusion (repeats, detours, navigation back).
A reasoning step takes the label of the call it decides, unless its own text is used later.
In a run that failed or partly failed, find where it went wrong: the unrecovered error, the wrong
or premature state-changing action, the answer the checker refused, the step right before the
user complained; label that path misleading / failed, and the right moves before it necessary.
Then fill the template: the goal in one sentence; scene_summary: the informative request in
100-150 characters, without greetings or pleasantries, keeping identifiers and names (what a
similar future task would say); the execution path (the steps that mattered, in order, short);
effective and ineffective step indexes; key decision points; improvements; strategy: what worked
as tool-usage steps in order (empty if nothing did); pitfall: the step to avoid and what it led
to (empty if nothing went wrong); blamed_step: the index of that step.
Blame only with evidence: an errored call, a state-changing call the outcome or the user
contradicts, the answer the checker refused, the step right before the user complained. Never
blame a read-only call (the Tools line says which are) whose result the run used: an agent told
not to look things up does worse. The consequence is what happened in words (the error text,
the user's words, the verdict), never a list of JSON keys.
The experience is one reusable strategy in the second person, as tool-usage advice: "When you
use <tool>, first <calls>, then <tool> …" for a success, "When you use <tool>: do not <call>:
<consequence>. Instead, <what worked>." for a failure. When only the outcome speaks against a
change most runs never make (no error, no complaint, no verdict), do not forbid it (the next
task may need it): "When you use <tool>: a run that called it with <arguments> failed; make this
change only when the request asks for it and the rules allow it: check both before you <tool>."
When nothing but the outcome speaks against a run that only looked things up and answered, do
not forbid its reply (it may have been right, and the mistake what the run left undone): "When
you answer: a run that only looked things up (<tools>) and then answered failed; before you
answer, check that you have done every part of the request, changes included."
A hand-off to a person (the Tools line says which tool hands the case to a person) is how a run
ended: a success that made changes and then handed the case over teaches its changes; one whose
only change was the hand-off teaches it as its condition, "When you use <the hand-off>, first
<calls>; call it with <arguments>" (what to do if you hand over), never "change nothing".
Write values that came from the request or from an earlier result as named placeholders
(<user_id from the request>, <reservation_id from get_user_details>), literal only for
constants (a button label); do not quote the request (the scene is stored apart). replay: the
same run with its literal values (ids, names, the refused answer), for when the very same case
comes again; a failed run's replay lists every
change it made (the one too many or the one missing is what the same case must see); a
successful run that changed nothing says why, in the sentence it told the user when it decided
("basic economy reservations cannot be modified"), and one that made a change never says it
changed nothing.
And whether this trajectory is worth using as a reference.
Give a short reason and a confidence between 0 and 1 for each label (how strong the evidence
is, not a constant). Label exactly the steps shown."""

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
            template=lesson_checked(message.parsed, request),
            reviewer="llm",
            model=completion.model or self.model,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=int((time.monotonic() - started) * 1000),
        )
