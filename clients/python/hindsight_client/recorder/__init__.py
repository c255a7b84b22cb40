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

The package: `steps` (building and cutting steps, `StepHandle`), `delivery` (retrying one
request), `sender` (the background thread and the state it shares), `trajectory` (the agent's
side: `TrajectoryRecorder`), `at_exit` (finishing running recorders at interpreter exit).
"""

from hindsight_client.recorder.delivery import SUSPECT_500_AFTER
from hindsight_client.recorder.steps import OUTCOMES, STEP_KINDS, UTC, StepHandle, now_iso
from hindsight_client.recorder.trajectory import Overflow, TrajectoryRecorder

__all__ = [
    "OUTCOMES",
    "STEP_KINDS",
    "SUSPECT_500_AFTER",
    "UTC",
    "Overflow",
    "StepHandle",
    "TrajectoryRecorder",
    "now_iso",
]
