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

This module is the stdio side (the child process and the two pumps) and the command line; what
the proxy records, and the warnings it appends, are `hindsight_client.mcp_calls`. Standard
library only, like the rest of hindsight_client.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import threading
from typing import IO, Any

from hindsight_client.client import HindsightClient
from hindsight_client.mcp_calls import (
    CallCapture,
    PendingCall,
    ProxyOptions,
    observation_of,
    warning_text,
)
from hindsight_client.recorder import OUTCOMES

__all__ = [
    "CHILD_EXIT_GRACE",
    "CallCapture",
    "CaptureProxy",
    "PendingCall",
    "ProxyOptions",
    "add_arguments",
    "main",
    "observation_of",
    "options_from",
    "run",
    "warning_text",
]

logger = logging.getLogger("hindsight_client.mcp_proxy")

CHILD_EXIT_GRACE = 5.0


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
        if client is None and options.api_key:
            client = HindsightClient(options.base_url, options.api_key, timeout=5.0)
        self.capture = CallCapture(options, client)
        self.ended = threading.Event()
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
        self.capture.close_session()
        return code

    # ------------------------------------------------------------------ client -> server

    def _pump_up(self) -> None:
        child_in = self.process.stdin
        assert child_in is not None
        try:
            for line in iter(self.stdin.readline, b""):
                line = self.capture.before_forward_up(line)
                try:
                    child_in.write(line)
                    child_in.flush()
                except (BrokenPipeError, OSError):
                    break  # the server is gone; the down pump ends the session
                self.capture.after_forward_up(line)
        finally:
            try:
                child_in.close()
            except OSError:
                pass
            self.ended.set()

    # ------------------------------------------------------------------ server -> client

    def _pump_down(self) -> None:
        child_out = self.process.stdout
        assert child_out is not None
        try:
            for line in iter(child_out.readline, b""):
                answered = self.capture.answered_calls(line) if self.capture.pending else []
                if answered and self.capture.warner is not None:
                    line = self.capture.with_warnings(line, answered)
                try:
                    self.stdout.write(line)
                    self.stdout.flush()
                except (BrokenPipeError, OSError):
                    pass  # the client is gone; keep draining so the server is not blocked
                for call, response in answered:
                    self.capture.record_response(call, response)
        finally:
            self.ended.set()


def _stop(process: subprocess.Popen[bytes]) -> int:
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        try:
            return process.wait(CHILD_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()


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
