"""Steps and completions that the server refuses for their content fail alone.

A batch of steps the server refuses as a whole (400, 413, 422, or a 500 that outlasts the
retries) is split in halves and each half sent again, down to the one step at fault. That step
is replaced, at its index (the server wants indexes without gaps), by a `system` step saying
what was refused and why, so the steps after it are stored and the trace completes.

A 500 may be the server's (its database is down) rather than the step's: before a step is
given up for a 500, the server must answer a request without it (`probe`), and the step gets
one more round of tries. A completion refused for its text (`final_answer`, `feedback`,
`ended_at`) is sent again with its outcome alone.

Used by the recorder (unlimited retries) and by the spool's resend (a few tries per call).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from hindsight_client.errors import ApiError, RequestTooLarge, StepRejected
from hindsight_client.limits import dumps
from hindsight_client.transport import Transport

T = TypeVar("T")
Item = tuple[dict[str, Any], bytes]  # a step and its encoding

# What a server answers a body it refuses for its content.
REFUSED = frozenset({400, 413, 422, 500})
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def deliver_steps(
    items: list[Item],
    *,
    send: Callable[[list[Item]], None],
    probe: Callable[[], None],
    refuse: Callable[[Item, ApiError], Item],
) -> None:
    """Store `items` with `send` (which retries what is transient and raises the rest). A step
    the server refuses on its own is replaced in `items` by `refuse(item, error)`'s stand-in
    (before it is sent, so a caller's copy of `items` never holds a refused step the server
    has replaced). Errors that are not about the content (401, 404, 409, ...) are raised."""
    _deliver_range(items, 0, len(items), send, probe, refuse)


def _deliver_range(
    items: list[Item],
    lo: int,
    hi: int,
    send: Callable[[list[Item]], None],
    probe: Callable[[], None],
    refuse: Callable[[Item, ApiError], Item],
) -> None:
    failure = _refusal(send, items[lo:hi])
    if failure is None:
        return
    if hi - lo > 1:
        middle = (lo + hi) // 2
        _deliver_range(items, lo, middle, send, probe, refuse)
        _deliver_range(items, middle, hi, send, probe, refuse)
        return
    if failure.status == 500:
        probe()
        failure = _refusal(send, items[lo:hi])
        if failure is None:
            return
    items[lo] = refuse(items[lo], failure)
    send_surely(send, items[lo:hi], probe)


def deliver_completion(
    complete: dict[str, Any],
    *,
    send: Callable[[dict[str, Any]], None],
    probe: Callable[[], None],
) -> ApiError | None:
    """Complete with `complete`, or with its outcome alone if the server refuses the rest;
    returns that refusal (None when completed as sent)."""
    failure = _refusal(send, complete)
    if failure is not None and failure.status == 500:
        probe()
        failure = _refusal(send, complete)
    if failure is not None:
        send_surely(send, {"outcome": complete["outcome"]}, probe)
    return failure


def _refusal(  # noqa: UP047 - vendored into agents on Python < 3.12
    send: Callable[[T], None], payload: T
) -> ApiError | None:
    """None when sent; the error when the server refused the content; raises anything else."""
    try:
        send(payload)
    except ApiError as error:
        if error.status not in REFUSED:
            raise
        return error
    return None


def send_surely(  # noqa: UP047 - vendored into agents on Python < 3.12
    send: Callable[[T], None], payload: T, probe: Callable[[], None], rounds: int = 3
) -> None:
    """Send what cannot be wrong (a stand-in the client wrote): a 500 is the server's, so wait
    for it to answer and send again, a few rounds."""
    for round_ in range(rounds):
        try:
            send(payload)
            return
        except ApiError as error:
            if error.status != 500 or round_ == rounds - 1:
                raise
            probe()


def server_answers(transport: Transport) -> None:
    """Return once the server (and its database) answered a request that stores nothing;
    raise ConnectionFailed or the transient ApiError otherwise. Any decided answer counts, a
    403 too (a key without the scope still shows the server is up)."""
    try:
        transport.request("GET", "traces?limit=1")
    except ApiError as error:
        if error.is_transient:
            raise


def stand_in(item: Item, error: ApiError) -> tuple[StepRejected, Item]:
    """What a refused step becomes: the StepRejected to report, and the `system` step that
    takes its index in the trace."""
    step = item[0]
    rejected = StepRejected(
        index=int(step["index"]),
        kind=printable(str(step.get("kind", "")))[:50],
        tool=printable(str(step.get("tool") or ""))[:200],
        error=error,
    )
    text = printable(str(rejected))
    if len(text) > 2000:
        text = text[:1997] + "..."
    content = f"hindsight client: {text}"
    replacement = {"index": rejected.index, "kind": "system", "content": content}
    return rejected, (replacement, dumps(replacement).encode())


def too_large(step: dict[str, Any], budget: int) -> RequestTooLarge:
    """The client's own 413 for a step that cannot fit in one request even cut."""
    size = len(dumps(step))
    return RequestTooLarge(
        413,
        f"step {step.get('index')} is {size} bytes even with its text cut; "
        f"a request holds at most {budget} bytes of steps",
        client_side=True,
    )


def printable(text: str) -> str:
    """`text` without what the server cannot store or a log shows badly."""
    return _UNPRINTABLE.sub("?", text)
