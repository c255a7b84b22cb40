"""`HindsightClient`: recall, warnings before a tool call, trace upload, and recorders."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from hindsight_client.errors import RequestTooLarge
from hindsight_client.limits import Limits
from hindsight_client.models import Recall, ToolWarning
from hindsight_client.recorder import TrajectoryRecorder
from hindsight_client.spool import ResendResult, resend_spooled
from hindsight_client.transport import Backoff, Transport, call_with_retries


class HindsightClient:
    """A thin, thread-safe client of the hindsight API (stdlib only; vendor it freely).

    Synchronous calls retry connection errors, 5xx and 429 `retries` times with a short
    backoff (a Retry-After above `max_retry_wait` seconds is not waited: the error is raised),
    so a recall never stalls an agent for long. Errors are `hindsight_client.ApiError`
    (status + the server's detail; `RequestTooLarge` for a 413, `InvalidRequest` for a 422 or
    400) or `ConnectionFailed`.

    `limits` are the server's size limits (`Limits()`: its defaults); nothing over them is
    sent. Set them when the server runs with other `HINDSIGHT_MAX_*` values.

    `spool_dir` is where its recorders spool what they could not send before stopping (None:
    `$HINDSIGHT_SPOOL_DIR` or the user cache dir; False: no spool); see `resend_spooled`.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float = 10.0,
        *,
        retries: int = 2,
        max_retry_wait: float = 5.0,
        spool_dir: str | os.PathLike[str] | bool | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.transport = Transport(base_url, api_key, timeout, limits=limits)
        self.spool_dir = spool_dir
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.backoff = Backoff(base=0.2, cap=2.0)

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    @property
    def limits(self) -> Limits:
        return self.transport.limits

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        retry: bool = True,
        data: bytes | None = None,
    ) -> Any:
        return call_with_retries(
            lambda: self.transport.request(method, path, body, data=data),
            attempts=1 + (self.retries if retry else 0),
            backoff=self.backoff,
            max_wait=self.max_retry_wait,
        )

    # ------------------------------------------------------------------ recall and warnings

    def recall(
        self,
        task: str,
        *,
        task_type: str | None = None,
        intent: str | None = None,
        environment: Sequence[str] | None = None,
        tools: Sequence[str] | None = None,
        agent: str | None = None,
        user: str | None = None,
        k: int = 5,
        include_candidates: bool | None = None,
        include_warnings: bool | None = None,
    ) -> Recall:
        """Experience relevant to `task`, ranked and explained, with a ready-to-inject
        `prompt_block`. Options left as None take the server's defaults."""
        body = _without_none(
            task=task,
            task_type=task_type,
            intent=intent,
            environment=_list(environment),
            tools=_list(tools),
            agent=agent,
            user=user,
            k=k,
            include_candidates=include_candidates,
            include_warnings=include_warnings,
        )
        return Recall.from_json(self._call("POST", "recall", body))

    def recall_feedback(
        self,
        recall_id: int | str,
        *,
        helpful: Iterable[int] = (),
        unhelpful: Iterable[int] = (),
    ) -> Any:
        """Say which items of a recall helped; it feeds the votes and the hit rate."""
        body = {"helpful": list(helpful), "unhelpful": list(unhelpful)}
        return self._call("POST", f"recall/{recall_id}/feedback", body)

    def check_tool_call(
        self,
        tool: str,
        arguments: Any,
        *,
        task: str | None = None,
        environment: Sequence[str] | None = None,
        agent: str | None = None,
        timeout: float | None = None,
    ) -> list[ToolWarning]:
        """Frequent failure patterns matching a planned call (empty when nothing matches).
        Meant to be called before every tool call: keep `timeout` short."""
        body = _without_none(
            tool=tool, arguments=arguments, task=task, environment=_list(environment), agent=agent
        )
        answer = call_with_retries(
            lambda: self.transport.request("POST", "warnings", body, timeout=timeout),
            attempts=1 + self.retries,
            backoff=self.backoff,
            max_wait=self.max_retry_wait,
        )
        return [ToolWarning.from_json(w) for w in (answer or {}).get("warnings") or []]

    # ------------------------------------------------------------------ traces

    def send_trace(self, trace: dict[str, Any]) -> dict[str, Any]:
        """Store one complete trajectory (idempotent on external_id: retries are safe).
        Raises RequestTooLarge (413: over the body or step limit; a body over `limits` is not
        sent) and InvalidRequest (422, the field errors in `detail`) without retrying."""
        return self._call("POST", "traces", trace)

    def send_traces(self, traces: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store many; one result per trace (`created`, `duplicate`, `conflict`, `invalid`).

        Sent in as many `traces/batch` requests as `limits` need (at most `max_batch` traces
        and `max_body_bytes` each); the results keep the order of `traces`. A trace that cannot
        fit in a request on its own raises RequestTooLarge before anything is sent."""
        encoded = [json.dumps(trace, default=str).encode() for trace in traces]
        room = self.limits.max_body_bytes - len(_BATCH_OPEN + _BATCH_CLOSE)
        for position, item in enumerate(encoded):
            if len(item) > room:
                external_id = traces[position].get("external_id")
                raise RequestTooLarge(
                    413,
                    f"trace {position} ({external_id!r}) is {len(item)} bytes; one request "
                    f"holds at most {self.limits.max_body_bytes} bytes (nothing was sent)",
                    client_side=True,
                )
        results: list[dict[str, Any]] = []
        for chunk in _chunks(encoded, count=self.limits.max_batch, size=room):
            data = _BATCH_OPEN + b",".join(chunk) + _BATCH_CLOSE
            results += self._call("POST", "traces/batch", data=data)["results"]
        return results

    def get_trace(self, trace_id: int) -> dict[str, Any]:
        return self._call("GET", f"traces/{trace_id}")

    def resend_spooled(self, **options: Any) -> ResendResult:
        """Send what this client's recorders spooled (same URL and key) and report what was
        sent and what is still pending; see `hindsight_client.spool.resend_spooled`."""
        options.setdefault("spool_dir", self.spool_dir)
        return resend_spooled(self.transport, **options)

    def recorder(
        self,
        *,
        agent: str,
        task: str,
        environment: Sequence[str] = (),
        external_id: str | None = None,
        **options: Any,
    ) -> TrajectoryRecorder:
        """A recorder that streams one trajectory in the background; see TrajectoryRecorder."""
        return TrajectoryRecorder(
            self.transport,
            agent=agent,
            task=task,
            environment=environment,
            external_id=external_id,
            **{"spool_dir": self.spool_dir, **options},
        )


_BATCH_OPEN = b'{"traces":['
_BATCH_CLOSE = b"]}"


def _chunks(items: list[bytes], *, count: int, size: int) -> Iterator[list[bytes]]:
    """Consecutive runs of at most `count` items and `size` bytes joined by commas."""
    chunk: list[bytes] = []
    used = 0
    for item in items:
        if chunk and (len(chunk) >= count or used + 1 + len(item) > size):
            yield chunk
            chunk, used = [], 0
        used += len(item) + (1 if chunk else 0)
        chunk.append(item)
    if chunk:
        yield chunk


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _without_none(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}
