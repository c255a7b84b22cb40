"""An exclusive hold on one spool file while a process sends it, so that two processes sharing
a directory never send the same file at once: an `flock` on the file (released by the kernel
if the process dies, so a crash leaves no stale claim); where `fcntl` is missing (Windows) a
`<file>.lock` created with O_EXCL stands in and is considered stale after an hour. The claim
also removes, sets aside or rewrites the file it holds.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path

from hindsight_client.spool.files import fsync_directory, write_atomically

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

STALE_LOCK_SECONDS = 3600.0


class Busy(Exception):
    pass


class Claim:
    """An exclusive hold on one spool file while it is being sent."""

    def __init__(self, path: Path, fd: int | None, lock_path: Path | None, data: bytes) -> None:
        self.path = path
        self.data = data
        self._fd = fd
        self._lock_path = lock_path

    @classmethod
    def take(cls, path: Path) -> Claim | None:
        """The claim, or None when the file is gone; raises Busy when another holds it."""
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
                raise Busy from None
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
    def _take_with_lock_file(cls, path: Path) -> Claim | None:
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
                    raise Busy from None
                with suppress(OSError):
                    lock_path.unlink()
        else:
            raise Busy
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
            fsync_directory(self.path.parent)

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
            write_atomically(target, data)
            self.remove()
        return target

    def rewrite(self, data: bytes) -> None:
        """Replace the file's content (a new file at the same path; the mtime moves it to the
        back of the oldest-first order)."""
        write_atomically(self.path, data)

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
