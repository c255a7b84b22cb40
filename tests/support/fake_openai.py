"""A small OpenAI-compatible HTTP server for tests: chat completions with JSON-schema output and
embeddings, reached through the real `openai` client. Each chat request takes the next scripted
behaviour ("ok", "500", "429", "timeout", "invalid_json", "wrong_indexes", "missing_steps",
"forbids_lookup").

With `agent` set (a list of `AgentTurn`), it plays an agent's model instead: a request whose
conversation holds n tool results is answered with turn n, a tool call or the final text, so
every run of the same script makes the same calls (tests/clients/integrations/). Tests in another
language script it over HTTP: `POST /v1/test/agent-script` with `{"task", "turns": [{"tool",
"arguments"} | {"text"}]}` plays those turns for conversations whose first user message is
`task`, and `GET /v1/test/chat-requests` lists the chat requests received so far. The same
script answers the Responses API (`POST /v1/responses`, not streamed) for agents on it."""

import base64
import hashlib
import json
import re
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STEP_MARK = re.compile(r"^\[(\d+)\] (\w+)", re.MULTILINE)


def review_answer(prompt: str, *, indexes: list[int] | None = None) -> dict[str, Any]:
    """A plausible review: errored steps failed, the rest necessary."""
    steps = [(int(i), kind) for i, kind in STEP_MARK.findall(prompt)]
    failed = {int(i) for i in re.findall(r"^\[(\d+)\][^\n]*✗", prompt, re.MULTILINE)}
    chosen = indexes if indexes is not None else [i for i, _ in steps]
    labels = [
        {
            "index": i,
            "label": "failed" if i in failed else "necessary",
            "reason": "the call errored" if i in failed else "its result was used",
            "confidence": 0.9,
        }
        for i in chosen
    ]
    return {
        "goal": "Fix the restarting container.",
        "execution_path": ["read the logs", "raise the memory limit"],
        "effective_steps": [i for i in chosen if i not in failed],
        "ineffective_steps": sorted(failed),
        "key_decisions": ["read the logs before restarting anything"],
        "improvements": ["skip the blind restart"],
        "scene_summary": "Find why the web container keeps restarting (OOMKilled?) on docker",
        "strategy": "docker_logs, then docker_update memory=1g",
        "pitfall": "",
        "experience": "When you use docker_logs on a restarting container, "
        "first look for OOMKilled.",
        "worth_reference": True,
        "labels": labels,
    }


@dataclass(frozen=True)
class AgentTurn:
    """One turn of a scripted agent's model: call `tool` with `arguments`, or answer `text`."""

    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


def first_user_text(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def responses_output(turns: list[AgentTurn], body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses API output for the input in `body`: turn n after n function outputs."""
    items = body["input"] if isinstance(body["input"], list) else []
    done = sum(1 for item in items if item.get("type") == "function_call_output")
    turn = turns[min(done, len(turns) - 1)]
    if not turn.tool:
        text = {"type": "output_text", "text": turn.text, "annotations": []}
        return [
            {
                "type": "message",
                "id": f"msg_{done}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        ]
    call = {
        "type": "function_call",
        "id": f"fc_{done}",
        "call_id": f"call_{done}",
        "name": turn.tool,
        "arguments": json.dumps(turn.arguments),
        "status": "completed",
    }
    return [call]


def responses_task(body: dict[str, Any]) -> str:
    if isinstance(body["input"], str):
        return body["input"]
    return first_user_text({"messages": body["input"]})


def agent_message(turns: list[AgentTurn], body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for the conversation in `body`: turn n after n tool results."""
    done = sum(1 for message in body["messages"] if message.get("role") == "tool")
    turn = turns[min(done, len(turns) - 1)]
    if not turn.tool:
        return {"role": "assistant", "content": turn.text}
    call = {
        "id": f"call_{done}",
        "type": "function",
        "function": {"name": turn.tool, "arguments": json.dumps(turn.arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def fake_vector(text: str, dimensions: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    raw = [((digest[i % 32] + i * 7) % 255) / 255 - 0.5 for i in range(dimensions)]
    norm = sum(v * v for v in raw) ** 0.5
    return [v / norm for v in raw]


class FakeOpenAI:
    def __init__(self, *, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.script: deque[str] = deque()
        self.default = "ok"
        self.agent: list[AgentTurn] | None = None
        self.scripts_by_task: dict[str, list[AgentTurn]] = {}
        self.delay = 0.0
        # Cleared: an embedding request waits (up to 30 s) until it is set again, so a test can
        # act while a request is in flight.
        self.embedding_gate = threading.Event()
        self.embedding_gate.set()
        self.chat_requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_behaviour(self) -> str:
        return self.script.popleft() if self.script else self.default

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout scenario)

            def do_GET(self) -> None:
                if self.path.endswith("/test/chat-requests"):
                    return self._send(200, {"requests": fake.chat_requests})
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path.endswith("/test/agent-script"):
                    turns = [AgentTurn(**turn) for turn in body["turns"]]
                    fake.scripts_by_task[body["task"]] = turns
                    return self._send(200, {"task": body["task"], "turns": len(turns)})
                if self.path.endswith("/responses"):
                    fake.chat_requests.append(body)
                    return self._responses(body)
                if self.path.endswith("/embeddings"):
                    fake.embedding_requests.append(body)
                    self._embeddings(body)
                elif self.path.endswith("/chat/completions"):
                    fake.chat_requests.append(body)
                    self._chat(body)
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def _responses(self, body: dict[str, Any]) -> None:
                turns = fake.scripts_by_task.get(responses_task(body)) or fake.agent
                if turns is None:
                    return self._send(404, {"error": {"message": "no agent script"}})
                usage = {
                    "input_tokens": 850,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 24,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 874,
                }
                response = {
                    "id": "resp_test",
                    "object": "response",
                    "created_at": int(time.time()),
                    "model": body["model"],
                    "status": "completed",
                    "output": responses_output(turns, body),
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                    "usage": usage,
                }
                self._send(200, response)

            def _embeddings(self, body: dict[str, Any]) -> None:
                fake.embedding_gate.wait(30)
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = []
                for i, text in enumerate(texts):
                    vector = fake_vector(text, fake.dimensions)
                    if body.get("encoding_format") == "base64":
                        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                        data.append({"object": "embedding", "index": i, "embedding": packed})
                    else:
                        data.append({"object": "embedding", "index": i, "embedding": vector})
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )

            def _chat(self, body: dict[str, Any]) -> None:
                behaviour = fake.next_behaviour()
                if fake.delay:
                    time.sleep(fake.delay)
                if behaviour == "500":
                    return self._send(500, {"error": {"message": "upstream exploded"}})
                if behaviour == "429":
                    return self._send(429, {"error": {"message": "slow down"}})
                if behaviour == "timeout":
                    time.sleep(3)
                    return self._send(500, {"error": {"message": "too late"}})
                turns = fake.scripts_by_task.get(first_user_text(body)) or fake.agent
                if turns is not None:
                    message = agent_message(turns, body)
                    return self._send(200, self._completion(body, message=message))
                prompt = body["messages"][-1]["content"]
                if "response_format" not in body:  # a plain-text request
                    system = body["messages"][0]["content"]
                    if "corrected the step labels" in system:  # an advice revision
                        text = "REVISED: " + prompt.splitlines()[0].removeprefix("Experience: ")
                    else:  # the advice merge
                        text = "MERGED: " + prompt.replace("\n", " | ")
                    return self._send(200, self._completion(body, text))
                answer = review_answer(prompt)
                if behaviour == "wrong_indexes":
                    answer = review_answer(prompt, indexes=[i + 100 for i in range(3)])
                if behaviour == "missing_steps":
                    answer["labels"] = answer["labels"][:1]
                if behaviour == "forbids_lookup":  # a lesson against a look-up the run used
                    answer["experience"] = 'When you fix restarts, do not docker_logs "web".'
                    answer["pitfall"] = 'docker_logs "web": it led to a result with id, status'
                    answer["blamed_step"] = 0
                content = json.dumps(answer)
                if behaviour == "invalid_json":
                    content = content[: len(content) // 2]
                self._send(200, self._completion(body, content))

            def _completion(
                self, body: dict[str, Any], content: str = "", message: dict | None = None
            ) -> dict[str, Any]:
                message = message or {"role": "assistant", "content": content}
                return {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            "message": message,
                        }
                    ],
                    "usage": {"prompt_tokens": 850, "completion_tokens": 240, "total_tokens": 1090},
                }

        return Handler
