"""What the rules read of one trajectory, computed once: the request's values and the data flow.

**Data flow.** A step *feeds* a later one when the later step's arguments (or, for reasoning,
its text) contain a value from the earlier step's output: the whole argument verbatim (a
clicked element, a name from a list of results), or a distinctive value — an identifier,
number, path or a capitalised name — that the request did not already contain. A value is
credited to the latest step that produced it, and to the tool result behind a reasoning step
that relayed it.
"""

import re
from dataclasses import dataclass

from traces.review.types import ReviewRequest, StepView
from traces.review.values import (
    argument_values,
    consumed_text,
    content_words,
    key_values,
    names,
    step_output,
)


@dataclass
class Facts:
    """What the rules read of one trajectory, computed once."""

    steps: list[StepView]
    task_text: str
    task_values: set[str]
    task_words: set[str]
    outputs: dict[int, str]
    outputs_lower: dict[int, str]
    values: dict[int, set[str]]  # distinctive values each step produced
    duplicate_of: dict[int, int]  # a tool result that repeats an earlier one -> the earlier
    changes: list[int]  # the calls that changed state

    @classmethod
    def of(cls, request: ReviewRequest) -> "Facts":
        steps = request.steps
        task = "\n".join(
            [request.trace.task, *(s.content for s in steps if s.kind == "user_input")]
        )
        outputs = {s.index: step_output(s) for s in steps}
        task_values = key_values(task) | names(task)
        duplicate_of: dict[int, int] = {}
        seen: dict[str, int] = {}
        for step in steps:
            if step.kind != "tool_call":
                continue
            # An informative result (not a short status like "restarted") of the same tool that
            # was already seen adds nothing new.
            text = step.tool + " " + " ".join(outputs[step.index].split()).lower()
            if len(text) >= 100 + len(step.tool) and text in seen:
                duplicate_of[step.index] = seen[text]
            else:
                seen.setdefault(text, step.index)
        return cls(
            steps=steps,
            task_text=task.lower(),
            task_values=task_values,
            task_words=content_words(task),
            outputs=outputs,
            outputs_lower={i: o.lower() for i, o in outputs.items()},
            values={
                s.index: (key_values(outputs[s.index]) | names(outputs[s.index])) - task_values
                for s in steps
            },
            duplicate_of=duplicate_of,
            changes=[
                s.index
                for s in steps
                if s.kind == "tool_call" and request.trace.call_effect(s).changes_state
            ],
        )

    def checks_a_change(self, first: int, again: int) -> bool:
        """The same call made again after a change, with another result: a check of the change
        (the tests run again after the edit, the reservation read again after the update), not
        a repeat."""
        return self.outputs[first] != self.outputs[again] and any(
            first < change < again for change in self.changes
        )

    def in_request(self, value: str) -> bool:
        """The value (or its words) comes from the request itself."""
        lower = value.lower()
        if lower in self.task_text and len(lower) > 3:
            return True
        compact = re.sub(r"\W+", "", lower)
        if len(compact) >= 3 and compact in re.sub(r"\W+", "", self.task_text):
            return True
        return bool(content_words(lower) & self.task_words)

    def producers(self, step: StepView) -> list[tuple[int, float]]:
        """The earlier steps that fed `step`, each with the strength of the link."""
        earlier = [
            s
            for s in self.steps
            if s.index < step.index and s.kind != "user_input" and s.index not in self.duplicate_of
        ]
        found: dict[int, float] = {}

        def latest(predicate) -> StepView | None:
            return next((s for s in reversed(earlier) if predicate(s)), None)

        def credit(source: StepView, strength: float) -> None:
            found[source.index] = max(found.get(source.index, 0.0), strength)
            if source.kind == "llm_reasoning":  # a thought relays what a tool result said
                relayed = latest_call_before(source)
                if relayed is not None:
                    found[relayed.index] = max(found.get(relayed.index, 0.0), strength - 0.05)

        def latest_call_before(thought: StepView) -> StepView | None:
            text = self.outputs_lower[thought.index]
            for s in reversed(earlier):
                if s.index < thought.index and s.kind == "tool_call":
                    if any(v in text for v in self.values[s.index]):
                        return s
            return None

        if step.kind == "tool_call":
            for value in argument_values(step):
                lower = value.lower()
                if len(lower) < 2 or (lower in self.task_text and len(lower) > 3):
                    continue  # from the request itself
                source = latest(lambda s, lower=lower: lower in self.outputs_lower[s.index])
                if source is not None:
                    credit(source, 0.85)
        consumed = consumed_text(step).lower()
        credited: set[str] = set()
        for source in reversed(earlier):  # each value to the latest step that produced it
            used = {v for v in self.values[source.index] if v in consumed} - credited
            credited |= used
            if used and source.index not in found:
                credit(source, 0.75)
        return sorted(found.items())
