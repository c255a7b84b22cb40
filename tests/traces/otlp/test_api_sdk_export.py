"""End to end: the real OpenTelemetry SDK and OTLP/HTTP exporter against the live site."""

import json

from opentelemetry.trace import Status, StatusCode

from experiences.models import Experience
from hindsight_site.review_tasks import review_trace
from traces.models import Trace
from traces.otlp.models import OtelSpan, OtelTrace

TASK = "Why does the checkout service return 502?"
MS = 1_000_000


def _messages(role: str, content: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}])


def _chat(tracer, output: str, *, start: int, end: int, parent=None):
    span = tracer.start_span("chat gpt-4o-mini", start_time=start, context=parent)
    span.set_attribute("gen_ai.operation.name", "chat")
    span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
    span.set_attribute("gen_ai.input.messages", _messages("user", TASK))
    span.set_attribute("gen_ai.output.messages", _messages("assistant", output))
    span.end(end_time=end)


def _tool(tracer, name: str, args: dict, result: str | None, *, start: int, end: int,
          error: str | None = None, parent=None):  # fmt: skip
    span = tracer.start_span(f"execute_tool {name}", start_time=start, context=parent)
    span.set_attribute("gen_ai.operation.name", "execute_tool")
    span.set_attribute("gen_ai.tool.name", name)
    span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
    if result is not None:
        span.set_attribute("gen_ai.tool.call.result", result)
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, error))
    span.end(end_time=end)


def _agent_run(provider, t0: int) -> str:
    """invoke_agent with chat and execute_tool children; the first tool call fails."""
    from opentelemetry import trace

    tracer = provider.get_tracer("tests.otlp")
    agent = tracer.start_span("invoke_agent triage", start_time=t0)
    agent.set_attribute("gen_ai.operation.name", "invoke_agent")
    agent.set_attribute("gen_ai.agent.name", "triage")
    agent.set_attribute("gen_ai.conversation.id", "conv-42")
    agent.set_attribute("gen_ai.input.messages", _messages("user", TASK))
    inside = trace.set_span_in_context(agent)
    at = t0
    _chat(tracer, "I will read the pod logs.", start=at + 1 * MS, end=at + 2 * MS, parent=inside)
    _tool(tracer, "kubectl_logs", {"pod": "checkout-7f"}, None, start=at + 3 * MS,
          end=at + 4 * MS, error="pod checkout-7f not found", parent=inside)  # fmt: skip
    _tool(tracer, "kubectl_get_pods", {"selector": "app=checkout"}, "checkout-9c Running",
          start=at + 5 * MS, end=at + 6 * MS, parent=inside)  # fmt: skip
    _tool(tracer, "kubectl_logs", {"pod": "checkout-9c"}, "upstream pool exhausted",
          start=at + 7 * MS, end=at + 8 * MS, parent=inside)  # fmt: skip
    _chat(tracer, "The upstream pool is exhausted.", start=at + 9 * MS, end=at + 10 * MS,
          parent=inside)  # fmt: skip
    agent.end(end_time=t0 + 11 * MS)
    return format(agent.get_span_context().trace_id, "032x")


T0 = 1_780_000_000 * 1_000_000_000


def test_an_agent_run_exported_by_the_sdk_becomes_one_reviewed_trajectory(site):
    provider = site.provider(batch=True)
    trace_id = _agent_run(provider, T0)
    assert provider.force_flush(10_000)
    provider.shutdown()

    trace = Trace.objects.get(project=site.project)
    assert trace.external_id == f"otel-{trace_id}"
    assert (trace.agent, trace.task, trace.outcome) == ("triage", TASK, "success")
    assert trace.is_complete and trace.metadata["gen_ai.conversation.id"] == "conv-42"
    assert trace.session_id == "conv-42"
    steps = list(trace.steps.order_by("index"))
    assert [(s.kind, s.tool) for s in steps] == [
        ("llm_reasoning", ""),
        ("tool_call", "kubectl_logs"),
        ("tool_call", "kubectl_get_pods"),
        ("tool_call", "kubectl_logs"),
        ("llm_reasoning", ""),
    ]
    assert steps[0].content == "I will read the pod logs."
    assert steps[1].is_error and "pod checkout-7f not found" in steps[1].observation
    assert steps[1].arguments == {"pod": "checkout-7f"}
    assert steps[2].observation == "checkout-9c Running" and not steps[2].is_error
    assert trace.final_answer == "The upstream pool is exhausted."
    assert [s.started_at for s in steps] == sorted(s.started_at for s in steps)

    assert review_trace(trace.pk) == "reviewed"
    trace.refresh_from_db()
    assert trace.review_status == "reviewed"
    assert Experience.objects.filter(sources__review__trace=trace).exists()


def test_a_gzip_export_is_received(site):
    provider = site.provider(gzip=True)
    _agent_run(provider, T0)
    provider.shutdown()

    trace = Trace.objects.get(project=site.project)
    assert trace.step_count == 5 and trace.is_complete


def test_spans_exported_one_request_each_and_out_of_order_end_in_start_order(site):
    # SimpleSpanProcessor exports every span as it ends: children before their parent, and
    # here a tool call that started after an LLM call but ended before it.
    from opentelemetry import trace

    provider = site.provider()
    tracer = provider.get_tracer("tests.otlp")
    agent = tracer.start_span("invoke_agent triage", start_time=T0)
    agent.set_attribute("gen_ai.operation.name", "invoke_agent")
    agent.set_attribute("gen_ai.input.messages", _messages("user", TASK))
    inside = trace.set_span_in_context(agent)
    llm = tracer.start_span("chat", start_time=T0 + 1 * MS, context=inside)
    llm.set_attribute("gen_ai.operation.name", "chat")
    llm.set_attribute("gen_ai.output.messages", _messages("assistant", "thinking"))
    _tool(tracer, "kubectl_logs", {"pod": "a"}, "ok", start=T0 + 2 * MS, end=T0 + 3 * MS,
          parent=inside)  # fmt: skip
    assert OtelSpan.objects.filter(otel_trace__project=site.project).count() == 1
    assert not Trace.objects.filter(project=site.project).exists()  # still buffering
    llm.end(end_time=T0 + 4 * MS)
    agent.end(end_time=T0 + 5 * MS)
    provider.shutdown()

    trace = Trace.objects.get(project=site.project)
    assert [s.kind for s in trace.steps.order_by("index")] == ["llm_reasoning", "tool_call"]
    assert OtelTrace.objects.get(project=site.project).completed_by == "root"


def test_a_failed_agent_run_is_a_failure(site):
    from opentelemetry import trace

    provider = site.provider()
    tracer = provider.get_tracer("tests.otlp")
    agent = tracer.start_span("invoke_agent triage", start_time=T0)
    agent.set_attribute("gen_ai.operation.name", "invoke_agent")
    _tool(tracer, "deploy", {}, None, start=T0 + MS, end=T0 + 2 * MS, error="denied",
          parent=trace.set_span_in_context(agent))  # fmt: skip
    agent.set_status(Status(StatusCode.ERROR, "gave up"))
    agent.end(end_time=T0 + 3 * MS)
    provider.shutdown()

    assert Trace.objects.get(project=site.project).outcome == "failure"


def test_the_exporter_configured_by_environment_variables_reaches_the_site(site, monkeypatch):
    # docs/sending.md's form: the base endpoint (the SDK appends /v1/traces) and the key header.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", site.url + "/api/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"X-API-Key={site.key}")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    _agent_run(provider, T0)
    provider.shutdown()

    assert Trace.objects.get(project=site.project).step_count == 5
