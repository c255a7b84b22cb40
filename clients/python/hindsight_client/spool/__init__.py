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

The package: `files` (where, the file format, writing and reading), `claim` (the exclusive hold
on a file), `replay` (sending one file's trajectory), `resend` (the pass over the directory,
`resend_spooled`, `resend_in_background`).
"""

from hindsight_client.spool.claim import STALE_LOCK_SECONDS
from hindsight_client.spool.files import (
    STALE_TEMP_SECONDS,
    VERSION,
    default_spool_dir,
    resolve_spool_dir,
    spool_write,
    target_id,
)
from hindsight_client.spool.resend import (
    SERVER_BUSY,
    ResendResult,
    resend_in_background,
    resend_spooled,
)

__all__ = [
    "SERVER_BUSY",
    "STALE_LOCK_SECONDS",
    "STALE_TEMP_SECONDS",
    "VERSION",
    "ResendResult",
    "default_spool_dir",
    "resend_in_background",
    "resend_spooled",
    "resolve_spool_dir",
    "spool_write",
    "target_id",
]
