"""At interpreter exit, every recorder still running is finished (outcome "unknown" unless one
was set) and flushed, waiting at most `exit_timeout` seconds in all; what is still unsent then
is spooled. `live` holds the running recorders: a recorder adds itself when it starts and
leaves when its sender ends or it is stopped."""

from __future__ import annotations

import atexit
import logging
import time
import weakref
from typing import TYPE_CHECKING

from hindsight_client.errors import RecorderError

if TYPE_CHECKING:
    from hindsight_client.recorder.trajectory import TrajectoryRecorder

logger = logging.getLogger("hindsight_client")

live: weakref.WeakSet[TrajectoryRecorder] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    recorders = list(live)
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
