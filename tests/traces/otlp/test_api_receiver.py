"""The receiver over HTTP (Django test client): encodings, failures, buffering, idempotency."""

import gzip
import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.otlp import PROTOBUF
from tests.support.spans import agent_run, export, hex_ids, span, user_says
from traces.models import Trace
from traces.otlp.models import OtelSpan, OtelTrace
from traces.otlp.tasks import complete_idle_traces

pytestmark = pytest.mark.django_db

TRACE_HEX = "00000000000000000000000000000001"


def answer(response) -> ExportTraceServiceResponse:
    assert response["Content-Type"] == PROTOBUF
    return ExportTraceServiceResponse.FromString(response.content)


def status_of(response) -> status_pb2.Status:
    assert response["Content-Type"] == PROTOBUF
    return status_pb2.Status.FromString(response.content)


def test_a_protobuf_export_is_answered_with_an_empty_protobuf_response(post):
    response = post(export(*agent_run()).SerializeToString())

    assert response.status_code == 200
    assert not answer(response).HasField("partial_success")
    trace = Trace.objects.get(external_id=f"otel-{TRACE_HEX}")
    assert (trace.agent, trace.task) == ("triage", "Why does the checkout service return 502?")
    assert [s.tool for s in trace.steps.order_by("index")] == [
        "",
        "kubectl_logs",
        "",
        "kubectl_get_pods",
    ]
    failed = trace.steps.get(index=1)
    assert failed.is_error and failed.error_type == "NotFound"
    assert failed.observation == "pod checkout-7f not found"
    assert trace.steps.get(index=0).content == "asks for tool call(s): kubectl_logs"
    assert trace.final_answer == "The upstream pool was exhausted."
    assert trace.metadata["service.name"] == "support-agent"


def test_the_json_encoding_uses_hex_ids_and_is_answered_in_json(post):
    body = {
        "resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "support-agent"}}]},
            "scopeSpans": [{"scope": {"name": "agents"}, "spans": [
                {"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174",
                 "name": "invoke_agent helper", "kind": 1,
                 "startTimeUnixNano": "1780000000000000000", "endTimeUnixNano": 1780000005000000000,
                 "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                    {"key": "gen_ai.input.messages", "value": {"stringValue": user_says("hi")}}],
                 "futureField": {"ignored": True}},
                {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "1111111111111111",
                 "parentSpanId": "EEE19B7EC3C1B174", "name": "execute_tool search",
                 "startTimeUnixNano": "1780000001000000000",
                 "endTimeUnixNano": "1780000002000000000",
                 "status": {"code": 2, "message": "timeout"},
                 "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                    {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
                    {"key": "gen_ai.tool.call.arguments",
                     "value": {"kvlistValue": {"values": [
                        {"key": "q", "value": {"stringValue": "weather"}}]}}}]},
            ]}],
        }]
    }  # fmt: skip
    response = post(json.dumps(body).encode(), "application/json")

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json" and response.json() == {}
    trace = Trace.objects.get(external_id="otel-5b8efff798038103d269b633813fc60c")
    assert (trace.agent, trace.task, trace.outcome) == ("helper", "hi", "success")
    tool = trace.steps.get()
    assert (tool.tool, tool.arguments, tool.is_error) == ("search", {"q": "weather"}, True)


def test_a_gzip_body_is_decompressed(post):
    body = gzip.compress(export(*agent_run()).SerializeToString())
    assert post(body, headers={"Content-Encoding": "gzip"}).status_code == 200
    assert Trace.objects.get().step_count == 4


def test_a_body_that_inflates_past_the_limit_is_413_without_inflating_it_all(post, settings):
    settings.HINDSIGHT_MAX_BODY_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))  # 50 MB of zeros in ~50 kB
    response = post(bomb, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert "decompressed" in status_of(response).message


def test_a_gzip_body_of_a_few_members_is_read_whole(post):
    raw = export(*agent_run()).SerializeToString()
    body = b"".join(gzip.compress(raw[i : i + 100]) for i in range(0, len(raw), 100))
    assert post(body, headers={"Content-Encoding": "gzip"}).status_code == 200
    assert Trace.objects.get().step_count == 4


def test_a_body_of_many_empty_gzip_members_is_refused_at_once(post):
    # 4.5 MB of empty members: 21.9 s of a web worker's CPU before, then a 200.
    body = gzip.compress(b"") * (4_500_000 // len(gzip.compress(b"")))
    began = time.monotonic()
    response = post(body, headers={"Content-Encoding": "gzip"})

    assert response.status_code == 400 and time.monotonic() - began < 1.0
    assert "more than 64 members" in status_of(response).message


def test_an_unknown_content_encoding_is_415(post):
    response = post(b"x", headers={"Content-Encoding": "br"})
    assert response.status_code == 415


def test_spans_of_one_trace_over_two_requests_build_one_trajectory(post):
    root, *children = agent_run()
    # the later steps first, the root last: as a batch processor sends them
    assert post(export(*children[2:]).SerializeToString()).status_code == 200
    assert not Trace.objects.exists()
    assert post(export(*children[:2]).SerializeToString()).status_code == 200
    assert not Trace.objects.exists()
    assert post(export(root).SerializeToString()).status_code == 200

    trace = Trace.objects.get()
    assert [s.tool for s in trace.steps.order_by("index")] == [
        "",
        "kubectl_logs",
        "",
        "kubectl_get_pods",
    ]
    assert not OtelSpan.objects.exists()  # the buffer is emptied once the trace is stored


def test_the_same_export_twice_adds_nothing(post):
    body = export(*agent_run()[1:]).SerializeToString()
    assert post(body).status_code == 200
    assert post(body).status_code == 200
    assert OtelSpan.objects.count() == 4

    full = export(*agent_run()).SerializeToString()
    assert post(full).status_code == 200
    again = post(full)  # the exporter retried: a resend of stored spans is no error

    assert again.status_code == 200 and not answer(again).HasField("partial_success")
    assert Trace.objects.get().step_count == 4


def test_a_new_span_of_a_stored_trace_is_rejected_as_a_partial_success(post):
    post(export(*agent_run()).SerializeToString())
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "late"}
    late = span(1, 99, "execute_tool late", parent=1, start=11, end=12, attrs=tool)
    response = post(export(late).SerializeToString())

    partial = answer(response).partial_success
    assert response.status_code == 200 and partial.rejected_spans == 1
    assert "already stored" in partial.error_message
    assert Trace.objects.get().step_count == 4


def test_invalid_ids_are_rejected_in_json_too(post):
    bad = span(1, 2, "execute_tool x", parent=1, start=0, end=1,
               attrs={"gen_ai.operation.name": "execute_tool"})  # fmt: skip
    bad.span_id = b"\0" * 8
    data = hex_ids(json_format.MessageToDict(export(bad), use_integers_for_enums=True))
    response = post(json.dumps(data).encode(), "application/json")

    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"


def test_spans_of_no_genai_kind_are_ignored_not_rejected(post):
    http = span(7, 1, "GET /health", start=0, end=1, attrs={"http.request.method": "GET"})
    db = span(7, 2, "SELECT", parent=1, start=0, end=1, attrs={"db.system.name": "postgresql"})
    response = post(export(http, db).SerializeToString())

    assert response.status_code == 200 and not answer(response).HasField("partial_success")
    assert not OtelTrace.objects.exists() and not Trace.objects.exists()


def test_a_root_of_no_genai_kind_completes_the_agent_run_inside_it(post):
    server = span(1, 50, "POST /chat", start=0, end=12, error="boom",
                  attrs={"http.request.method": "POST"})  # fmt: skip
    run = agent_run()
    run[0].parent_span_id = server.span_id
    post(export(*run).SerializeToString())
    assert not Trace.objects.exists()  # the agent span is not the root here

    post(export(server).SerializeToString())
    trace = Trace.objects.get()
    assert trace.outcome == "failure" and trace.agent == "triage"


def test_an_agent_span_with_a_remote_parent_is_the_root(post):
    run = agent_run()
    run[0].parent_span_id = b"\x09" * 8
    run[0].flags = 0x100 | 0x200  # the parent's context is known to be remote
    post(export(*run).SerializeToString())
    assert Trace.objects.get().is_complete


def test_the_idle_sweep_stores_a_trace_whose_root_never_came(post, settings):
    settings.HINDSIGHT_OTLP_IDLE_SECONDS = 60
    post(export(*agent_run()[1:]).SerializeToString())
    assert complete_idle_traces() == 0  # not idle yet

    OtelTrace.objects.update(last_received_at=timezone.now() - timedelta(seconds=61))
    assert complete_idle_traces() == 1

    trace = Trace.objects.get()
    assert trace.is_complete and trace.step_count == 4 and trace.outcome == "unknown"
    assert trace.task == "Why does the checkout service return 502?"
    assert trace.metadata["completed_by"] == "idle"
    assert complete_idle_traces() == 0
    # the root arriving late is dropped, and says so
    late = post(export(agent_run()[0]).SerializeToString())
    assert answer(late).partial_success.rejected_spans == 1


def test_an_explicit_outcome_attribute_wins(post):
    run = agent_run()
    run[0].attributes.add(key="hindsight.outcome").value.string_value = "partial"
    post(export(*run).SerializeToString())
    assert Trace.objects.get().outcome == "partial"


def test_a_failed_root_span_makes_a_failure(post):
    post(export(*agent_run(agent_error="gave up")).SerializeToString())
    assert Trace.objects.get().outcome == "failure"


def test_nul_characters_and_nan_values_are_stored_without_error(post):
    run = agent_run()
    run[4].attributes.add(key="gen_ai.tool.call.result").value.string_value = "a\x00b"
    run[4].attributes.add(key="gen_ai.tool.call.arguments").value.double_value = float("nan")
    assert post(export(*run).SerializeToString()).status_code == 200
    assert Trace.objects.get().steps.get(index=3).observation_raw == "ab"


def test_spans_over_the_step_limit_are_rejected(post, settings):
    settings.HINDSIGHT_MAX_STEPS = 2
    response = post(export(*agent_run()).SerializeToString())
    assert answer(response).partial_success.rejected_spans == 2
    assert Trace.objects.get().step_count == 2


# ---------------------------------------------------------------------------- failures


def test_an_undecodable_protobuf_body_is_400_with_a_status(post):
    response = post(b"not a protobuf")
    assert response.status_code == 400
    status = status_of(response)
    assert status.code == 3 and "ExportTraceServiceRequest" in status.message


@pytest.mark.parametrize(
    "body",
    [b"{", b"[1, 2]", b'{"resourceSpans": 3}', b'{"resourceSpans": [{"scopeSpans": [{"spans": '
     b'[{"traceId": "zz"}]}]}]}', b"[" * 100000, b"\xff\xfe"],
)  # fmt: skip
def test_an_undecodable_json_body_is_400_with_detail_and_message(post, body):
    response = post(body, "application/json")
    assert response.status_code == 400
    data = response.json()
    assert data["detail"] == data["message"] and data["code"] == 3


def test_another_content_type_is_415(post):
    response = post(b"resourceSpans", "text/plain")
    assert response.status_code == 415
    assert "application/x-protobuf" in response.json()["detail"]


def test_a_missing_key_is_401_with_a_status(post):
    response = post(export(*agent_run()).SerializeToString(), key=None)
    assert response.status_code == 401 and status_of(response).message == "Unauthorized"
    assert not OtelTrace.objects.exists()


def test_a_key_without_the_ingest_scope_is_403(post, project, make_key):
    response = post(export().SerializeToString(), key=make_key(project, ("recall",)))
    assert response.status_code == 403 and "ingest" in status_of(response).message


def test_the_rate_limit_answers_429_with_retry_after(post, settings):
    settings.HINDSIGHT_RATE_LIMIT_PER_MINUTE = 1
    empty = export().SerializeToString()  # an export of no spans is a success
    assert post(empty).status_code == 200
    response = post(empty)
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert status_of(response).code == 8


def test_the_x_api_key_header_works_too(post, pipeline_key):
    response = post(
        export(*agent_run()).SerializeToString(), key=None, headers={"X-API-Key": pipeline_key}
    )
    assert response.status_code == 200


def test_a_trace_whose_external_id_is_taken_is_rejected_not_a_server_error(post, api):
    taken = {"external_id": f"otel-{TRACE_HEX}", "agent": "a", "task": "t", "steps": []}
    assert api.post("traces", taken).status_code == 201
    response = post(export(*agent_run()).SerializeToString())

    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans == 5 and "already exists" in partial.error_message
    assert OtelTrace.objects.get().error and not OtelSpan.objects.exists()
