"""Sends one spooled trajectory as a recorder would: it opens the trace (an identical open is
a no-op and gives the trace id), sends the steps in batches within the server's limits (a step
too large for a request has its text cut) and completes it; a step the server refuses for its
content fails alone and a `system` step takes its index (`hindsight_client.isolation`). Each
call is retried a few times (`call_with_retries`); what the server still refuses is raised for
the resend pass to judge. `changed` tells the pass to rewrite the file with what was cut or
replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from hindsight_client.errors import ApiError, ConnectionFailed, StepRejected
from hindsight_client.isolation import (
    Item,
    deliver_completion,
    deliver_steps,
    server_answers,
    stand_in,
    too_large,
)
from hindsight_client.limits import dumps, fit_step, steps_body
from hindsight_client.spool.files import Spooled
from hindsight_client.transport import Backoff, Transport, call_with_retries

logger = logging.getLogger("hindsight_client")


class Replayer:
    def __init__(
        self,
        transport: Transport,
        *,
        batch_size: int,
        max_batch_bytes: int,
        attempts: int,
        backoff: Backoff,
        max_retry_wait: float,
    ) -> None:
        self.transport = transport
        self.batch_size = batch_size
        self.max_batch_bytes = max_batch_bytes
        self.attempts = attempts
        self.backoff = backoff
        self.max_retry_wait = max_retry_wait
        self.rejected: list[StepRejected] = []  # of the file being sent
        self.changed = False  # its steps were cut or replaced
        self._external_id = ""

    def send(self, spooled: Spooled) -> None:
        self.rejected, self.changed = [], False
        self._external_id = spooled.external_id
        # Always open first, even if the recorder had: the answer gives the trace id, and an
        # identical open is a no-op.
        trace_id = self._call("traces/open", body=spooled.header)["id"]
        steps = spooled.steps
        for positions, items in self._batches(steps):
            deliver_steps(
                items,
                send=lambda part: self._call(
                    f"traces/{trace_id}/steps", data=steps_body([e for _, e in part])
                ),
                probe=self._probe,
                refuse=self._refuse,
            )
            # One position per item (zip(strict=True) needs Python 3.10).
            assert len(positions) == len(items)
            for position, (step, _) in zip(positions, items):
                if steps[position] is not step:
                    steps[position] = step
                    self.changed = True
        if spooled.complete is not None:
            refusal = deliver_completion(
                spooled.complete,
                send=lambda body: self._call(f"traces/{trace_id}/complete", body=body),
                probe=self._probe,
            )
            if refusal is not None:
                logger.warning(
                    "hindsight spool: trajectory %s: the server refused its completion (%s); "
                    "completed with the outcome alone",
                    spooled.external_id,
                    refusal,
                )

    def _batches(self, steps: list[dict[str, Any]]) -> Iterator[tuple[list[int], list[Item]]]:
        """(positions in `steps`, steps with their encodings), each batch one request."""
        budget = self.transport.limits.step_bytes
        room = min(self.max_batch_bytes, budget)
        positions: list[int] = []
        batch: list[Item] = []
        size = 0
        for position, step in enumerate(steps):
            item = self._fit(step, budget)
            if batch and (len(batch) >= self.batch_size or size + 1 + len(item[1]) > room):
                yield positions, batch
                positions, batch, size = [], [], 0
            size += len(item[1]) + (1 if batch else 0)
            positions.append(position)
            batch.append(item)
        if batch:
            yield positions, batch

    def _fit(self, step: dict[str, Any], budget: int) -> Item:
        """A step spooled by an older client (or with other limits) may be too large."""
        encoded = dumps(step).encode()
        if len(encoded) <= budget:
            return step, encoded
        self.changed = True
        fitted = fit_step(step, budget)
        if fitted is None:
            return self._refuse((step, b""), too_large(step, budget))
        return step, fitted

    def _refuse(self, item: Item, error: ApiError) -> Item:
        rejected, replacement = stand_in(item, error)
        self.rejected.append(rejected)
        logger.warning(
            "hindsight spool: trajectory %s: %s; a system step stands in for it",
            self._external_id,
            rejected,
        )
        return replacement

    def _probe(self) -> None:
        call_with_retries(
            lambda: server_answers(self.transport),
            attempts=self.attempts,
            backoff=self.backoff,
            max_wait=self.max_retry_wait,
        )

    def server_answers(self) -> bool:
        try:
            self._probe()
        except (ApiError, ConnectionFailed):
            return False
        return True

    def _call(self, path: str, *, body: Any = None, data: bytes | None = None) -> Any:
        return call_with_retries(
            lambda: self.transport.request("POST", path, body, data=data),
            attempts=self.attempts,
            backoff=self.backoff,
            max_wait=self.max_retry_wait,
        )
