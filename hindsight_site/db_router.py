"""Reads from a PostgreSQL streaming replica (DATABASE_REPLICA_URL), on the read paths that ask.

Only two kinds of read go to the replica, and only while it answers:

* recall's candidate query, which asks with the hint `replica=True`
  (`router.db_for_read(Experience, replica=True)`: experiences needs no import from here);
* the ORM reads of a dashboard page requested with GET / HEAD, which
  `hindsight_site.replica_middleware` marks for this request (a ContextVar, so nothing leaks
  into the next request or another thread).

Everything else reads the primary: the API, the worker, beat, commands, any read inside
`transaction.atomic` (it must see the transaction's own writes and its locks), any read after
the request wrote through the ORM, and the session and auth tables (who is asking is never read
from a lagging copy). Every write and every migration goes to the primary.

A replica that cannot be reached is left alone for RETRY_SECONDS (per process) and its reads go
to the primary meanwhile: a request never fails because of the replica. Its connection is
checked once per request (CONN_HEALTH_CHECKS) before the first read is sent to it, so a replica
that went away since the last request is noticed before any query; one that dies in the middle
of a request fails that request like any database outage (503, see hindsight_site.outage).
"""

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

logger = logging.getLogger(__name__)

REPLICA = "replica"
# Passed by a read path that may use the replica whatever the request: recall.
REPLICA_HINT = "replica"
# Read from the primary always: sessions and users decide who is asking and what they may do.
PRIMARY_ONLY_APPS = frozenset({"sessions", "auth"})
# An unreachable replica is tried again after this long (one failed connect per process each time).
RETRY_SECONDS = 5.0


@dataclass
class RequestReads:
    """Whether the current request's ORM reads may go to the replica."""

    replica: bool = False


_reads: ContextVar[RequestReads | None] = ContextVar("hindsight_request_reads", default=None)
_down_until = 0.0


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


@contextmanager
def request_reads() -> Iterator[RequestReads]:
    """The read state of one request: primary until `allow_replica_reads()` says otherwise."""
    state = RequestReads()
    token = _reads.set(state)
    try:
        yield state
    finally:
        _reads.reset(token)


def allow_replica_reads() -> None:
    """Let the current request's ORM reads use the replica (no-op outside `request_reads`)."""
    state = _reads.get()
    if state is not None:
        state.replica = True


def read_database() -> str:
    """The alias for a read that may use the replica: the replica when it is configured and
    answers and no transaction is open on the primary, else the primary."""
    global _down_until
    if not replica_configured() or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    if time.monotonic() < _down_until:
        return DEFAULT_DB_ALIAS
    replica = connections[REPLICA]
    try:
        # Once per request (Django resets the flag when a request starts): a connection the
        # replica dropped since the last request is closed here and opened again.
        replica.close_if_health_check_failed()
        replica.ensure_connection()
    except DatabaseError as error:
        _down_until = time.monotonic() + RETRY_SECONDS
        logger.warning(
            "read replica unreachable, reading the primary for %.0f s: %s", RETRY_SECONDS, error
        )
        return DEFAULT_DB_ALIAS
    return REPLICA


class ReplicaRouter:
    """DATABASE_ROUTERS when DATABASE_REPLICA_URL is set (see the module docstring)."""

    def db_for_read(self, model, **hints) -> str:
        # Always an alias, never None: None would let Django follow an instance hint to the
        # replica on a read path that must see the primary.
        if model._meta.app_label in PRIMARY_ONLY_APPS:
            return DEFAULT_DB_ALIAS
        state = _reads.get()
        if hints.get(REPLICA_HINT) or (state is not None and state.replica):
            return read_database()
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints) -> str:
        # A request that writes reads its own writes from here on.
        state = _reads.get()
        if state is not None:
            state.replica = False
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # one database, two copies of it

    def allow_migrate(self, db: str, app_label: str, model_name=None, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS
