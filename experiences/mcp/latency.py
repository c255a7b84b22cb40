"""What the capture proxy adds to each MCP message, measured over real pipes.

    python -m experiences.mcp.latency [--messages 2000] [--payload-bytes 300]

A minimal stdio JSON-RPC echo server answers every request at once. The same sequence of
`tools/call` requests is sent to it directly and through `python -m hindsight_client.mcp_proxy`
(recording every call: set HINDSIGHT_URL and HINDSIGHT_API_KEY to a running site, e.g.
`make run`); each round trip crosses the proxy twice, so the added latency per message is half
the difference of the round-trip times. The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

ECHO_SERVER = r"""
import json, sys
out = sys.stdout.buffer
for line in iter(sys.stdin.buffer.readline, b""):
    message = json.loads(line)
    if "id" in message:
        answer = {"jsonrpc": "2.0", "id": message["id"],
                  "result": {"content": [{"type": "text", "text": "ok"}], "isError": False}}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()
"""


def _round_trips(command: list[str], requests: list[bytes], env: dict[str, str]) -> list[float]:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT, bufsize=0
    )
    assert process.stdin and process.stdout
    timings = []
    try:
        for request in requests:
            began = time.perf_counter()
            process.stdin.write(request)
            process.stdout.readline()
            timings.append(time.perf_counter() - began)
    finally:
        process.stdin.close()
        process.wait(30)
    return timings


def _requests(count: int, payload_bytes: int) -> list[bytes]:
    filler = "x" * max(0, payload_bytes - 120)
    return [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"n": n, "text": filler}},
            }
        ).encode()
        + b"\n"
        for n in range(count)
    ]


def _ms(values: list[float], q: int) -> float:
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000, 4)


def measure(
    messages: int = 2000, payload_bytes: int = 300, env: dict[str, str] | None = None
) -> dict[str, Any]:
    env = {**os.environ, **(env or {})}
    echo = [sys.executable, "-c", ECHO_SERVER]
    proxied = [
        sys.executable,
        "-m",
        "hindsight_client.mcp_proxy",
        "--agent",
        "latency-probe",
        "--task",
        "measure the proxy's added latency",
        "--",
        *echo,
    ]
    warmup = _requests(50, payload_bytes)
    requests = _requests(messages, payload_bytes)
    _round_trips(echo, warmup, env)
    direct = _round_trips(echo, requests, env)
    _round_trips(proxied, warmup, env)
    through = _round_trips(proxied, requests, env)
    return {
        "messages": messages,
        "payload_bytes": len(requests[0]),
        "recording": bool(env.get("HINDSIGHT_API_KEY")),
        "direct_rtt_p50_ms": _ms(direct, 50),
        "proxied_rtt_p50_ms": _ms(through, 50),
        "direct_rtt_p95_ms": _ms(direct, 95),
        "proxied_rtt_p95_ms": _ms(through, 95),
        "added_per_message_p50_ms": round((_ms(through, 50) - _ms(direct, 50)) / 2, 4),
        "added_per_message_mean_ms": round(
            (statistics.mean(through) - statistics.mean(direct)) / 2 * 1000, 4
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--payload-bytes", type=int, default=300)
    args = parser.parse_args()
    figures = measure(args.messages, args.payload_bytes)
    print(
        f"{figures['messages']} tools/call round trips of {figures['payload_bytes']} bytes, "
        f"recording={'on' if figures['recording'] else 'off (no HINDSIGHT_API_KEY)'}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
