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
"""

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)

PUBLISH_SOCKET_TIMEOUT = 0.3


def tasks_publish(name: str, calls: Iterable[Sequence[Any]]) -> int:
    """Send task `name` once per argument tuple in `calls`, in order; returns how many were
    sent (it stops at the first failure, logged, and never raises)."""
    from celery import current_app as app

    options = {
        **app.conf.broker_transport_options,
        "socket_timeout": PUBLISH_SOCKET_TIMEOUT,
        "socket_connect_timeout": PUBLISH_SOCKET_TIMEOUT,
    }
    calls = list(calls)
    sent = 0
    try:
        with app.connection_for_write(transport_options=options) as connection:
            producer = app.amqp.Producer(connection)
            for args in calls:
                app.send_task(name, args=tuple(args), producer=producer, retry=False)
                sent += 1
    except Exception:  # noqa: BLE001 - any broker failure: the work stays due, beat resends
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
