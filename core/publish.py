"""Publishing tasks to the broker: the one way every part of the site does it, bounded in time.

Everything is sent by task name (no import of the task's module, so services never import
their app's tasks), after the transaction that made the work commits (`tasks_publish_on_commit`)
or at once from a task or a sweep (`tasks_publish`).

Requests (ingest's hand-over, a relabel, a merge) publish work, and they must not wait on a
broker that is down or hangs (a frozen Redis answered nothing for 5 s, the workers' socket
timeout, on every ingest). So publishing uses its own connection whose socket waits at most
PUBLISH_SOCKET_TIMEOUT, with the transport's retry (one more try, 0.2 s later): well under a
second in all. Nothing is lost when it gives up: what was not sent stays due in the database
(a `pending` trace, a due dedup check, a relabel not yet derived) and beat's sweeps send it.

That connection is kept for the next publish of the same thread and process (opening one and
declaring the queue again cost ~5 ms of web CPU per ingest request). A kept connection that
fails at once (Redis restarted: the old socket is closed) is replaced and the publish tried
again on a new one; one that fails by timing out is dropped without a second try, so a frozen
broker still holds a request up once, not twice.
"""

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)

PUBLISH_SOCKET_TIMEOUT = 0.3
# A kept connection that failed faster than this was closed, not slow: one more try, new socket.
_STALE_FAILURE_SECONDS = 0.1

_kept = threading.local()


def _publisher(app) -> tuple[Any, bool]:
    """This thread's producer (on a kept connection, made on first use and in a forked child)
    and whether the connection was kept from an earlier publish."""
    kept = getattr(_kept, "publisher", None)
    if kept is not None and kept[0] == os.getpid():
        return kept[2], True
    options = {
        **app.conf.broker_transport_options,
        "socket_timeout": PUBLISH_SOCKET_TIMEOUT,
        "socket_connect_timeout": PUBLISH_SOCKET_TIMEOUT,
    }
    connection = app.connection_for_write(transport_options=options)
    producer = app.amqp.Producer(connection)
    _kept.publisher = (os.getpid(), connection, producer)
    return producer, False


def _publisher_drop() -> None:
    kept, _kept.publisher = getattr(_kept, "publisher", None), None
    if kept is not None and kept[0] == os.getpid():
        try:
            kept[1].release()
        except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone
            pass


def tasks_publish(name: str, calls: Iterable[Sequence[Any]]) -> int:
    """Send task `name` once per argument tuple in `calls`, in order; returns how many were
    sent (it stops at the first failure, logged, and never raises)."""
    from celery import current_app as app

    calls = list(calls)
    sent = 0
    while True:
        began = time.monotonic()
        kept = False
        try:
            producer, kept = _publisher(app)
            for args in calls[sent:]:
                app.send_task(name, args=tuple(args), producer=producer, retry=False)
                sent += 1
            return sent
        except Exception:  # noqa: BLE001 - any broker failure: the work stays due, beat resends
            _publisher_drop()
            if kept and time.monotonic() - began < _STALE_FAILURE_SECONDS:
                continue  # the kept socket was closed under it: once more on a new connection
            logger.warning(
                "broker unreachable: %s sent %d of %d; the rest stays due for the sweep",
                name, sent, len(calls), exc_info=True,
            )  # fmt: skip
            return sent


def tasks_publish_on_commit(name: str, calls: Iterable[Sequence[Any]]) -> None:
    """`tasks_publish` once the current transaction commits (at once outside one): work is
    never sent for rows that were rolled back, and a broker failure never undoes the commit."""
    calls = [tuple(args) for args in calls]
    if calls:
        transaction.on_commit(lambda: tasks_publish(name, calls), robust=True)


# The broker's lists (kombu's Redis transport): the default queue, its priority levels, and
# the messages workers took but did not acknowledge yet (running, or held for a retry's
# countdown: acks_late).
_QUEUE = "celery"
_QUEUE_KEYS = [_QUEUE] + [f"{_QUEUE}\x06\x16{priority}" for priority in (3, 6, 9)]
_UNACKED_KEY = "unacked"


def tasks_waiting(names: set[str], *, limit: int = 10_000) -> list[tuple[str, list]] | None:
    """(name, args) of every message of tasks `names` the broker holds: in the queue, or taken
    by a worker and not acknowledged yet. None when that cannot be known: the broker does not
    answer, or holds more than `limit` messages (a backlog that long is not read each sweep)."""
    import base64
    import json

    import redis
    from django.conf import settings

    try:
        client = redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        with client.pipeline(transaction=False) as pipe:
            for key in _QUEUE_KEYS:
                pipe.llen(key)
            pipe.hlen(_UNACKED_KEY)
            if sum(pipe.execute()) > limit:
                return None
            for key in _QUEUE_KEYS:
                pipe.lrange(key, 0, -1)
            pipe.hvals(_UNACKED_KEY)
            *queued, unacked = pipe.execute()
    except redis.RedisError:
        logger.warning("broker unreachable: its waiting tasks are unknown", exc_info=True)
        return None
    found = []
    for raw, is_unacked in [(m, False) for q in queued for m in q] + [(m, True) for m in unacked]:
        try:
            message = json.loads(raw)
            if is_unacked:
                message = message[0]  # [message, exchange, routing key]
            name = message["headers"]["task"]
            if name not in names:
                continue
            body = message["body"]
            if message.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            found.append((name, json.loads(body)[0]))
        except (ValueError, KeyError, TypeError, IndexError):
            continue  # another kind of message: not one of ours
    return found
