"""How the recorder's sender gets one request through: it calls it until the server answers.
Connection errors, 5xx, 408 and 429 wait (exponential backoff with jitter, capped at
`backoff.cap` seconds, never over a minute; a 429's Retry-After is honoured) and retry without
limit, logging at most every 30 seconds; any other error is raised, and so is the
`give_up_on_500`th 500 (the request may be refused for its content: see
`hindsight_client.isolation`). `stop()` ends the wait at once with `Stopped`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hindsight_client.errors import ApiError, ConnectionFailed
from hindsight_client.transport import Backoff, is_retryable

logger = logging.getLogger("hindsight_client")

# A request answered 500 this many times in a row may be refused for its content: a batch is
# then split, a step checked against a probe (see hindsight_client.isolation).
SUSPECT_500_AFTER = 3


class Stopped(Exception):
    """The recorder was stopped: nothing more is sent."""


def deliver(
    send: Callable[[], None],
    *,
    stop: threading.Event,
    backoff: Backoff,
    external_id: str,
    pending: Callable[[], int],
    give_up_on_500: int | None = None,
) -> None:
    """Call `send` until it succeeds; retryable errors wait and retry, others raise, and
    so does the `give_up_on_500`th 500. `pending` counts the events waiting, for the log."""
    attempt = 0
    server_errors = 0
    failing_since: float | None = None
    last_log = 0.0
    while True:
        if stop.is_set():
            raise Stopped
        try:
            send()
            if failing_since is not None:
                logger.info(
                    "hindsight recorder %s: server reachable again after %.1fs",
                    external_id,
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
                    external_id,
                    error,
                    pending(),
                )
                last_log = now
            delay = min(backoff.delay(attempt, error), 60.0)
            attempt += 1
            if stop.wait(delay):
                raise Stopped from None
