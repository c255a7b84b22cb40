"""Synthetic agent trajectories for the ingest and review benchmarks: 20 steps each (user input,
reasoning, tool calls with realistic arguments, logs and JSON observations, some errors), the
same for the same seed, and the JSON bodies of `POST /api/v1/traces/batch` made of them."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

STEPS_PER_TRACE = 20

TOOLS = ["shell", "http_get", "read_file", "kubectl", "docker", "sql_query", "web_search"]
ENVIRONMENTS = [["docker"], ["k8s", "aws"], ["bare-metal"], ["docker", "gcp"], ["k8s"]]
TASKS = [
    "Find out why the web container keeps restarting",
    "The nightly ETL job fails with a timeout; make it pass",
    "Rotate the TLS certificate of the public ingress",
    "Why did p95 latency of /checkout double since Monday?",
    "Migrate the orders table to the new schema without downtime",
    "Summarise yesterday's failed deployments and their causes",
]
SUBTASKS = ["inspect logs", "check config", "reproduce", "apply fix", "verify", "report"]
USER_INPUTS = [
    "it started after the last deploy",
    "no, that's not it, the DB is fine",
    "please don't restart production during business hours",
    "ok, try it on staging first",
]
ERROR_TYPES = ["Timeout", "ConnectionError", "ExitCode", "HTTP503"]
LOG_LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN"]
ERRORS = [
    "ERROR: connection refused to db:5432",
    "Traceback (most recent call last): TimeoutError: read timed out",
    'FATAL: password authentication failed for user "etl"',
    "HTTP/1.1 503 Service Unavailable",
    "exit code 137 (OOMKilled)",
    "permission denied: /var/run/docker.sock",
]


def _arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    if tool == "shell":
        since, lines = rng.randint(1, 90), rng.randint(20, 400)
        return {"cmd": f"journalctl -u app --since -{since}m | tail -n {lines}"}
    if tool == "http_get":
        return {
            "url": f"https://api.internal/v{rng.randint(1, 3)}/health",
            "params": {"region": f"eu-{rng.randint(1, 4)}"},
            "headers": {"Accept": "application/json"},
            "timeout": rng.choice([2, 5, 10]),
        }
    if tool == "read_file":
        return {"path": f"/etc/app/config-{rng.randint(1, 9)}.yaml", "max_bytes": 65536}
    if tool == "kubectl":
        return {"args": ["get", "pods", "-n", rng.choice(["web", "etl", "ingress"]), "-o", "wide"]}
    if tool == "docker":
        container = rng.choice(["web", "worker", "db"])
        return {"args": ["logs", container, "--tail", str(rng.randint(50, 500))]}
    if tool == "sql_query":
        return {
            "database": "orders",
            "query": "SELECT status, count(*) FROM orders "
            "WHERE created_at > now() - interval '1 day' GROUP BY status",
            "params": [],
        }
    return {"query": rng.choice(TASKS), "top_k": rng.randint(3, 10)}


def _log_text(rng: random.Random, chars: int, *, with_errors: bool) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        line = (
            f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}Z {rng.choice(LOG_LEVELS)} worker[{rng.randint(1, 9999)}] "
            f"handled request id={rng.getrandbits(48):012x} in {rng.randint(1, 900)}ms"
        )
        if with_errors and rng.random() < 0.08:
            line = rng.choice(ERRORS)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _observation(rng: random.Random, tool: str, is_error: bool) -> Any:
    if tool in ("http_get", "sql_query") and not is_error and rng.random() < 0.6:
        rows = [
            {"status": rng.choice(["ok", "pending", "failed"]), "count": rng.randint(0, 5000)}
            for _ in range(rng.randint(3, 30))
        ]
        return {"status": 200, "rows": rows, "elapsed_ms": rng.randint(1, 800)}
    chars = int(rng.lognormvariate(6.5, 0.7))  # median ≈ 650 chars, a few KB in the tail
    return _log_text(rng, max(200, min(chars, 6000)), with_errors=is_error or rng.random() < 0.3)


def trajectory(rng: random.Random, external_id: str) -> dict[str, Any]:
    task = rng.choice(TASKS)
    start = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 2_000_000))
    at = start
    latest_input = rng.choice(USER_INPUTS)
    steps: list[dict[str, Any]] = []
    for index in range(STEPS_PER_TRACE):
        context = {
            "task_goal": task,
            "subtask": SUBTASKS[min(index * len(SUBTASKS) // STEPS_PER_TRACE, len(SUBTASKS) - 1)],
            "latest_user_input": latest_input,
        }
        duration = rng.randint(20, 4000)
        base: dict[str, Any] = {
            "index": index,
            "started_at": at.isoformat(),
            "duration_ms": duration,
            "context": context,
        }
        roll = rng.random()
        if index == 0 or roll < 0.08:
            latest_input = task if index == 0 else rng.choice(USER_INPUTS)
            context["latest_user_input"] = latest_input
            steps.append({**base, "kind": "user_input", "content": latest_input})
        elif roll < 0.25:
            thought = " ".join(rng.choice(["check", "the", "logs", "config", "error", "because",
                                           "likely", "restart", "pool", "timeout", "DNS", "then"])
                               for _ in range(rng.randint(20, 80)))  # fmt: skip
            steps.append({**base, "kind": "llm_reasoning", "content": thought})
        else:
            tool = rng.choice(TOOLS)
            is_error = rng.random() < 0.12
            step = {
                **base,
                "kind": "tool_call",
                "tool": tool,
                "arguments": _arguments(rng, tool),
                "observation": _observation(rng, tool, is_error),
                "is_error": is_error,
            }
            if is_error:
                step["error_type"] = rng.choice(ERROR_TYPES)
            steps.append(step)
        at += timedelta(milliseconds=duration + rng.randint(0, 500))
    return {
        "external_id": external_id,
        "agent": rng.choice(["ops-bot", "etl-agent", "sre-copilot"]),
        "task": task,
        "task_type": rng.choice(["operation", "analysis", "query"]),
        "environment": rng.choice(ENVIRONMENTS),
        "outcome": rng.choice(["success", "success", "failure", "partial"]),
        "session_id": f"s-{rng.getrandbits(32):08x}",
        "started_at": start.isoformat(),
        "ended_at": at.isoformat(),
        "final_answer": "Raised the pool size and restarted the worker; errors stopped.",
        "metadata": {"model": "gpt-x", "run": rng.randint(1, 10_000)},
        "steps": steps,
    }


def batch_bodies(rng: random.Random, *, prefix: str, traces: int, batch: int) -> list[bytes]:
    bodies = []
    for start in range(0, traces, batch):
        items = [trajectory(rng, f"{prefix}-{n}") for n in range(start, min(start + batch, traces))]
        bodies.append(json.dumps({"traces": items}).encode())
    return bodies
