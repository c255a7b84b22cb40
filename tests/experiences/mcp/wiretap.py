"""Runs a command and copies stdio both ways, appending every line to a log as
`> line` (towards the command) or `< line` (from it). Used on both sides of the proxy to show
that messages pass unchanged.

    python tests/experiences/mcp/wiretap.py LOG -- command ...
"""

import subprocess
import sys
import threading

log_path, command = sys.argv[1], sys.argv[3:]
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
lock = threading.Lock()
log = open(log_path, "ab")  # noqa: SIM115


def note(direction: bytes, line: bytes) -> None:
    with lock:
        log.write(direction + line)
        log.flush()


def up() -> None:
    for line in iter(sys.stdin.buffer.readline, b""):
        note(b"> ", line)
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()


threading.Thread(target=up, daemon=True).start()
for line in iter(child.stdout.readline, b""):
    note(b"< ", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait())
