"""The recording side of the MCP capture proxy: `CallCapture` watches the JSON-RPC messages the
proxy forwards (newline-delimited, one message or a batch per line), keeps each `tools/call`
request until its response, a cancellation or the end of the session, and records it as a
`tool_call` step through a TrajectoryRecorder created at the first call (arguments, result,
`isError`; a JSON-RPC error answer, a cancelled or unanswered call is a failed step). With
`--warn` it asks the warnings endpoint for each call in parallel and appends a matched warning
to the call's result (`with_warnings`), the only change the proxy ever makes to a message.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hindsight_client.client import HindsightClient
from hindsight_client.errors import HindsightError
from hindsight_client.models import ToolWarning
from hindsight_client.recorder import TrajectoryRecorder, now_iso

logger = logging.getLogger("hindsight_client.mcp_proxy")


@dataclass
class PendingCall:
    tool: str
    arguments: Any
    started_at: str
    began: float
    warnings: Future[list[ToolWarning]] | None = None


@dataclass
class ProxyOptions:
    command: list[str]
    agent: str
    task: str | None = None
    environment: list[str] = field(default_factory=list)
    outcome: str = "unknown"
    warn: bool = False
    warn_timeout: float = 0.5
    flush_timeout: float = 10.0
    base_url: str = "http://localhost:8000"
    api_key: str = ""


class CallCapture:
    def __init__(self, options: ProxyOptions, client: HindsightClient | None) -> None:
        self.options = options
        self.client = client
        self.recorder: TrajectoryRecorder | None = None
        self.pending: dict[str, PendingCall] = {}
        self.lock = threading.Lock()
        self.warner = ThreadPoolExecutor(max_workers=4) if options.warn and self.client else None
        self.calls = 0

    def close_session(self) -> None:
        with self.lock:
            leftovers = list(self.pending.values())
            self.pending.clear()
        for call in leftovers:
            self._record(
                call,
                observation="no response before the session ended",
                is_error=True,
                error_type="no_response",
            )
        if self.warner is not None:
            self.warner.shutdown(wait=False, cancel_futures=True)
        if self.recorder is None:
            return
        try:
            done = self.recorder.finish(self.options.outcome, wait=self.options.flush_timeout)
        except HindsightError as error:
            logger.error("hindsight: the trajectory was not stored: %s", error)
            return
        if not done:
            logger.warning(
                "hindsight: %d steps not sent within %.0fs",
                self.recorder.pending,
                self.options.flush_timeout,
            )

    def before_forward_up(self, line: bytes) -> bytes:
        # Registered before forwarding: a fast server may answer before this thread runs again.
        # A cheap filter first: most messages are not tool calls.
        if b"tools/call" in line:
            for message in _messages(line):
                if message.get("method") == "tools/call" and "id" in message:
                    self._on_call(_key(message["id"]), message.get("params") or {})
        return line

    def after_forward_up(self, line: bytes) -> None:
        if b"notifications/cancelled" not in line:
            return
        for message in _messages(line):
            params = message.get("params") or {}
            if message.get("method") == "notifications/cancelled":
                with self.lock:
                    call = self.pending.pop(_key(params.get("requestId")), None)
                if call is not None:
                    reason = params.get("reason") or "no reason given"
                    self._record(
                        call,
                        observation=f"cancelled by the client: {reason}",
                        is_error=True,
                        error_type="cancelled",
                    )

    def _on_call(self, key: str, params: dict[str, Any]) -> None:
        tool = str(params.get("name") or "unknown")
        arguments = params.get("arguments")
        call = PendingCall(
            tool=tool,
            arguments=arguments,
            started_at=now_iso(),
            began=time.monotonic(),
        )
        if self.warner is not None and self.client is not None:
            call.warnings = self.warner.submit(self._check, tool, arguments)
        with self.lock:
            self.pending[key] = call

    def _check(self, tool: str, arguments: Any) -> list[ToolWarning]:
        assert self.client is not None
        return self.client.check_tool_call(
            tool,
            arguments,
            task=self.options.task,
            environment=self.options.environment or None,
            agent=self.options.agent,
            timeout=self.options.warn_timeout,
        )

    def answered_calls(self, line: bytes) -> list[tuple[PendingCall, dict[str, Any]]]:
        if b'"id"' not in line:
            return []
        answered = []
        for message in _messages(line):
            if "method" in message or "id" not in message:
                continue  # a request or notification from the server
            with self.lock:
                call = self.pending.pop(_key(message["id"]), None)
            if call is not None:
                answered.append((call, message))
        return answered

    def with_warnings(
        self, line: bytes, answered: list[tuple[PendingCall, dict[str, Any]]]
    ) -> bytes:
        """The line to forward: unchanged, or re-encoded with a warning appended to the content
        of the results whose call matched a failure pattern. The recorded responses are not
        changed (the step keeps what the server said)."""
        changed: dict[str, dict[str, Any]] = {}
        for call, response in answered:
            result = response.get("result")
            if call.warnings is None or not isinstance(result, dict):
                continue
            content = result.get("content", [])
            if not isinstance(content, list):
                continue
            remaining = call.began + self.options.warn_timeout - time.monotonic()
            try:
                warnings = call.warnings.result(timeout=max(0.0, remaining))
            except Exception as error:  # noqa: BLE001 - a warning is optional; never fail a call
                logger.info("hindsight: no warning checked for %s: %r", call.tool, error)
                continue
            if warnings:
                warning = {"type": "text", "text": warning_text(warnings)}
                result = {**result, "content": [*content, warning]}
                changed[_key(response["id"])] = {**response, "result": result}
        if not changed:
            return line
        decoded = json.loads(line)
        if isinstance(decoded, list):  # a batch: replace its changed members only
            decoded = [
                changed.get(_key(m.get("id")), m) if isinstance(m, dict) else m for m in decoded
            ]
        else:
            decoded = next(iter(changed.values()))
        return json.dumps(decoded, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def record_response(self, call: PendingCall, response: dict[str, Any]) -> None:
        if "error" in response:
            error = response.get("error") or {}
            code = error.get("code")
            text = f"JSON-RPC error {code}: {error.get('message', '')}"
            if error.get("data") is not None:
                text += f"\n{json.dumps(error['data'], default=str)}"
            self._record(call, observation=text, is_error=True, error_type=f"jsonrpc {code}")
            return
        result = response.get("result")
        result = result if isinstance(result, dict) else {}
        self._record(call, observation=observation_of(result), is_error=bool(result.get("isError")))

    def _record(
        self, call: PendingCall, *, observation: Any, is_error: bool, error_type: str = ""
    ) -> None:
        recorder = self._recorder()
        if recorder is None:
            return
        self.calls += 1
        if recorder.is_finishing:
            logger.warning(
                "hindsight: %s answered after the session ended; not recorded", call.tool
            )
            return
        recorder.record_event(
            "tool_call",
            tool=call.tool,
            arguments=call.arguments,
            observation=observation,
            is_error=is_error,
            error_type=error_type,
            started_at=call.started_at,
            duration_ms=int((time.monotonic() - call.began) * 1000),
        )

    def _recorder(self) -> TrajectoryRecorder | None:
        """Created at the first recorded call: a session without tool calls sends nothing."""
        if self.client is None:
            return None
        with self.lock:
            if self.recorder is None:
                command = " ".join(self.options.command)
                self.recorder = self.client.recorder(
                    agent=self.options.agent,
                    task=self.options.task or f"MCP session with `{command}`"[:20000],
                    environment=self.options.environment,
                    metadata={"source": "mcp_proxy", "server_command": self.options.command},
                )
            return self.recorder


def observation_of(result: dict[str, Any]) -> Any:
    """What a tool returned, as the step's observation: its text when all content is text,
    else the structured content or the content items."""
    content = result.get("content")
    if (
        isinstance(content, list)
        and content
        and all(isinstance(item, dict) and item.get("type") == "text" for item in content)
    ):
        return "\n".join(str(item.get("text", "")) for item in content)
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    return content if content else None


def warning_text(warnings: list[ToolWarning]) -> str:
    lines = ["[hindsight] Before relying on this result, note past failures of similar calls:"]
    lines.extend(f"- {warning.text}" for warning in warnings)
    return "\n".join(lines)


def _messages(line: bytes) -> list[dict[str, Any]]:
    try:
        decoded = json.loads(line)
    except ValueError:
        return []
    if isinstance(decoded, dict):
        return [decoded]
    if isinstance(decoded, list):
        return [m for m in decoded if isinstance(m, dict)]
    return []


def _key(request_id: Any) -> str:
    # JSON-RPC ids may be numbers or strings; 1 and "1" are different requests.
    return json.dumps(request_id)
