"""The recorder's sender: the state a recorder shares with its one background thread, and that
thread. It opens the trace, takes the queued events in order, gives each its index, packs them
into batches within `batch_size`, `max_batch_bytes` and the server's body limit, and sends each
batch until the server confirms it (`hindsight_client.recorder.delivery`); a step the server
refuses is isolated and replaced by a `system` step (`hindsight_client.isolation`); once
`finish` was called and the queue is empty it sends the closing notice of dropped events and
the completion. A permanent refusal stops it (`_fail`). `_unsent` is what a stopped recorder
spools. `TrajectoryRecorder` (the agent's side) builds on it."""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from hindsight_client.errors import ApiError, StepRejected
from hindsight_client.isolation import (
    Item,
    deliver_completion,
    deliver_steps,
    server_answers,
    stand_in,
    too_large,
)
from hindsight_client.limits import steps_body
from hindsight_client.recorder.delivery import SUSPECT_500_AFTER, Stopped, deliver
from hindsight_client.recorder.steps import dropped_notice_step, encode_step
from hindsight_client.spool import resend_in_background, resolve_spool_dir, spool_write
from hindsight_client.transport import Backoff, Transport

logger = logging.getLogger("hindsight_client")


class Wake:
    """Put on the queue by `finish` so a sender blocked on an empty queue looks again."""


WAKE = Wake()


class RecorderSender:
    def __init__(
        self,
        transport: Transport,
        *,
        header: dict[str, Any],
        context: dict[str, Any],
        max_queue: int,
        batch_size: int,
        max_batch_bytes: int,
        max_observation_chars: int,
        backoff: Backoff,
        spool_dir: str | os.PathLike[str] | bool | None,
    ) -> None:
        self.transport = transport
        self.external_id: str = header["external_id"]
        self._header = header
        self.batch_size = max(1, batch_size)
        self.max_batch_bytes = max_batch_bytes
        self.max_observation_chars = max_observation_chars
        self.backoff = backoff
        self.spool_dir = resolve_spool_dir(spool_dir)
        self.limits = transport.limits

        self._queue: queue.Queue[dict[str, Any] | Wake] = queue.Queue(maxsize=max(1, max_queue))
        self._context = context
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

    @property
    def pending(self) -> int:
        """Events recorded but not yet confirmed by the server."""
        return self._accepted - self._stored

    @property
    def spool_path(self) -> Path | None:
        """The spool file the unsent part was written to when the recorder stopped."""
        return self._spool_path

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
        except Stopped:
            pass

    def _take(self) -> list[Item]:
        """Up to batch_size steps (and max_batch_bytes, never over the server's body limit),
        indexed in queue order, kept as `_inflight` until acknowledged. Blocks while the queue
        is empty and the recorder is not finished; `stop` wakes it with a WAKE, so the take
        lock is never held for long."""
        with self._take_lock:
            if self._stop.is_set():
                raise Stopped
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
                    if isinstance(event, Wake):
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
        encoded = encode_step(
            step,
            max_observation_chars=self.max_observation_chars,
            step_bytes=self.limits.step_bytes,
        )
        if encoded is None:
            # Not sendable at all: it fails alone, here, and a stand-in keeps its index.
            return self._refuse((step, b""), too_large(step, self.limits.step_bytes))
        return step, encoded

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
        deliver(
            send,
            stop=self._stop,
            backoff=self.backoff,
            external_id=self.external_id,
            pending=lambda: self.pending,
            give_up_on_500=give_up_on_500,
        )

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
                raise Stopped
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
        return self._index(
            dropped_notice_step(
                dropped=self._dropped,
                over_limit=self._over_limit,
                max_steps=self.limits.max_steps,
                context=self._context,
            )
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
                if not isinstance(item, Wake) and not self._past_step_limit():
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
