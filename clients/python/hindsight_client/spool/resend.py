"""A resend pass: the spooled files of one client, oldest first, each claimed, replayed and then
deleted, kept for a later pass, or moved aside (`*.rejected`, `*.bad`) as the server's answer
says (see the `hindsight_client.spool` docstring for which answer leads where), reported as a
`ResendResult`; and `resend_in_background`, the pass a recorder starts once the server
answers.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_client.errors import ApiError, ConnectionFailed, StepRejected
from hindsight_client.spool.claim import Busy, Claim
from hindsight_client.spool.files import (
    Corrupt,
    Spooled,
    oldest_first,
    parse,
    remove_stale_temporaries,
    resolve_spool_dir,
    target_id,
)
from hindsight_client.spool.replay import Replayer
from hindsight_client.transport import Backoff, Transport

logger = logging.getLogger("hindsight_client")

# The server (not the file) is the problem: stop the pass, count nothing.
SERVER_BUSY = frozenset({401, 403, 408, 429, 502, 503, 504})


@dataclass
class ResendResult:
    """What one resend pass did.

    `sent`: external ids now fully stored on the server (their files are deleted).
    `pending`: spool files still waiting (server unreachable, a refused key, a failure of
    their own counted towards `max_failures`, or not tried because the pass stopped at the
    first error of the server's). `locked`: files another process was
    sending. `rejected` / `corrupt`: where files the server refused for good (or that failed
    `max_failures` passes) / that could not be read were moved. `rejected_steps`: steps of
    the files sent that the server refused alone (a `system` step stands in for each).
    `error`: what stopped the pass early, if anything."""

    sent: list[str] = field(default_factory=list)
    pending: list[Path] = field(default_factory=list)
    locked: list[Path] = field(default_factory=list)
    rejected: list[Path] = field(default_factory=list)
    corrupt: list[Path] = field(default_factory=list)
    rejected_steps: list[StepRejected] = field(default_factory=list)
    error: Exception | None = None

    @property
    def done(self) -> bool:
        """Nothing of this client's is left in the spool (set-aside files aside)."""
        return not self.pending and not self.locked


def resend_spooled(
    client: Any,
    *,
    spool_dir: str | os.PathLike[str] | bool | None = None,
    any_key: bool = False,
    batch_size: int = 20,
    max_batch_bytes: int = 1_000_000,
    attempts: int = 3,
    backoff: Backoff | None = None,
    max_retry_wait: float = 5.0,
    max_failures: int = 5,
) -> ResendResult:
    """Send the spooled trajectories of `client` (a HindsightClient or its Transport), oldest
    first, and delete each file once the server acknowledged all of it.

    Only files recorded with this client's base URL and key are sent; `any_key=True` sends
    every file recorded for this base URL with this client's key (e.g. after a key rotation).
    Each call is retried `attempts` times on connection errors, 5xx and 429; when the server
    stays unreachable the pass stops and the rest is reported pending. A file failing
    `max_failures` passes while the server answers other requests is set aside as rejected.
    Safe to run from several processes at once and to repeat: see `hindsight_client.spool`."""
    transport: Transport = getattr(client, "transport", client)
    directory = resolve_spool_dir(spool_dir)
    result = ResendResult()
    if directory is None or not directory.is_dir():
        return result
    remove_stale_temporaries(directory)
    sender = Replayer(
        transport,
        batch_size=max(1, batch_size),
        max_batch_bytes=max_batch_bytes,
        attempts=max(1, attempts),
        backoff=backoff or Backoff(base=0.2, cap=2.0),
        max_retry_wait=max_retry_wait,
    )
    pattern = "*.json" if any_key else f"{target_id(transport)}-*.json"
    for path in oldest_first(directory.glob(pattern)):
        if result.error is not None:
            result.pending.append(path)
            continue
        try:
            claim = Claim.take(path)
        except Busy:
            result.locked.append(path)
            continue
        except OSError as error:
            logger.warning("hindsight spool: cannot open %s: %s", path, error)
            result.pending.append(path)
            continue
        if claim is None:
            continue  # sent and deleted by another process meanwhile
        try:
            _resend_one(claim, sender, transport, any_key, result, max_failures)
        except OSError as error:  # deleting or moving the file failed: it stays for next time
            logger.warning("hindsight spool: cannot update %s: %s", path, error)
            result.pending.append(path)
        finally:
            claim.release()
    if result.sent:
        logger.info(
            "hindsight spool: resent %d spooled trajectories from %s", len(result.sent), directory
        )
    return result


def _resend_one(
    claim: Claim,
    sender: Replayer,
    transport: Transport,
    any_key: bool,
    result: ResendResult,
    max_failures: int,
) -> None:
    path = claim.path
    try:
        spooled = parse(claim.data)
    except Corrupt as problem:
        aside = claim.set_aside(".bad")
        logger.warning(
            "hindsight spool: %s cannot be read (%s); moved aside to %s", path, problem, aside
        )
        result.corrupt.append(aside)
        return
    if any_key and spooled.base_url != transport.base_url:
        return  # another server's trajectory: not ours to send
    try:
        sender.send(spooled)
    except (ApiError, ConnectionFailed) as error:
        if isinstance(error, ConnectionFailed) or error.status in SERVER_BUSY:
            _keep(claim, spooled, sender, result, error)
        elif error.status == 404 or error.status >= 500:
            # The file's fault (its open or its completion refused) or the server's: the
            # server answering a request that stores nothing tells which.
            if not sender.server_answers():
                _keep(claim, spooled, sender, result, error)
            elif spooled.failures + 1 >= max_failures:
                reason = f"failed {spooled.failures + 1} passes; the last with {error}"
                _reject(claim, spooled, result, reason)
            else:
                failures = spooled.failures + 1
                claim.rewrite(spooled.encode(failures=failures, last_error=str(error)))
                result.pending.append(path)
                logger.warning(
                    "hindsight spool: trajectory %s failed (%s; %d of %d passes); kept for later",
                    spooled.external_id,
                    error,
                    failures,
                    max_failures,
                )
        else:
            _reject(claim, spooled, result, f"refused for good: {error}")
    else:
        claim.remove()
        result.sent.append(spooled.external_id)
    finally:
        result.rejected_steps += sender.rejected


def _keep(
    claim: Claim, spooled: Spooled, sender: Replayer, result: ResendResult, error: Exception
) -> None:
    """The server is the problem: keep the file (with what this pass changed), stop the pass."""
    if sender.changed:
        claim.rewrite(spooled.encode())
    result.pending.append(claim.path)
    result.error = error


def _reject(claim: Claim, spooled: Spooled, result: ResendResult, reason: str) -> None:
    note = {"at": time.time(), "reason": reason}
    aside = claim.set_aside(".rejected", spooled.encode(rejected=note))
    logger.warning(
        "hindsight spool: the server refused trajectory %s (%s); moved aside to %s",
        spooled.external_id,
        reason,
        aside,
    )
    result.rejected.append(aside)


# ---------------------------------------------------------------------- in the background

_resending: set[tuple[str, str]] = set()
_resending_lock = threading.Lock()


def resend_in_background(
    transport: Transport, directory: Path, *, backoff: Backoff | None = None
) -> threading.Thread | None:
    """Start one resend pass in a daemon thread if this client has spooled files and no pass
    for them is running in this process; never raises."""
    key = (str(directory), target_id(transport))
    try:
        if not any(directory.glob(f"{key[1]}-*.json")):
            return None
    except OSError:
        return None
    with _resending_lock:
        if key in _resending:
            return None
        _resending.add(key)

    def run() -> None:
        try:
            resend_spooled(transport, spool_dir=directory, backoff=backoff)
        except Exception:
            logger.exception("hindsight spool: resending from %s failed", directory)
        finally:
            with _resending_lock:
                _resending.discard(key)

    thread = threading.Thread(target=run, name="hindsight-spool-resend", daemon=True)
    thread.start()
    return thread
