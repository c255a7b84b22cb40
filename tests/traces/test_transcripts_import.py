"""POST /api/v1/traces/import and /traces/import/batch: SDK transcripts stored as trajectories."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.transcripts import (
    BUILDERS,
    Call,
    anthropic_result,
    anthropic_text,
    anthropic_thinking,
    anthropic_tool_use,
    chat_assistant,
    chat_tool,
    import_body,
    responses_call,
    responses_message,
    responses_output,
    responses_reasoning,
)
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db

TASK = "Why does the web container keep restarting?"


def steps_of(trace_id: int) -> list[dict[str, Any]]:
    return list(
        Step.objects.filter(trace_id=trace_id)
        .order_by("index")
        .values("kind", "tool", "arguments", "content", "observation", "is_error", "error_type")
    )


def stored(response) -> Trace:
    assert response.status_code == 201, response.json()
    return Trace.objects.get(pk=response.json()["id"])


def detail_of(response) -> dict[str, Any]:
    assert response.status_code == 422, response.json()
    (error,) = response.json()["detail"]
    return error


# ---------------------------------------------------------------------------- OpenAI chat


def chat_with_parallel_calls() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a careful operations agent."},
        {"role": "user", "content": TASK},
        chat_assistant(
            "I will look at the container list and its logs.",
            [
                ("call_ps", "docker_ps", '{"all": true}'),
                ("call_logs", "docker_logs", '{"name": "web", "tail": 50}'),
            ],
        ),
        chat_tool("call_logs", "Killed process 4411 (node) exit code 137 OOMKilled"),
        chat_tool("call_ps", "web  Restarting (137) 5 seconds ago"),
        chat_assistant(None, [("call_up", "docker_update", '{"name": "web", "memory": "1g"}')]),
        chat_tool("call_up", "Error: permission denied while trying to connect to the daemon"),
        chat_assistant("It is OOMKilled: exit code 137. Raise its memory limit to 1g."),
    ]


def test_an_openai_chat_transcript_is_answered_like_post_traces(api):
    response = api.post("traces/import", import_body("openai", messages=chat_with_parallel_calls()))

    assert response.status_code == 201
    assert set(response.json()) == {
        "id",
        "external_id",
        "review_status",
        "is_complete",
        "step_count",
    }
    assert response.json()["external_id"] == "chat-1" and response.json()["step_count"] == 5
    trace = Trace.objects.get(pk=response.json()["id"])
    assert trace.task == TASK and trace.outcome == "success" and trace.environment == ["k8s"]
    assert trace.final_answer == "It is OOMKilled: exit code 137. Raise its memory limit to 1g."
    assert trace.metadata == {
        "transcript_format": "openai",
        "system_prompt": "You are a careful operations agent.",
    }
    assert trace.tools == ["docker_ps", "docker_logs", "docker_update"]
    assert (trace.tool_call_count, trace.error_count) == (3, 1)


def test_parallel_tool_calls_each_get_their_own_result(api):
    trace = stored(
        api.post("traces/import", import_body("openai", messages=chat_with_parallel_calls()))
    )

    assert steps_of(trace.pk) == [
        {"kind": "user_input", "tool": "", "arguments": {}, "content": TASK, "observation": "",
         "is_error": False, "error_type": ""},
        {"kind": "llm_reasoning", "tool": "", "arguments": {},
         "content": "I will look at the container list and its logs.", "observation": "",
         "is_error": False, "error_type": ""},
        {"kind": "tool_call", "tool": "docker_ps", "arguments": {"all": True}, "content": "",
         "observation": "web  Restarting (137) 5 seconds ago", "is_error": False, "error_type": ""},
        {"kind": "tool_call", "tool": "docker_logs", "arguments": {"name": "web", "tail": 50},
         "content": "", "observation": "Killed process 4411 (node) exit code 137 OOMKilled",
         "is_error": False, "error_type": ""},
        {"kind": "tool_call", "tool": "docker_update", "arguments": {"name": "web", "memory": "1g"},
         "content": "",
         "observation": "Error: permission denied while trying to connect to the daemon",
         "is_error": True, "error_type": ""},
    ]  # fmt: skip


def test_steps_carry_the_task_and_the_latest_user_input_as_context(api):
    messages = chat_with_parallel_calls()[:5] + [{"role": "user", "content": "Try the logs again"}]
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    contexts = list(trace.steps.order_by("index").values_list("context", flat=True))
    assert contexts[2] == {"task_goal": TASK, "subtask": "", "latest_user_input": TASK}
    assert contexts[-1]["latest_user_input"] == "Try the logs again"


def test_content_as_parts_becomes_text_with_placeholders_for_media(api):
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is wrong in this screenshot?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "file", "file": {"filename": "web.log", "file_data": "aGVsbG8="}},
            ],
        },
        chat_assistant(None, [("call_1", "read_log", '{"path": "web.log"}')]),
        chat_tool(
            "call_1", [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}]
        ),
        chat_assistant("The log shows an OOM kill."),
    ]
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    assert trace.task == "What is wrong in this screenshot?"  # what the person typed
    first, call = trace.steps.order_by("index")
    assert first.content == "What is wrong in this screenshot?\n[image]\n[file: web.log]"
    assert call.observation == "line 1\nline 2"


def test_arguments_that_are_not_json_are_kept_as_text(api):
    messages = [
        {"role": "user", "content": TASK},
        chat_assistant(
            None,
            [
                ("c1", "shell", "docker logs web --tail 5"),
                ("c2", "noop", ""),
                ("c3", "scale", '{"ratio": NaN}'),  # Python's JSON, not JSON (nor jsonb)
            ],
        ),
        chat_tool("c1", "ok"),
        chat_tool("c2", "ok"),
    ]
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    shell, noop, scale = trace.steps.filter(kind="tool_call").order_by("index")
    assert shell.arguments == "docker logs web --tail 5"
    assert noop.arguments == {}  # no arguments at all
    assert scale.arguments == '{"ratio": NaN}'


def test_sdk_dumps_with_every_null_field_are_read(api):
    messages = [
        {"role": "user", "content": TASK, "name": None},
        chat_assistant("Looking.", [("c1", "docker_ps", "{}")], exclude_none=False),
        chat_tool("c1", "web Restarting"),
        chat_assistant("Restarting.", exclude_none=False),
    ]
    assert messages[1]["audio"] is None and messages[3]["tool_calls"] is None
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    assert trace.step_count == 3 and trace.final_answer == "Restarting."


def test_a_tool_call_without_a_result_keeps_an_empty_observation(api):
    messages = [
        {"role": "user", "content": TASK},
        chat_assistant(None, [("c1", "docker_ps", "{}")]),
    ]
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    call = trace.steps.get(kind="tool_call")
    assert (call.observation, call.is_error) == ("", False)
    assert trace.final_answer == ""


def test_a_tool_message_for_an_unknown_call_is_a_422_naming_the_message(api):
    messages = chat_with_parallel_calls()
    messages[3] = chat_tool("call_9", "orphan")
    error = detail_of(api.post("traces/import", import_body("openai", messages=messages)))

    assert error["loc"] == ["body", "payload", "messages", 3, "tool_call_id"]
    assert error["msg"] == "messages[3].tool_call_id: no tool call with id 'call_9' before it"
    assert not Trace.objects.exists()


def test_a_second_result_for_the_same_call_is_refused(api):
    messages = chat_with_parallel_calls()
    messages.insert(5, chat_tool("call_ps", "again"))
    error = detail_of(api.post("traces/import", import_body("openai", messages=messages)))

    assert error["msg"] == (
        "messages[5].tool_call_id: the tool call 'call_ps' already has a result (messages[4])"
    )


# ---------------------------------------------------------------------------- OpenAI responses


def responses_items() -> list[dict[str, Any]]:
    return [
        {"role": "developer", "content": "You are a careful operations agent."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]},
        responses_reasoning("The exit code will tell whether it was killed."),
        responses_message("Checking the container and its logs."),
        responses_call("call_ps", "docker_ps", '{"all": true}'),
        responses_call("call_logs", "docker_logs", '{"name": "web"'),  # cut-off JSON
        responses_output("call_ps", "web  Restarting (137)"),
        responses_output("call_logs", "Traceback (most recent call last):\n  boom", sdk_item=True),
        responses_message("It is OOMKilled (exit code 137)."),
    ]


def test_an_openai_responses_transcript_is_stored(api):
    trace = stored(
        api.post("traces/import", import_body("openai-responses", messages=responses_items()))
    )

    assert trace.task == TASK and trace.final_answer == "It is OOMKilled (exit code 137)."
    assert trace.metadata["system_prompt"] == "You are a careful operations agent."
    assert [(s["kind"], s["tool"], s["content"]) for s in steps_of(trace.pk)] == [
        ("user_input", "", TASK),
        ("llm_reasoning", "", "The exit code will tell whether it was killed."),
        ("llm_reasoning", "", "Checking the container and its logs."),
        ("tool_call", "docker_ps", ""),
        ("tool_call", "docker_logs", ""),
    ]
    ps, logs = trace.steps.filter(kind="tool_call").order_by("index")
    assert (ps.arguments, ps.observation, ps.is_error) == (
        {"all": True},
        "web  Restarting (137)",
        False,
    )
    assert logs.arguments == '{"name": "web"' and logs.is_error


def test_encrypted_reasoning_without_a_summary_is_dropped(api):
    items = responses_items()
    items[2] = {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA..."}
    trace = stored(api.post("traces/import", import_body("openai-responses", messages=items)))

    assert trace.step_count == 4


def test_a_function_call_output_for_an_unknown_call_is_a_422(api):
    items = responses_items()
    items[6] = responses_output("call_zz", "orphan")
    error = detail_of(api.post("traces/import", import_body("openai-responses", messages=items)))

    assert error["loc"][2:] == ["messages", 6, "call_id"]
    assert error["msg"] == "messages[6].call_id: no function call with id 'call_zz' before it"


def test_built_in_tool_calls_are_steps_too(api):
    items = [
        {"role": "user", "content": "What changed in Docker 27?"},
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "docker 27 release notes"},
        },
        responses_message("Docker 27 dropped the legacy builder."),
    ]
    trace = stored(api.post("traces/import", import_body("openai-responses", messages=items)))

    call = trace.steps.get(kind="tool_call")
    assert call.tool == "web_search"
    assert call.arguments == {"action": {"type": "search", "query": "docker 27 release notes"}}


# ---------------------------------------------------------------------------- Anthropic


def anthropic_messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": [
                anthropic_thinking("Exit code 137 would mean the kernel killed it."),
                anthropic_text("I'll check the container and its logs."),
                anthropic_tool_use("toolu_01", "docker_ps", {"all": True}),
                anthropic_tool_use("toolu_02", "docker_logs", {"name": "web"}),
            ],
        },
        {
            "role": "user",
            "content": [
                anthropic_result("toolu_01", "web  Restarting (137)"),
                anthropic_result(
                    "toolu_02",
                    [{"type": "text", "text": "permission denied"}],
                    is_error=True,
                ),
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                anthropic_text("It was OOMKilled."),
            ],
        },
    ]


def test_an_anthropic_transcript_is_stored(api):
    trace = stored(
        api.post("traces/import", import_body("anthropic", messages=anthropic_messages()))
    )

    assert trace.task == TASK and trace.final_answer == "It was OOMKilled."
    assert "system_prompt" not in trace.metadata
    assert [(s["kind"], s["content"]) for s in steps_of(trace.pk)][:3] == [
        ("user_input", TASK),
        ("llm_reasoning", "Exit code 137 would mean the kernel killed it."),
        ("llm_reasoning", "I'll check the container and its logs."),
    ]
    ps, logs = trace.steps.filter(kind="tool_call").order_by("index")
    assert (ps.tool, ps.arguments, ps.observation, ps.is_error) == (
        "docker_ps",
        {"all": True},
        "web  Restarting (137)",
        False,
    )
    assert (logs.observation, logs.is_error) == ("permission denied", True)
    assert trace.step_count == 5  # the redacted thinking is not a step


def test_a_tool_result_for_an_unknown_tool_use_is_a_422_naming_the_block(api):
    messages = anthropic_messages()
    messages[2]["content"][1]["tool_use_id"] = "toolu_99"
    error = detail_of(api.post("traces/import", import_body("anthropic", messages=messages)))

    assert error["loc"][2:] == ["messages", 2, "content", 1, "tool_use_id"]
    assert "no tool_use with id 'toolu_99' before it" in error["msg"]


def test_a_system_role_in_anthropic_messages_is_refused_with_where_it_goes(api):
    messages = [{"role": "system", "content": "be brief"}, *anthropic_messages()]
    error = detail_of(api.post("traces/import", import_body("anthropic", messages=messages)))

    assert error["loc"][2:] == ["messages", 0, "role"] and "metadata" in error["msg"]


def test_a_non_boolean_is_error_is_refused_not_read_as_false(api):
    messages = anthropic_messages()
    messages[2]["content"][1]["is_error"] = "yes"  # was stored as is_error false
    error = detail_of(api.post("traces/import", import_body("anthropic", messages=messages)))

    assert error["loc"][2:] == ["messages", 2, "content", 1, "is_error"]
    assert "expected true or false, got a string" in error["msg"]


def test_a_non_boolean_is_error_of_a_server_tool_result_is_refused(api):
    messages = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [],
             "is_error": 1},
        ]},
    ]  # fmt: skip
    error = detail_of(api.post("traces/import", import_body("anthropic", messages=messages)))

    assert error["loc"][2:] == ["messages", 1, "content", 1, "is_error"]


# ---------------------------------------------------------------------------- common rules


@pytest.mark.parametrize(
    ("named", "actual"),
    [(n, a) for n in BUILDERS for a in BUILDERS if n != a],
)
def test_a_transcript_of_another_format_is_refused_naming_what_it_looks_like(api, named, actual):
    # Sent as another format, a transcript lost its tool calls (201, one step) or was refused
    # for a missing role without saying why.
    calls = [Call("docker_ps", {"all": True}, "web  Restarting (137)")]
    messages = BUILDERS[actual](TASK, calls, "It was OOMKilled.")
    error = detail_of(api.post("traces/import", import_body(named, messages=messages)))

    assert f"this transcript looks like format '{actual}'" in error["msg"]
    assert error["loc"][2] == "messages" and Trace.objects.count() == 0


@pytest.mark.parametrize("format", BUILDERS)
def test_a_text_only_conversation_imports_under_any_format(api, format):
    messages = [{"role": "user", "content": TASK}, {"role": "assistant", "content": "Done."}]
    trace = stored(api.post("traces/import", import_body(format, messages=messages)))
    assert trace.final_answer == "Done."


def test_a_given_task_wins_over_the_opening_request(api):
    body = import_body("anthropic", messages=anthropic_messages(), task="Fix the web container")
    assert stored(api.post("traces/import", body)).task == "Fix the web container"


def test_a_long_opening_request_is_cut_to_the_task_limit(api):
    messages = [{"role": "user", "content": "x" * 25000}, chat_assistant("done")]
    trace = stored(api.post("traces/import", import_body("openai", messages=messages)))

    assert len(trace.task) == 20000 and len(trace.steps.get().content) == 25000


def test_a_transcript_without_user_text_needs_a_task(api):
    messages = [chat_assistant("hello")]
    error = detail_of(api.post("traces/import", import_body("openai", messages=messages)))

    assert error["loc"] == ["body", "payload", "task"]


def test_import_is_idempotent_on_external_id_like_post_traces(api):
    body = import_body("openai", messages=chat_with_parallel_calls())
    first = api.post("traces/import", body)
    again = api.post("traces/import", body)
    other = api.post("traces/import", {**body, "outcome": "failure"})

    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 409)
    assert again.json()["id"] == first.json()["id"]
    assert "chat-1" in other.json()["detail"]
    assert Trace.objects.count() == 1


def test_an_unknown_format_is_a_422_naming_format(api):
    response = api.post("traces/import", import_body("gemini", messages=chat_with_parallel_calls()))

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload", "format"]


def test_unknown_fields_are_refused_by_name(api):
    body = {**import_body("openai", messages=chat_with_parallel_calls()), "system": "be brief"}
    response = api.post("traces/import", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"][-1] == "system"


@pytest.mark.parametrize(
    ("format", "messages", "loc"),
    [
        ("openai", "not a list", ["messages"]),
        ("openai", [], ["messages"]),
        ("openai", ["hello"], ["messages", 0]),
        ("openai", [{"content": "hi"}], ["messages", 0, "role"]),
        ("openai", [{"role": "robot", "content": "hi"}], ["messages", 0, "role"]),
        ("openai", [{"role": "user", "content": 42}], ["messages", 0, "content"]),
        ("openai", [{"role": "user", "content": [7]}], ["messages", 0, "content", 0]),
        ("openai", [{"role": "assistant", "tool_calls": {}}], ["messages", 0, "tool_calls"]),
        (
            "openai",
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}],
            ["messages", 0, "tool_calls", 0, "function", "name"],
        ),
        ("openai", [{"role": "tool", "content": "x"}], ["messages", 0, "tool_call_id"]),
        ("openai", [{"role": "function", "name": "f"}], ["messages", 0, "name"]),
        ("openai-responses", [{"id": "x"}], ["messages", 0, "type"]),
        ("openai-responses", [{"type": "function_call", "name": "f"}], ["messages", 0, "call_id"]),
        ("openai-responses", [{"type": "message", "content": "x"}], ["messages", 0, "role"]),
        ("anthropic", [{"role": "user", "content": {"a": 1}}], ["messages", 0, "content"]),
        (
            "anthropic",
            [{"role": "assistant", "content": [{"type": "tool_use", "name": "f"}]}],
            ["messages", 0, "content", 0, "id"],
        ),
    ],
)
def test_malformed_transcripts_are_422_naming_the_place_never_a_5xx(api, format, messages, loc):
    response = api.post("traces/import", import_body(format, messages=messages, task="t"))

    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"][2:] == loc


def test_an_over_long_tool_name_is_reported_at_its_call(api):
    messages = [{"role": "user", "content": TASK}, chat_assistant(None, [("c1", "x" * 300, "{}")])]
    error = detail_of(api.post("traces/import", import_body("openai", messages=messages)))

    assert error["loc"][2:] == ["messages", 1, "tool_calls", 0]
    assert error["msg"].startswith("messages[1].tool_calls[0]: tool: String should have at most")


def test_import_needs_the_ingest_scope(project, make_key, api_for):
    body = import_body("openai", messages=chat_with_parallel_calls())
    assert api_for(None).post("traces/import", body).status_code == 401
    recall_only = api_for(make_key(project, ("recall",)))
    assert recall_only.post("traces/import", body).status_code == 403
    assert recall_only.post("traces/import/batch", {"traces": [body]}).status_code == 403


# ---------------------------------------------------------------------------- batch


def test_batch_stores_the_good_items_and_reports_the_bad_one_by_its_index(api):
    bad_messages = chat_with_parallel_calls()
    bad_messages[3] = chat_tool("call_9", "orphan")
    items = [
        import_body("openai", "a", messages=chat_with_parallel_calls()),
        import_body("openai", "bad", messages=bad_messages),
        import_body("anthropic", "b", messages=anthropic_messages()),
        import_body("openai-responses", "c", messages=responses_items()),
        {"format": "openai", "messages": []},
    ]
    response = api.post("traces/import/batch", {"traces": items})

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "invalid", "created", "created", "invalid"]
    assert results[1]["external_id"] == "bad"
    assert results[1]["detail"] == [
        {
            "loc": ["messages", 3, "tool_call_id"],
            "msg": "messages[3].tool_call_id: no tool call with id 'call_9' before it",
            "type": "transcript",
        }
    ]
    assert {"external_id", "agent", "outcome"} <= {d["loc"][0] for d in results[4]["detail"]}
    assert set(Trace.objects.values_list("external_id", flat=True)) == {"a", "b", "c"}


def test_batch_again_reports_duplicates(api):
    items = [import_body("anthropic", f"b{i}", messages=anthropic_messages()) for i in range(3)]
    api.post("traces/import/batch", {"traces": items})
    results = api.post("traces/import/batch", {"traces": items}).json()["results"]

    assert [r["status"] for r in results] == ["duplicate"] * 3
    assert Trace.objects.count() == 3


# ------------------------------------------------------------------- docs/sending.md's examples


def readme_import_bodies() -> list[dict[str, Any]]:
    page = (Path(__file__).resolve().parents[2] / "docs" / "sending.md").read_text()
    section = page[page.index("## Importing OpenAI / Anthropic transcripts") :]
    section = section[: section.index("\n## ", 1)]
    return [json.loads(body) for body in re.findall(r"-d '(.*?)'\n", section, re.DOTALL)]


def test_the_readme_curl_examples_import_as_written(api):
    bodies = readme_import_bodies()

    assert sorted(b["format"] for b in bodies) == ["anthropic", "openai", "openai-responses"]
    for body in bodies:
        trace = stored(api.post("traces/import", body))
        assert trace.tool_call_count >= 1 and trace.final_answer
