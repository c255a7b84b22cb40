"""`TrajectoryRecorder`, the agent's side of a recorder: `record_event` (and its shorthands
`user_input`, `reasoning`, the timed `step()`) builds a step and puts it on the bounded queue
without waiting for the server, dropping it (or raising `QueueFull`) when the queue stays full
for `put_timeout` seconds; `finish` / the context manager set the outcome; `flush` waits for
the sender (`hindsight_client.recorder.sender`); `stop` halts it and spools the unsent part;
the properties report what was stored, dropped and refused. Every recorder whose sender still
runs is finished and flushed at interpreter exit."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from hindsight_client.errors import ApiError, QueueFull, RecorderError, StepRejected
from hindsight_client.recorder.at_exit import live
from hindsight_client.recorder.sender import WAKE, RecorderSender
from hindsight_client.recorder.steps import (
    STEP_KINDS,
    StepHandle,
    check_outcome,
    exception_step,
    now_iso,
    timed_call,
)
from hindsight_client.transport import Backoff, Transport

logger = logging.getLogger("hindsight_client")

Overflow = Literal["drop", "raise"]


class TrajectoryRecorder(RecorderSender):
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
        header: dict[str, Any] = {
            "external_id": external_id or str(uuid.uuid4()),
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
        super().__init__(
            transport,
            header=header,
            context={"task_goal": task},
            max_queue=max_queue,
            batch_size=batch_size,
            max_batch_bytes=max_batch_bytes,
            max_observation_chars=max_observation_chars,
            backoff=backoff or Backoff(base=0.1, cap=2.0),
            spool_dir=spool_dir,
        )
        self.agent = agent
        self.task = task
        self.put_timeout = put_timeout
        self.overflow = overflow
        self.exit_timeout = exit_timeout
        self._outcome: dict[str, Any] = {}

        live.add(self)
        self._thread = threading.Thread(
            target=self._run, name=f"hindsight-recorder-{self.external_id[:8]}", daemon=True
        )
        self._thread.start()

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

        def record(**timed: Any) -> None:
            self.record_event("tool_call", tool=tool, arguments=arguments, **timed, **fields)

        with timed_call(record) as handle:
            yield handle

    def set_outcome(
        self, outcome: str, *, final_answer: str | None = None, feedback: str | None = None
    ) -> None:
        """The outcome the context manager finishes with when the block ends without error."""
        check_outcome(outcome)
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
        check_outcome(outcome)
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
            self._queue.put_nowait(WAKE)
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
    def is_finishing(self) -> bool:
        """finish() was called (the trace may not be complete on the server yet)."""
        return self._finish is not None

    @property
    def is_complete(self) -> bool:
        return self._completed

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
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            with suppress(QueueFull):  # never hide the agent's own exception
                self._put(exception_step(last, type(exc).__name__, self._context))
            self.finish("failure", final_answer=self._outcome.get("final_answer"))
        else:
            self.finish(**{"outcome": "success", **{k: v for k, v in self._outcome.items() if v}})

    def _run(self) -> None:
        # Once its sender has ended, a recorder has nothing left to flush at exit.
        try:
            super()._run()
        finally:
            live.discard(self)

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
            self._queue.put_nowait(WAKE)
        except queue.Full:
            pass  # a full queue never blocks the sender's get
        live.discard(self)
        return self._spool()
