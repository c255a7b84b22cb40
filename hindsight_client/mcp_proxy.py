"""MCP capture proxy: sits between an MCP client and a real MCP server over stdio.

    python -m hindsight_client.mcp_proxy --agent NAME [--task TEXT] [--warn] -- <server command>
    python manage.py mcp_proxy --agent NAME [--task TEXT] [--warn] -- <server command>

The proxy starts the server as a child process and copies newline-delimited JSON-RPC messages
both ways, byte for byte (the MCP stdio transport). It watches `tools/call` requests and their
responses and records each call as a `tool_call` step (arguments, result, `isError`; a JSON-RPC
error answer or a cancelled call is a failed step) through a TrajectoryRecorder, which streams
the trajectory to the ingest API in the background and completes it when the session ends
(stdin EOF or the server exits). The server's stderr is left as the proxy's stderr.

Hindsight never breaks the MCP session: without HINDSIGHT_API_KEY nothing is recorded, and an
unreachable hindsight only delays the upload (the recorder retries), never a message.

With --warn, each `tools/call` also asks the warnings endpoint (in parallel: the request is
forwarded at once). When the server answers and a frequent failure pattern matched within
--warn-timeout seconds of the request, a text item with the warning is appended to the result's
`content`; that response is the only message the proxy ever changes.

Standard library only, like the rest of hindsight_client.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

from hindsight_client.client import HindsightClient
from hindsight_client.errors import HindsightError
from hindsight_client.models import ToolWarning
from hindsight_client.recorder import OUTCOMES, TrajectoryRecorder, now_iso

logger = logging.getLogger("hindsight_client.mcp_proxy")

CHILD_EXIT_GRACE = 5.0


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


class CaptureProxy:
    def __init__(
        self,
        options: ProxyOptions,
        *,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
        client: HindsightClient | None = None,
    ) -> None:
        if not options.command:
            raise ValueError("give the MCP server's command after --")
        self.options = options
        self.stdin = stdin or sys.stdin.buffer
        self.stdout = stdout or sys.stdout.buffer
        self.client = client
        if self.client is None and options.api_key:
            self.client = HindsightClient(options.base_url, options.api_key, timeout=5.0)
        self.recorder: TrajectoryRecorder | None = None
        self.pending: dict[str, PendingCall] = {}
        self.lock = threading.Lock()
        self.ended = threading.Event()
        self.warner = ThreadPoolExecutor(max_workers=4) if options.warn and self.client else None
        self.calls = 0
        self.process: subprocess.Popen[bytes]

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        self.process = subprocess.Popen(
            self.options.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        up = threading.Thread(target=self._pump_up, name="mcp-proxy-up", daemon=True)
        down = threading.Thread(target=self._pump_down, name="mcp-proxy-down", daemon=True)
        up.start()
        down.start()
        self.ended.wait()
        # The client hung up (stdin EOF) or the server closed its stdout: give the server a
        # moment to finish on its own, then stop it.
        code = _stop(self.process)
        down.join(CHILD_EXIT_GRACE)  # forward whatever the server still wrote
        self._close_session()
        return code

    def _close_session(self) -> None:
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

    # ------------------------------------------------------------------ client -> server

    def _pump_up(self) -> None:
        child_in = self.process.stdin
        assert child_in is not None
        try:
            for line in iter(self.stdin.readline, b""):
                line = self._before_forward_up(line)
                try:
                    child_in.write(line)
                    child_in.flush()
                except (BrokenPipeError, OSError):
                    break  # the server is gone; the down pump ends the session
                self._after_forward_up(line)
        finally:
            try:
                child_in.close()
            except OSError:
                pass
            self.ended.set()

    def _before_forward_up(self, line: bytes) -> bytes:
        # Registered before forwarding: a fast server may answer before this thread runs again.
        # A cheap filter first: most messages are not tool calls.
        if b"tools/call" in line:
            for message in _messages(line):
                if message.get("method") == "tools/call" and "id" in message:
                    self._on_call(_key(message["id"]), message.get("params") or {})
        return line

    def _after_forward_up(self, line: bytes) -> None:
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

    # ------------------------------------------------------------------ server -> client

    def _pump_down(self) -> None:
        child_out = self.process.stdout
        assert child_out is not None
        try:
            for line in iter(child_out.readline, b""):
                answered = self._answered_calls(line) if self.pending else []
                if answered and self.warner is not None:
                    line = self._with_warnings(line, answered)
                try:
                    self.stdout.write(line)
                    self.stdout.flush()
                except (BrokenPipeError, OSError):
                    pass  # the client is gone; keep draining so the server is not blocked
                for call, response in answered:
                    self._record_response(call, response)
        finally:
            self.ended.set()

    def _answered_calls(self, line: bytes) -> list[tuple[PendingCall, dict[str, Any]]]:
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

    def _with_warnings(
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

    def _record_response(self, call: PendingCall, response: dict[str, Any]) -> None:
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

    # ------------------------------------------------------------------ recording

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


def _stop(process: subprocess.Popen[bytes]) -> int:
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        try:
            return process.wait(CHILD_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()


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


# ---------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", required=True, help="agent name recorded on the trajectory")
    parser.add_argument("--task", help="task text (default: 'MCP session with `<command>`')")
    parser.add_argument(
        "--environment",
        action="append",
        default=[],
        metavar="TAG",
        help="environment tag (docker, k8s, ...); repeat for several",
    )
    parser.add_argument(
        "--outcome",
        default="unknown",
        choices=OUTCOMES,
        help="outcome the trajectory completes with (default: unknown)",
    )
    parser.add_argument(
        "--warn",
        action="store_true",
        help="append warnings of frequent failure patterns to tool results",
    )
    parser.add_argument("--warn-timeout", type=float, default=0.5, metavar="SECONDS")
    parser.add_argument(
        "--flush-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for the upload when the session ends",
    )
    parser.add_argument(
        "server_command", nargs=argparse.REMAINDER, help="-- then the MCP server's command line"
    )


def options_from(namespace: argparse.Namespace | dict[str, Any]) -> ProxyOptions:
    values = vars(namespace) if isinstance(namespace, argparse.Namespace) else namespace
    command = list(values["server_command"])
    if command and command[0] == "--":
        command = command[1:]
    return ProxyOptions(
        command=command,
        agent=values["agent"],
        task=values.get("task"),
        environment=list(values.get("environment") or []),
        outcome=values.get("outcome") or "unknown",
        warn=bool(values.get("warn")),
        warn_timeout=values.get("warn_timeout", 0.5),
        flush_timeout=values.get("flush_timeout", 10.0),
        base_url=os.environ.get("HINDSIGHT_URL", "http://localhost:8000"),
        api_key=os.environ.get("HINDSIGHT_API_KEY", ""),
    )


def run(options: ProxyOptions) -> int:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO,
            stream=sys.stderr,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    if not options.command:
        print("mcp_proxy: give the MCP server's command after --", file=sys.stderr)
        return 2
    if not options.api_key:
        logger.warning("hindsight: HINDSIGHT_API_KEY is not set; forwarding without recording")
    return CaptureProxy(options).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp_proxy", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(options_from(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
