"""OpenInference-attributed spans (LangChain / LlamaIndex instrumentors) map to the same steps."""

import json

import pytest

from tests.support.spans import export, span
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_an_openinference_trace_becomes_a_trajectory(post):
    spans = [
        span(3, 1, "AgentExecutor", start=0, end=9, attrs={
            "openinference.span.kind": "CHAIN", "session.id": "s-1", "user.id": "u-7",
            "input.value": json.dumps({"input": "What is 2 + 2 times 3?"}),
            "output.value": json.dumps({"output": "8"}),
        }),
        span(3, 2, "ChatOpenAI", parent=1, start=1, end=2, attrs={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "You are a calculator.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "What is 2 + 2 times 3?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "multiply",
        }),
        span(3, 3, "multiply", parent=1, start=3, end=4, attrs={
            "openinference.span.kind": "TOOL", "tool.name": "multiply",
            "input.value": json.dumps({"a": 2, "b": 3}), "output.value": "6",
        }),
        span(3, 4, "RunnableSequence", parent=1, start=5, end=6,
             attrs={"openinference.span.kind": "CHAIN"}),  # glue code: no step
        span(3, 5, "ChatOpenAI", parent=1, start=7, end=8, attrs={
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "2 + 6 = 8",
        }),
    ]  # fmt: skip
    assert post(export(*spans).SerializeToString()).status_code == 200

    trace = Trace.objects.get()
    assert (trace.task, trace.final_answer, trace.outcome) == (
        "What is 2 + 2 times 3?",
        "8",
        "success",
    )
    assert (trace.session_id, trace.user_ref, trace.agent) == ("s-1", "u-7", "AgentExecutor")
    steps = list(trace.steps.order_by("index"))
    assert [(s.kind, s.tool) for s in steps] == [
        ("llm_reasoning", ""),
        ("tool_call", "multiply"),
        ("llm_reasoning", ""),
    ]
    assert steps[0].content == "asks for tool call(s): multiply"
    assert steps[0].context["latest_user_input"] == "What is 2 + 2 times 3?"
    assert (steps[1].arguments, steps[1].observation) == ({"a": 2, "b": 3}, "6")
    assert steps[2].content == "2 + 6 = 8"
    assert trace.metadata["conventions"] == ["openinference"]
