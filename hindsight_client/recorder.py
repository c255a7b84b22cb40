"""`TrajectoryRecorder`: record an agent's events without ever waiting for the server.

`record_event` only puts the event on a bounded in-memory queue and returns. One background
thread per recorder persists the trajectory in order through the streaming endpoints: it opens
the trace, appends steps in small batches, and completes it once `finish` was called and every
step before it is stored.

Delivery: connection errors, 5xx, 408 and 429 are retried without limit (exponential backoff
with jitter, capped at `backoff.cap` seconds; a 429's Retry-After is honoured). A batch stays in
memory until the server confirms it, and steps keep the index they were given, so a request
whose answer was lost is simply resent: the server skips a step it already stores, and opening
or completing the same trace twice is a no-op. Nothing is lost while the server is briefly down
as long as the queue has room.

Sizes: the recorder keeps to the server's limits (`transport.limits`): no request is over
`max_body_bytes` (a step that would not fit alone has its longest text cut, with a marker), and
events past `max_steps - 1` are dropped and counted (the last index is kept for the closing
`system` step that says so).

A step the server refuses for its content (413, 422, 400, or a 500 it answers that step alone;
see `hindsight_client.isolation`) fails alone: its batch is split until the step is found, a
`system` step saying what was refused takes its index, the rest is stored and the trace
completes. `recorder.rejected_steps` lists them (StepRejected), each logged once. A completion
refused for its text is sent with its outcome alone (`recorder.completion_error`).

Any other error (401, 403, 404, 409; a 413 or 422 on the open) is permanent: it is logged once,
the recorder stops, `recorder.error` holds it and `flush()` raises `RecorderError`. It is never
retried.

A full queue (the server has been unreachable for a while, or the agent records faster than the
server stores): `record_event` blocks for at most `put_timeout` seconds, then, with the default
`overflow="drop"`, drops the event, counts it in `recorder.dropped` and returns False (an
agent must never stall or crash because of its telemetry; the completed trace then ends with a
`system` step saying how many events were dropped). With `overflow="raise"` it raises
`QueueFull` instead.

At interpreter exit, every recorder still running is finished (outcome "unknown" unless one was
set) and flushed, waiting at most `exit_timeout` seconds in all.

Spool: what is still unsent when the recorder stops (the exit wait elapsed, or `stop()`) is
written to the spool directory (`spool_dir`; see `hindsight_client.spool`): the open payload,
the steps the server has not acknowledged and the completion if finished. Once the server is
reachable, the next recorder sends spooled trajectories in the background (after its own trace
was opened), or call `hindsight_client.resend_spooled(client)`. `spool_dir=False` turns it off.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
import traceback
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from hindsight_client.errors import (
    ApiError,
    ConnectionFailed,
    QueueFull,
    RecorderError,
    StepRejected,
)
from hindsight_client.isolation import (
    Item,
    deliver_completion,
    deliver_steps,
    server_answers,
    stand_in,
    too_large,
)
from hindsight_client.limits import fit_step, steps_body
from hindsight_client.spool import resend_in_background, resolve_spool_dir, spool_write
from hindsight_client.transport import Backoff, Transport, is_retryable

logger = logging.getLogger("hindsight_client")

STEP_KINDS = ("user_input", "llm_reasoning", "tool_call", "system", "state_change")
OUTCOMES = ("success", "failure", "partial", "unknown")
Overflow = Literal["drop", "raise"]
# A request answered 500 this many times in a row may be refused for its content: a batch is
# then split, a step checked against a probe (see hindsight_client.isolation).
SUSPECT_500_AFTER = 3


UTC = timezone.utc  # noqa: UP017 - the client is vendored into agents on Python < 3.11


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class _Wake:
    """Put on the queue by `finish` so a sender blocked on an empty queue looks again."""


_WAKE = _Wake()


@dataclass
class StepHandle:
    """Yielded by `TrajectoryRecorder.step()`: set what the tool returned."""

    observation: Any = None
    is_error: bool = False
    error_type: str = ""


class TrajectoryRecorder:
    def __init__(
        self,
        transport: Transport,
        *,
        agent: str,
        task: str,
        environment: Sequence[str] = (),
        external_id: str | None = None,
        task_type: str | None = None,
        intent: str | None = None,
        session_id: str | None = None,
        user: str | None = None,
        metadata: dict[str, Any] | None = None,
        max_queue: int = 10_000,
        batch_size: int = 20,
        max_batch_bytes: int = 1_000_000,
        max_observation_chars: int = 65_536,
        put_timeout: float = 0.05,
        overflow: Overflow = "drop",
        backoff: Backoff | None = None,
        exit_timeout: float = 10.0,
        spool_dir: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        if not agent or not task:
            raise ValueError("a recorder needs a non-empty agent and task")
        if overflow not in ("drop", "raise"):
            raise ValueError("overflow must be 'drop' or 'raise'")
        self.transport = transport
        self.external_id = external_id or str(uuid.uuid4())
        self.agent = agent
        self.task = task
        header: dict[str, Any] = {
            "external_id": self.external_id,
            "agent": agent,
            "task": task,
            "environment": list(environment),
            "started_at": now_iso(),
        }
        for name, value in (
            ("task_type", task_type),
            ("intent", intent),
            ("session_id", session_id),
            ("user", user),
            ("metadata", metadata),
        ):
            if value is not None:
                header[name] = value
        self._header = header
        self.batch_size = max(1, batch_size)
        self.max_batch_bytes = max_batch_bytes
        self.max_observation_chars = max_observation_chars
        self.put_timeout = put_timeout
        self.overflow = overflow
        self.backoff = backoff or Backoff(base=0.1, cap=2.0)
        self.exit_timeout = exit_timeout
        self.spool_dir = resolve_spool_dir(spool_dir)
        self.limits = transport.limits

        self._queue: queue.Queue[dict[str, Any] | _Wake] = queue.Queue(maxsize=max(1, max_queue))
        self._context: dict[str, Any] = {"task_goal": task}
        self._lock = threading.Condition()
        self._accepted = 0  # events put on the queue
        self._stored = 0  # steps the server confirmed
        self._dropped = 0
        self._over_limit = 0  # events past the server's steps per trajectory
        self._rejected_steps: list[StepRejected] = []
        self._completion_error: ApiError | None = None
        self._finish: dict[str, Any] | None = None
        self._completed = False
        self._error: ApiError | None = None
        self._stop = threading.Event()
        self._next_index = 0
        self._outcome: dict[str, Any] = {}
        self.trace_id: int | None = None
        # Held by the sender while it moves events from the queue to `_inflight` (indexing
        # them), and by the spool snapshot: an event is always in exactly one of the queue,
        # `_carry` and `_inflight`.
        self._take_lock = threading.Lock()
        self._inflight: list[Item] = []  # sent, not yet acknowledged
        # Indexed but left for the next batch: it would have made this one too large.
        self._carry: Item | None = None
        self._notice_built = False
        self._spooled = False
        self._spool_path: Path | None = None

        _live.add(self)
        self._thread = threading.Thread(
            target=self._run, name=f"hindsight-recorder-{self.external_id[:8]}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ the agent's side

    def record_event(
        self,
        kind: str = "tool_call",
        *,
        tool: str = "",
        arguments: Any = None,
        observation: Any = None,
        is_error: bool = False,
        content: str = "",
        context: dict[str, Any] | None = None,
        error_type: str = "",
        observation_summary: str | None = None,
        started_at: datetime | str | None = None,
        duration_ms: int | None = None,
        agent: str | None = None,
    ) -> bool:
        """Queue one event and return at once: True if queued, False if dropped (queue full
        with overflow="drop", or the recorder failed earlier; see `error`)."""
        if kind not in STEP_KINDS:
            raise ValueError(f"kind must be one of {', '.join(STEP_KINDS)}; got {kind!r}")
        if kind == "tool_call" and not tool:
            raise ValueError("a tool_call event needs a 'tool'")
        if self._finish is not None:
            raise RuntimeError("this recorder was finished; start a new one for a new task")
        step: dict[str, Any] = {
            "kind": kind,
            "started_at": started_at.isoformat()
            if isinstance(started_at, datetime)
            else (started_at or now_iso()),
            "context": {**self._context, **(context or {})},
        }
        for name, value in (
            ("tool", tool),
            ("content", content),
            ("error_type", error_type),
            ("agent", agent),
        ):
            if value:
                step[name] = value
        if arguments is not None:
            step["arguments"] = arguments
        if observation is not None:
            step["observation"] = observation
        if observation_summary is not None:
            step["observation_summary"] = observation_summary
        if is_error:
            step["is_error"] = True
        if duration_ms is not None:
            step["duration_ms"] = max(0, int(duration_ms))
        return self._put(step)

    def _put(self, step: dict[str, Any]) -> bool:
        if self._error is not None or self._stop.is_set():
            with self._lock:
                self._dropped += 1
            return False
        try:
            # Counted before the put, so a flush never sees a step the sender already took
            # as not yet accepted.
            with self._lock:
                self._accepted += 1
            self._queue.put(step, timeout=self.put_timeout)
            return True
        except queue.Full:
            with self._lock:
                self._accepted -= 1
                self._dropped += 1
                first = self._dropped == 1
                self._lock.notify_all()
            if self.overflow == "raise":
                raise QueueFull(
                    f"{self._queue.maxsize} events are waiting to be sent "
                    f"(server unreachable?); the event was not recorded"
                ) from None
            if first:
                logger.warning(
                    "hindsight recorder %s: queue full (%d events waiting); dropping events",
                    self.external_id,
                    self._queue.maxsize,
                )
            return False

    def set_context(self, **context: Any) -> None:
        """Update the context snapshot (subtask, latest_user_input, ...) of later events."""
        self._context = {**self._context, **context}

    def user_input(self, text: str) -> bool:
        self.set_context(latest_user_input=text)
        return self.record_event("user_input", content=text)

    def reasoning(self, text: str) -> bool:
        return self.record_event("llm_reasoning", content=text)

    @contextmanager
    def step(self, tool: str, arguments: Any = None, **fields: Any) -> Iterator[StepHandle]:
        """Time one tool call and record it when the block ends; an exception marks the step
        failed (its type and message become the observation) and is re-raised.

            with recorder.step("http_get", {"url": url}) as call:
                call.observation = fetch(url)
        """
        handle = StepHandle()
        started_at = now_iso()
        began = time.monotonic()
        try:
            yield handle
        except Exception as exc:
            self.record_event(
                "tool_call",
                tool=tool,
                arguments=arguments,
                observation=handle.observation
                if handle.observation is not None
                else (str(exc) or type(exc).__name__),
                is_error=True,
                error_type=handle.error_type or type(exc).__name__,
                started_at=started_at,
                duration_ms=int((time.monotonic() - began) * 1000),
                **fields,
            )
            raise
        self.record_event(
            "tool_call",
            tool=tool,
            arguments=arguments,
            observation=handle.observation,
            is_error=handle.is_error,
            error_type=handle.error_type,
            started_at=started_at,
            duration_ms=int((time.monotonic() - began) * 1000),
            **fields,
        )

    def set_outcome(
        self, outcome: str, *, final_answer: str | None = None, feedback: str | None = None
    ) -> None:
        """The outcome the context manager finishes with when the block ends without error."""
        _check_outcome(outcome)
        self._outcome = {"outcome": outcome, "final_answer": final_answer, "feedback": feedback}

    def finish(
        self,
        outcome: str = "success",
        *,
        final_answer: str | None = None,
        feedback: str | None = None,
        wait: float | None = None,
    ) -> bool:
        """Complete the trajectory once every event before it is stored. Returns at once
        unless `wait` is given (then as `flush(wait)`). A second call is ignored."""
        _check_outcome(outcome)
        with self._lock:
            if self._finish is not None:
                return self.flush(wait) if wait is not None else True
            self._finish = {
                "outcome": outcome,
                "ended_at": now_iso(),
                "final_answer": final_answer or "",
                "feedback": feedback or "",
            }
        try:
            self._queue.put_nowait(_WAKE)
        except queue.Full:
            pass  # the sender is busy with a non-empty queue and checks _finish when it drains
        return self.flush(wait) if wait is not None else True

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the trace is open and every recorded event (and the completion, once
        finished) is stored.
        True when done, False on timeout; raises RecorderError if the server refused the data."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self._drained():
                if self._error is not None:
                    break
                if self._stop.is_set():
                    return False  # stopped: nothing more will be sent
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._lock.wait(remaining)
            if self._error is not None:
                raise RecorderError(
                    f"hindsight recorder {self.external_id} stopped: {self._error}",
                    unsent=self._accepted - self._stored,
                ) from self._error
        return True

    def _drained(self) -> bool:
        return (
            self.trace_id is not None
            and self._stored >= self._accepted
            and (self._finish is None or self._completed)
        )

    @property
    def error(self) -> ApiError | None:
        return self._error

    @property
    def dropped(self) -> int:
        """Events not recorded: the queue was full, or the trajectory had reached the server's
        steps per trajectory (`limits.max_steps`)."""
        return self._dropped + self._over_limit

    @property
    def rejected_steps(self) -> list[StepRejected]:
        """The steps the server refused (or that could not fit in a request even cut), each
        replaced in the trace by a `system` step saying so; the rest was stored."""
        with self._lock:
            return list(self._rejected_steps)

    @property
    def completion_error(self) -> ApiError | None:
        """Why the server refused the completion as finished (its final_answer, feedback or
        ended_at); the trace was then completed with the outcome alone."""
        return self._completion_error

    @property
    def pending(self) -> int:
        """Events recorded but not yet confirmed by the server."""
        return self._accepted - self._stored

    @property
    def is_finishing(self) -> bool:
        """finish() was called (the trace may not be complete on the server yet)."""
        return self._finish is not None

    @property
    def is_complete(self) -> bool:
        return self._completed

    @property
    def spool_path(self) -> Path | None:
        """The spool file the unsent part was written to when the recorder stopped."""
        return self._spool_path

    def __enter__(self) -> TrajectoryRecorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._finish is not None:
            return
        if exc is not None and self._error is None:
            last = traceback.format_exception_only(exc)[-1].strip()
            with suppress(QueueFull):  # never hide the agent's own exception
                self._put(
                    {
                        "kind": "system",
                        "content": f"the agent stopped with an exception: {last}",
                        "is_error": True,
                        "error_type": type(exc).__name__,
                        "started_at": now_iso(),
                        "context": dict(self._context),
                    }
                )
            self.finish("failure", final_answer=self._outcome.get("final_answer"))
        else:
            self.finish(**{"outcome": "success", **{k: v for k, v in self._outcome.items() if v}})

    # ------------------------------------------------------------------ the sender thread

    def _run(self) -> None:
        try:
            self._deliver(self._open)
            with self._lock:
                self._lock.notify_all()
            if self.spool_dir is not None and not self._stop.is_set():
                # The server answers again: a good moment to send what earlier runs spooled.
                # (Not once stopped: a request in flight at stop() may still get through.)
                resend_in_background(self.transport, self.spool_dir, backoff=self.backoff)
            while not self._stop.is_set():
                batch = self._take()
                if batch:
                    self._send_steps(batch)
                    with self._lock:
                        self._stored += len(batch)
                        self._inflight = []
                        self._lock.notify_all()
                elif self._finish is not None and self._queue.empty():
                    self._send_dropped_notice()
                    self._send_completion()
                    with self._lock:
                        self._completed = True
                        self._lock.notify_all()
                    return
        except ApiError as error:
            self._fail(error)
        except _Stopped:
            pass
        finally:
            _live.discard(self)

    def _take(self) -> list[Item]:
        """Up to batch_size steps (and max_batch_bytes, never over the server's body limit),
        indexed in queue order, kept as `_inflight` until acknowledged. Blocks while the queue
        is empty and the recorder is not finished; `stop` wakes it with a _WAKE, so the take
        lock is never held for long."""
        with self._take_lock:
            if self._stop.is_set():
                raise _Stopped
            batch: list[Item] = []
            size = 0
            room = min(self.max_batch_bytes, self.limits.step_bytes)
            block = self._finish is None
            while len(batch) < self.batch_size:
                if self._carry is not None:
                    item, self._carry = self._carry, None
                else:
                    try:
                        event = self._queue.get(block=block and not batch, timeout=None)
                    except queue.Empty:
                        break
                    if isinstance(event, _Wake):
                        if self._stop.is_set():
                            break
                        block = False
                        continue
                    if self._past_step_limit():
                        continue
                    item = self._index(event)
                if batch and size + 1 + len(item[1]) > room:
                    self._carry = item
                    break
                size += len(item[1]) + (1 if batch else 0)
                batch.append(item)
            self._inflight = batch
            return batch

    def _past_step_limit(self) -> bool:
        """True (and the event counted as dropped) once the indexes reach the server's steps
        per trajectory; the last index is kept for the closing notice. Take lock held."""
        if self._next_index < self.limits.max_steps - 1:
            return False
        with self._lock:
            self._accepted -= 1
            self._over_limit += 1
            first = self._over_limit == 1
            self._lock.notify_all()
        if first:
            logger.warning(
                "hindsight recorder %s: the server stores at most %d steps per trajectory; "
                "dropping later events",
                self.external_id,
                self.limits.max_steps,
            )
        return True

    def _index(self, step: dict[str, Any]) -> Item:
        step["index"] = self._next_index
        self._next_index += 1
        encoded = self._encode(step)
        if encoded is None:
            # Not sendable at all: it fails alone, here, and a stand-in keeps its index.
            return self._refuse((step, b""), too_large(step, self.limits.step_bytes))
        return step, encoded

    def _encode(self, step: dict[str, Any]) -> bytes | None:
        """The step as sent: the observation cut at max_observation_chars, then any text cut
        that keeps the step within one request; None if it cannot fit."""
        observation = step.get("observation")
        cap = self.max_observation_chars
        if observation is not None and not isinstance(observation, str):
            text = json.dumps(observation, default=str)
            if len(text) > cap:
                step["observation"] = observation = text
        if isinstance(observation, str) and len(observation) > cap:
            step["observation"] = observation[:cap] + f"\n[... cut by the client at {cap} chars]"
        return fit_step(step, self.limits.step_bytes)

    def _send_steps(self, batch: list[Item]) -> None:
        """Store `batch` (the `_inflight` list: a refused step is replaced in it)."""
        deliver_steps(
            batch,
            send=lambda items: self._deliver(
                partial(self._append, items), give_up_on_500=SUSPECT_500_AFTER
            ),
            probe=self._probe,
            refuse=self._refuse,
        )

    def _refuse(self, item: Item, error: ApiError) -> Item:
        rejected, replacement = stand_in(item, error)
        with self._lock:
            self._rejected_steps.append(rejected)
        logger.warning(
            "hindsight recorder %s: %s; a system step stands in for it",
            self.external_id,
            rejected,
        )
        return replacement

    def _probe(self) -> None:
        """Wait until the server answers a request that stores nothing."""
        self._deliver(partial(server_answers, self.transport))

    def _send_completion(self) -> None:
        assert self._finish is not None
        refusal = deliver_completion(
            self._finish,
            send=lambda body: self._deliver(
                partial(self._complete, body), give_up_on_500=SUSPECT_500_AFTER
            ),
            probe=self._probe,
        )
        if refusal is not None:
            self._completion_error = refusal
            logger.warning(
                "hindsight recorder %s: the server refused the completion (%s); "
                "completed with the outcome %r alone",
                self.external_id,
                refusal,
                self._finish["outcome"],
            )

    def _deliver(self, send: Callable[[], None], *, give_up_on_500: int | None = None) -> None:
        """Call `send` until it succeeds; retryable errors wait and retry, others raise, and
        so does the `give_up_on_500`th 500."""
        attempt = 0
        server_errors = 0
        failing_since: float | None = None
        last_log = 0.0
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                send()
                if failing_since is not None:
                    logger.info(
                        "hindsight recorder %s: server reachable again after %.1fs",
                        self.external_id,
                        time.monotonic() - failing_since,
                    )
                return
            except (ApiError, ConnectionFailed) as error:
                if not is_retryable(error):
                    raise
                if isinstance(error, ApiError) and error.status == 500:
                    server_errors += 1
                    if give_up_on_500 is not None and server_errors >= give_up_on_500:
                        raise
                now = time.monotonic()
                if failing_since is None:
                    failing_since = now
                if now - last_log > 30:
                    logger.warning(
                        "hindsight recorder %s: %s; retrying (%d events waiting)",
                        self.external_id,
                        error,
                        self.pending,
                    )
                    last_log = now
                delay = min(self.backoff.delay(attempt, error), 60.0)
                attempt += 1
                if self._stop.wait(delay):
                    raise _Stopped from None

    def _open(self) -> None:
        answer = self.transport.request("POST", "traces/open", self._header)
        self.trace_id = answer["id"]

    def _append(self, batch: list[Item]) -> None:
        body = steps_body([encoded for _, encoded in batch])
        self.transport.request("POST", f"traces/{self.trace_id}/steps", data=body)

    def _complete(self, body: dict[str, Any]) -> None:
        self.transport.request("POST", f"traces/{self.trace_id}/complete", body)

    def _send_dropped_notice(self) -> None:
        with self._take_lock:
            if self._stop.is_set():
                raise _Stopped
            notice = self._dropped_notice()
            if notice is None:
                return
            self._inflight = [notice]
        self._send_steps(self._inflight)
        with self._lock:
            self._inflight = []

    def _dropped_notice(self) -> Item | None:
        """The closing `system` step counting dropped events; built once (take lock held)."""
        if not (self._dropped or self._over_limit) or self._notice_built:
            return None
        self._notice_built = True
        reasons = []
        if self._dropped:
            reasons.append(f"{self._dropped} events were dropped (queue full)")
        if self._over_limit:
            reasons.append(
                f"{self._over_limit} events were dropped (the server stores at most "
                f"{self.limits.max_steps} steps per trajectory)"
            )
        return self._index(
            {
                "kind": "system",
                "content": "hindsight client: " + "; ".join(reasons),
                "started_at": now_iso(),
                "context": dict(self._context),
            }
        )

    def _fail(self, error: ApiError) -> None:
        with self._lock:
            self._error = error
            unsent = self._accepted - self._stored
            self._lock.notify_all()
        logger.error(
            "hindsight recorder %s stopped: the server refused its data (%s); "
            "%d events not stored; not retrying",
            self.external_id,
            error,
            unsent,
        )
        # Free the memory of what will never be sent.
        self._carry = None
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def stop(self) -> Path | None:
        """Stop the sender without waiting for anything. What the server has not acknowledged
        is written to the spool (unless disabled) and the file's path returned; later events
        are dropped."""
        pending = self.pending
        path = self._halt()
        if path is not None:
            logger.warning(
                "hindsight recorder %s stopped with %d events not stored; spooled to %s",
                self.external_id,
                pending,
                path,
            )
        return path

    def _halt(self) -> Path | None:
        self._stop.set()
        try:
            self._queue.put_nowait(_WAKE)
        except queue.Full:
            pass  # a full queue never blocks the sender's get
        _live.discard(self)
        return self._spool()

    def _spool(self) -> Path | None:
        """Write the unsent part once; a refused trajectory (`error`) is not spooled: the
        server would refuse it again."""
        with self._lock:
            if self._spooled or self._error is not None or self.spool_dir is None:
                return self._spool_path
            self._spooled = True
        unsent = self._unsent()
        if unsent is None:
            return None
        try:
            self._spool_path = spool_write(self.spool_dir, transport=self.transport, **unsent)
        except OSError as error:
            logger.error(
                "hindsight recorder %s: could not write the spool file in %s (%s); %d events lost",
                self.external_id,
                self.spool_dir,
                error,
                len(unsent["steps"]),
            )
        return self._spool_path

    def _unsent(self) -> dict[str, Any] | None:
        """What the server has not acknowledged, in order; None when nothing is missing.
        May include the batch in flight (the server skips steps it already stores)."""
        # The sender lets go of the take lock promptly once stopped; the timeout only guards
        # against a bug turning exit into a hang.
        locked = self._take_lock.acquire(timeout=2.0)
        try:
            steps = [json.loads(encoded) for _, encoded in self._inflight]
            if self._carry is not None:
                steps.append(json.loads(self._carry[1]))
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(item, _Wake) and not self._past_step_limit():
                    steps.append(json.loads(self._index(item)[1]))
            finishing = self._finish is not None and not self._completed
            if finishing:
                notice = self._dropped_notice()
                if notice is not None:
                    steps.append(json.loads(notice[1]))
        finally:
            if locked:
                self._take_lock.release()
        if self.trace_id is not None and not steps and not finishing:
            return None
        # The same JSON the recorder sent (or would have), so a replay matches it exactly.
        header = json.loads(json.dumps(self._header, default=str))
        return {"header": header, "steps": steps, "complete": self._finish if finishing else None}


class _Stopped(Exception):
    pass


def _check_outcome(outcome: str) -> None:
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}")


# ---------------------------------------------------------------------- interpreter exit

_live: weakref.WeakSet[TrajectoryRecorder] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    recorders = list(_live)
    if not recorders:
        return
    deadline = time.monotonic() + max(r.exit_timeout for r in recorders)
    for recorder in recorders:
        if recorder._finish is None and recorder.error is None:
            logger.warning(
                "hindsight recorder %s was not finished; finishing it at exit as %r",
                recorder.external_id,
                recorder._outcome.get("outcome", "unknown"),
            )
            recorder.finish(recorder._outcome.get("outcome", "unknown"))
    for recorder in recorders:
        try:
            done = recorder.flush(max(0.0, deadline - time.monotonic()))
        except RecorderError:
            continue  # already logged when it happened
        if not done:
            pending = recorder.pending
            path = recorder._halt()
            logger.warning(
                "hindsight recorder %s: %d events not sent before exit (server unreachable)%s",
                recorder.external_id,
                pending,
                f"; spooled to {path}" if path else "",
            )
