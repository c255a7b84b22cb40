"""The API as tests speak it: a JSON client with a key, and trajectory payloads."""

import json
from typing import Any

from django.test import Client


class ApiClient:
    """The Django test client speaking JSON with an API key."""

    def __init__(self, key: str | None) -> None:
        self.client = Client()
        self.key = key

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None):
        data = raw if raw is not None else json.dumps(body)
        return self.client.post(
            "/api/v1/" + path, data=data, content_type="application/json", headers=self._headers()
        )

    def get(self, path: str, params: dict[str, Any] | None = None):
        return self.client.get("/api/v1/" + path, params or {}, headers=self._headers())


def step(index: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"index": index, "kind": "tool_call", "tool": "shell"}
    base.update(fields)
    return base


def trajectory(external_id: str = "run-1", *, steps: int = 3, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "external_id": external_id,
        "agent": "ops-bot",
        "task": "Find out why the web container keeps restarting",
        "environment": ["docker"],
        "outcome": "success",
        "steps": [
            step(i, arguments={"cmd": f"docker logs web --tail {i}"}, observation=f"line {i}")
            for i in range(steps)
        ],
    }
    body.update(fields)
    return body
