"""Trajectories as agents send them, for pipeline tests."""

from typing import Any


def seed_000_body(external_id: str = "netpol-1") -> dict[str, Any]:
    """Seed 000's example as a full API body (7 steps; 7 tool calls trigger a full review)."""

    def call(i, tool, args, obs, **extra):
        return {
            "index": i,
            "kind": "tool_call",
            "tool": tool,
            "arguments": args,
            "observation": obs,
            **extra,
        }

    return {
        "external_id": external_id,
        "agent": "ops-bot",
        "task": "Service svc-a cannot reach svc-b in the prod namespace",
        "task_type": "operation",
        "environment": ["k8s"],
        "outcome": "success",
        "final_answer": "The NetworkPolicy deny-all-egress blocked egress from svc-a; patched it "
        "to allow traffic to app=svc-b.",
        "steps": [
            {"index": 0, "kind": "user_input", "content": "svc-a gets timeouts calling svc-b"},
            call(
                1,
                "kubectl_get_pods",
                {"namespace": "prod"},
                "svc-a-7d9f Running\nsvc-b-5c2a Running",
            ),
            call(2, "docker_restart", {"container": "svc-b"}, "restarted"),
            call(3, "docker_restart", {"container": "svc-a"}, "restarted"),
            call(
                4,
                "kubectl_exec",
                {"pod": "svc-a-7d9f", "cmd": "curl svc-b:8080"},
                "curl: (7) Failed to connect to svc-b port 8080: Connection refused after 3012 ms",
                is_error=True,
                error_type="ConnectionRefused",
            ),
            call(
                5,
                "kubectl_logs",
                {"pod": "svc-a-7d9f"},
                "dial tcp 10.0.3.17:8080: i/o timeout\nblocked by NetworkPolicy deny-all-egress",
            ),
            call(
                6,
                "kubectl_get_networkpolicy",
                {"name": "deny-all-egress"},
                "spec: podSelector app=svc-a egress: [] resourceVersion=48213",
            ),
            call(
                7,
                "kubectl_patch_networkpolicy",
                {"name": "deny-all-egress", "resourceVersion": "48213", "allow": "app=svc-b"},
                "networkpolicy.networking.k8s.io/deny-all-egress patched",
            ),
        ],
    }


def chat_only_body(external_id: str = "chat-1") -> dict[str, Any]:
    """A short run with no tool call: nothing about tool use to learn, skipped."""
    return {
        "external_id": external_id,
        "agent": "ops-bot",
        "task": "Say hello to the on-call engineer",
        "outcome": "success",
        "steps": [{"index": 0, "kind": "llm_reasoning", "content": "Hello, on-call engineer!"}],
    }


def short_body(external_id: str = "short-1") -> dict[str, Any]:
    return {
        "external_id": external_id,
        "agent": "ops-bot",
        "task": "What time is it in Tokyo?",
        "outcome": "success",
        "steps": [
            {
                "index": 0,
                "kind": "tool_call",
                "tool": "clock",
                "arguments": {"tz": "Asia/Tokyo"},
                "observation": "14:02",
            }
        ],
    }
