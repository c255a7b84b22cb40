"""The observation summary's signal lines: the pattern written for speed finds exactly the
lines that the plainly written one does."""

import random
import re

from traces.observations import _SIGNAL, signal_lines, summarize

# The pattern as first written (one alternative with a leading \b): the reference.
PLAIN = re.compile(
    r"error|exception|traceback|fail|fatal|denied|refused|timed? ?out|not found|invalid|"
    r"status[ :=]+\d{3}|http/\d(\.\d)? [45]\d\d|\b[45]\d\d\b|exit (code|status)[ :=]*\d+"
)

PIECES = [
    "404",
    "x404",
    "404x",
    "4044",
    "_500",
    "500_",
    "(503)",
    "-502-",
    "e404",
    "Ä404",
    "٤٠٤",
    "error",
    "Exception",
    "timed out",
    "timeout",
    "time out",
    "status: 200",
    "status=503",
    "HTTP/1.1 503",
    "http/2 404",
    "exit code 137",
    "exit status: 1",
    "not found",
    "fine",
    "INFO",
    "in 432ms",
    "id=45a",
    "2026-11-05T10:45:00Z",
    " ",
    " ",
    "\n",
    "\n",
    "ok",
    "é",
]


def test_the_fast_pattern_matches_where_the_plain_one_does():
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30))).lower()
        fast = [(m.start(), m.end()) for m in _SIGNAL.finditer(text)]
        plain = [(m.start(), m.end()) for m in PLAIN.finditer(text)]
        assert [s for s, _ in fast] == [s for s, _ in plain], text
        # the same start may end elsewhere (another alternative): never past the line
        for (start, end), (_, plain_end) in zip(fast, plain, strict=True):
            assert "\n" not in text[start:end] and "\n" not in text[start:plain_end]


def test_signal_lines_after_the_cut_are_kept():
    log = "\n".join(["INFO all good"] * 50 + ["worker 4044 ok", "GET /x -> 503", "done"])
    assert signal_lines(log) == ["GET /x -> 503"]
    assert summarize(log, chars=30).endswith("…\nGET /x -> 503")
