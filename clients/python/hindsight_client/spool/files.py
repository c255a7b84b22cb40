"""The spool's on-disk format: where the directory is, how a trajectory's unsent part is
written (one JSON file per trajectory, named `<target>-<external id>-<hash>.json`, written
atomically: temporary file, fsync, rename, fsync of the directory; 0700 directory, 0600
files), how a file is read back and checked (`parse`, raising `Corrupt`), and the order in
which a pass takes the files (oldest first).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight_client.transport import Transport

VERSION = 1
STALE_TEMP_SECONDS = 3600.0


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
    write_atomically(path, data)
    return path


def write_atomically(path: Path, data: bytes) -> None:
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
    fsync_directory(directory)


def _safe_name(external_id: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", external_id)[:60].lstrip(".")
    return f"{readable}-{hashlib.sha256(external_id.encode()).hexdigest()[:8]}"


def fsync_directory(directory: Path) -> None:
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


class Corrupt(Exception):
    pass


@dataclass(frozen=True)
class Spooled:
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


def parse(data: bytes) -> Spooled:
    try:
        document = json.loads(data)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError both are
        raise Corrupt(f"not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise Corrupt(f"not a version {VERSION} hindsight spool file")
    header, steps, complete = document.get("open"), document.get("steps"), document.get("complete")
    if not isinstance(header, dict) or not isinstance(header.get("external_id"), str):
        raise Corrupt("no open payload with an external_id")
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and type(s.get("index")) is int for s in steps
    ):
        raise Corrupt("steps is not a list of indexed steps")
    indexes = [s["index"] for s in steps]
    if indexes and indexes != list(range(indexes[0], indexes[0] + len(indexes))):
        raise Corrupt("step indexes are not consecutive")
    if complete is not None and not (
        isinstance(complete, dict) and isinstance(complete.get("outcome"), str)
    ):
        raise Corrupt("complete has no outcome")
    failures = document.get("failures", 0)
    return Spooled(
        external_id=header["external_id"],
        base_url=str(document.get("base_url") or ""),
        header=header,
        steps=steps,
        complete=complete,
        document=document,
        failures=failures if type(failures) is int else 0,
    )


def oldest_first(paths: Iterator[Path]) -> list[Path]:
    dated = []
    for path in paths:
        try:
            dated.append((path.stat().st_mtime, path.name, path))
        except FileNotFoundError:
            continue
    return [path for _, _, path in sorted(dated)]


def remove_stale_temporaries(directory: Path) -> None:
    """Temporary files of writers that died before their rename."""
    now = time.time()
    for temporary in directory.glob(".*.tmp"):
        with suppress(OSError):
            if now - temporary.stat().st_mtime > STALE_TEMP_SECONDS:
                temporary.unlink()
