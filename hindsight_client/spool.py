"""The durable spool: what a recorder could not deliver before it stopped, kept on disk and
resent later, so a trajectory survives a server that stays down past the agent's exit.

Where: `spool_dir=` (recorder or client) when given; else `$HINDSIGHT_SPOOL_DIR`; else the
user's cache dir (`$XDG_CACHE_HOME` or `~/.cache` + `hindsight/spool`; `~/Library/Caches` on
macOS, `%LOCALAPPDATA%` on Windows). `spool_dir=False` turns spooling off. The directory is
created 0700 and every file 0600: trajectories may hold anything the agent saw.

One JSON file per trajectory, `<target>-<external id>-<hash>.json`, where `target` is a hash
of the base URL and the API key (never the key itself): a client only resends what was
recorded with its own URL and key, so nothing lands in another project. The file holds
everything needed to recreate the trajectory exactly: the open payload, the steps the server
had not acknowledged (with their indexes, in order) and the completion if `finish` was called.
It is written atomically (temporary file, fsync, rename, fsync of the directory).

Resending relies on the streaming API being idempotent: `traces/open` with the same payload
returns the same trace, a step already stored with the same content is skipped, and completing
with the same outcome again is a no-op. So a file is replayed in full every time (open, all its
steps, complete) and deleted only once every call succeeded; a crash between the server's
answer and the deletion only means the next resend replays calls the server ignores.

A file is sent as a recorder would send it: within the server's limits (a step too large for a
request has its text cut), and a step the server refuses for its content fails alone (a
`system` step takes its index; see `hindsight_client.isolation`), so the rest is stored. When
the file stays for a later pass, it is rewritten with what was changed, so a replay sends what
the server already holds.

What the API refuses for good (the external_id taken by other content, the trace completed
meanwhile with another outcome, a step stored with other content, a header it refuses: 4xx
other than 401, 403, 404, 408 and 429) cannot be fixed by retrying: the file is moved aside as
`*.rejected`, the reason written into it, with a warning. So is a file that failed
`max_failures` passes for what may be its own fault (a 500 or a 404 while the server answers
other requests: each such pass is counted in the file, which then goes to the back of the
line); it never holds up the others, as the pass goes on with the next file. A file that
cannot be read is moved aside as `*.bad`. An unreachable server, a 408/429/502/503/504 that
outlasts the retries, a server that answers nothing else, or a refused key (401/403) leave the
files in place, uncounted, and stop the pass: the next one retries them.

Two processes sharing a directory never send the same file at once: the sender holds an
exclusive `flock` on the file (released by the kernel if the process dies, so a crash leaves no
stale claim); where `fcntl` is missing (Windows) a `<file>.lock` created with O_EXCL stands in
and is considered stale after an hour.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
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
from hindsight_client.transport import Backoff, Transport, call_with_retries

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("hindsight_client")

VERSION = 1
STALE_LOCK_SECONDS = 3600.0
STALE_TEMP_SECONDS = 3600.0
# The server (not the file) is the problem: stop the pass, count nothing.
SERVER_BUSY = frozenset({401, 403, 408, 429, 502, 503, 504})


# ---------------------------------------------------------------------- where


def default_spool_dir() -> Path:
    """`$HINDSIGHT_SPOOL_DIR`, else the platform's user cache dir + `hindsight/spool`."""
    configured = os.environ.get("HINDSIGHT_SPOOL_DIR")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
        return base / "hindsight" / "Cache" / "spool"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "hindsight" / "spool"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "hindsight" / "spool"


def resolve_spool_dir(spool_dir: str | os.PathLike[str] | bool | None) -> Path | None:
    """None (or True) means the default directory, False turns spooling off."""
    if spool_dir is False:
        return None
    if spool_dir is None or spool_dir is True:
        return default_spool_dir()
    return Path(spool_dir).expanduser()


def target_id(transport: Transport) -> str:
    """Names the server and key a file belongs to without writing the key to disk."""
    return hashlib.sha256(f"{transport.base_url}\n{transport.api_key}".encode()).hexdigest()[:16]


# ---------------------------------------------------------------------- writing


def spool_write(
    directory: Path,
    *,
    transport: Transport,
    header: dict[str, Any],
    steps: list[dict[str, Any]],
    complete: dict[str, Any] | None,
) -> Path:
    """Write one trajectory's unsent part atomically; returns the file's path."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    external_id = str(header["external_id"])
    document = {
        "version": VERSION,
        "spooled_at": time.time(),
        "base_url": transport.base_url,
        "external_id": external_id,
        "open": header,
        "steps": steps,
        "complete": complete,
    }
    data = json.dumps(document, default=str).encode()
    stem = f"{target_id(transport)}-{_safe_name(external_id)}"
    path = directory / f"{stem}.json"
    # Never replace another file: two runs reusing an external_id while the server was down
    # must both reach the server, which then keeps the first and refuses the second (409).
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{stem}-{n}.json"
    _write_atomically(path, data)
    return path


def _write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` entirely or not at all, even across a crash (0600)."""
    directory = path.parent
    temporary = directory / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _safe_name(external_id: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", external_id)[:60].lstrip(".")
    return f"{readable}-{hashlib.sha256(external_id.encode()).hexdigest()[:8]}"


def _fsync_directory(directory: Path) -> None:
    """Makes the rename itself durable (POSIX; Windows cannot open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- reading


class _Corrupt(Exception):
    pass


class _Busy(Exception):
    pass


@dataclass(frozen=True)
class _Spooled:
    external_id: str
    base_url: str
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    complete: dict[str, Any] | None
    document: dict[str, Any]  # the whole file, to write it back
    failures: int  # earlier passes that failed for what may be this file's fault

    def encode(self, **changes: Any) -> bytes:
        """The file's content with its steps as they are now and `changes`."""
        return json.dumps({**self.document, "steps": self.steps, **changes}).encode()


def _parse(data: bytes) -> _Spooled:
    try:
        document = json.loads(data)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError both are
        raise _Corrupt(f"not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise _Corrupt(f"not a version {VERSION} hindsight spool file")
    header, steps, complete = document.get("open"), document.get("steps"), document.get("complete")
    if not isinstance(header, dict) or not isinstance(header.get("external_id"), str):
        raise _Corrupt("no open payload with an external_id")
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and type(s.get("index")) is int for s in steps
    ):
        raise _Corrupt("steps is not a list of indexed steps")
    indexes = [s["index"] for s in steps]
    if indexes and indexes != list(range(indexes[0], indexes[0] + len(indexes))):
        raise _Corrupt("step indexes are not consecutive")
    if complete is not None and not (
        isinstance(complete, dict) and isinstance(complete.get("outcome"), str)
    ):
        raise _Corrupt("complete has no outcome")
    failures = document.get("failures", 0)
    return _Spooled(
        external_id=header["external_id"],
        base_url=str(document.get("base_url") or ""),
        header=header,
        steps=steps,
        complete=complete,
        document=document,
        failures=failures if type(failures) is int else 0,
    )


class _Claim:
    """An exclusive hold on one spool file while it is being sent."""

    def __init__(self, path: Path, fd: int | None, lock_path: Path | None, data: bytes) -> None:
        self.path = path
        self.data = data
        self._fd = fd
        self._lock_path = lock_path

    @classmethod
    def take(cls, path: Path) -> _Claim | None:
        """The claim, or None when the file is gone; raises _Busy when another holds it."""
        if fcntl is None:
            return cls._take_with_lock_file(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _Busy from None
            # Between our open and our lock another sender may have sent and deleted the
            # file: then we hold an unlinked inode, and there is nothing left to do.
            if not _same_file(fd, path):
                os.close(fd)
                return None
            return cls(path, fd, None, _read_all(fd))
        except BaseException:
            with suppress(OSError):
                os.close(fd)
            raise

    @classmethod
    def _take_with_lock_file(cls, path: Path) -> _Claim | None:
        lock_path = path.with_name(path.name + ".lock")
        for _ in range(2):
            try:
                os.close(os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                break
            except FileExistsError:
                try:
                    age = time.time() - lock_path.stat().st_mtime
                except FileNotFoundError:
                    continue
                if age < STALE_LOCK_SECONDS:
                    raise _Busy from None
                with suppress(OSError):
                    lock_path.unlink()
        else:
            raise _Busy
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            with suppress(OSError):
                lock_path.unlink()
            return None
        return cls(path, None, lock_path, data)

    def remove(self) -> None:
        if self._fd is None or _same_file(self._fd, self.path):
            self.path.unlink(missing_ok=True)
            _fsync_directory(self.path.parent)

    def set_aside(self, suffix: str, data: bytes | None = None) -> Path:
        """Move the file to `<name><suffix>` (with `data` as its content, if given)."""
        target = self.path.with_name(self.path.name + suffix)
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.{n}{suffix}")
        if data is None:
            os.replace(self.path, target)
        else:
            _write_atomically(target, data)
            self.remove()
        return target

    def rewrite(self, data: bytes) -> None:
        """Replace the file's content (a new file at the same path; the mtime moves it to the
        back of the oldest-first order)."""
        _write_atomically(self.path, data)

    def release(self) -> None:
        if self._fd is not None:
            with suppress(OSError):
                os.close(self._fd)  # drops the flock
            self._fd = None
        if self._lock_path is not None:
            with suppress(OSError):
                self._lock_path.unlink()
            self._lock_path = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        mine, now = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------- resending


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
    Safe to run from several processes at once and to repeat: see the module's docstring."""
    transport: Transport = getattr(client, "transport", client)
    directory = resolve_spool_dir(spool_dir)
    result = ResendResult()
    if directory is None or not directory.is_dir():
        return result
    _remove_stale_temporaries(directory)
    sender = _Sender(
        transport,
        batch_size=max(1, batch_size),
        max_batch_bytes=max_batch_bytes,
        attempts=max(1, attempts),
        backoff=backoff or Backoff(base=0.2, cap=2.0),
        max_retry_wait=max_retry_wait,
    )
    pattern = "*.json" if any_key else f"{target_id(transport)}-*.json"
    for path in _oldest_first(directory.glob(pattern)):
        if result.error is not None:
            result.pending.append(path)
            continue
        try:
            claim = _Claim.take(path)
        except _Busy:
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
    claim: _Claim,
    sender: _Sender,
    transport: Transport,
    any_key: bool,
    result: ResendResult,
    max_failures: int,
) -> None:
    path = claim.path
    try:
        spooled = _parse(claim.data)
    except _Corrupt as problem:
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
    claim: _Claim, spooled: _Spooled, sender: _Sender, result: ResendResult, error: Exception
) -> None:
    """The server is the problem: keep the file (with what this pass changed), stop the pass."""
    if sender.changed:
        claim.rewrite(spooled.encode())
    result.pending.append(claim.path)
    result.error = error


def _reject(claim: _Claim, spooled: _Spooled, result: ResendResult, reason: str) -> None:
    note = {"at": time.time(), "reason": reason}
    aside = claim.set_aside(".rejected", spooled.encode(rejected=note))
    logger.warning(
        "hindsight spool: the server refused trajectory %s (%s); moved aside to %s",
        spooled.external_id,
        reason,
        aside,
    )
    result.rejected.append(aside)


class _Sender:
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

    def send(self, spooled: _Spooled) -> None:
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
            for position, (step, _) in zip(positions, items, strict=True):
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


def _oldest_first(paths: Iterator[Path]) -> list[Path]:
    dated = []
    for path in paths:
        try:
            dated.append((path.stat().st_mtime, path.name, path))
        except FileNotFoundError:
            continue
    return [path for _, _, path in sorted(dated)]


def _remove_stale_temporaries(directory: Path) -> None:
    """Temporary files of writers that died before their rename."""
    now = time.time()
    for temporary in directory.glob(".*.tmp"):
        with suppress(OSError):
            if now - temporary.stat().st_mtime > STALE_TEMP_SECONDS:
                temporary.unlink()


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
