"""A call as a strategy, not a replay: the values that came from the request or from an earlier
result become named placeholders, so the advice transfers to the next user, order or question.

`get_reservation_details {"reservation_id": "K1NW8N"}`, where K1NW8N came out of the user's
profile, reads `get_reservation_details <reservation_id from get_user_details>`; a value the
user gave reads `<user_id from the request>`; a search whose words are mostly the request's
reads `<query in the request's words>`; a text the agent wrote itself (a summary, a message)
reads `<summary written for the case>`. A short value from none of these (a control like
"Buy Now" that the project's runs all commit with, a keyword the agent chose) stays literal: it
is the same next time. The literal form (`literal_call`) is kept for the exact replay of the
same case.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traces.review.command_effects import executed
from traces.review.scene import argument_summary, cut_at_word
from traces.review.types import StepView, TraceView
from traces.review.values import content_words

PATTERN_CHARS = 90  # one call
LITERAL_CHARS = 40  # longer text the agent wrote itself is a placeholder too
COMMAND_CHARS = 80  # a command line up to this long is shown with its values named
FREE_TEXT_WORDS = 5
_SCAN = 8000
_WHOLE_VALUE_MIN = 2
CONSTANT = ""  # an origin: the same for every case, kept literal
_NAMED = re.compile(r"\b[A-Z][a-z]+\b.*\b[A-Z]?[a-z]+|\b[A-Z][a-z]{2,}\b")
# An id (letters and digits) or a date, an amount, a phone number (four digits or more): values
# of one case, whatever the key.
_IDENTIFIER = re.compile(
    r"^(?:(?=\S*\d)(?=\S*[A-Za-z])[\w.:/@#-]{4,}|(?=(?:\D*\d){4})[\d\s.:/+()-]+)$"
)


@dataclass(frozen=True)
class Sources:
    """Where values can come from, for one run: the user's words and each call's result."""

    request: str  # every user turn and the task, lower-cased
    outputs: Sequence[tuple[int, str, str]]  # (index, tool, lower-cased result), in order
    # Values the project's runs showed to be the same every time (the arguments a tool commits
    # with across runs, tool_effects' commit_arguments), lower-cased.
    constants: frozenset[str] = frozenset()

    @classmethod
    def of(cls, task: str, steps: Sequence[StepView], trace: TraceView | None = None) -> "Sources":
        users = [task, *(s.content for s in steps if s.kind == "user_input")]
        outputs = [
            (s.index, s.tool, (s.observation_raw or s.observation)[:_SCAN].lower())
            for s in steps
            if s.kind == "tool_call"
        ]
        constants = frozenset(
            e.commit_arguments.strip('"').lower()
            for e in (trace.tool_effects.values() if trace is not None else ())
            if e.commit_arguments
        )
        return cls(request="\n".join(users).lower(), outputs=outputs, constants=constants)

    def holder(self, value: str, before: int) -> int | None:
        """The index of the last call before `before` whose result held the value, when the
        value came from a result (not from the request, nor a constant)."""
        lower = " ".join(value.split()).lower()
        if len(lower) < _WHOLE_VALUE_MIN or lower in self.constants:
            return None
        if _in_text(lower, self.request):
            return None
        holding = self._holding(lower, before)
        return holding[0] if holding else None

    def _holding(self, lower: str, before: int) -> tuple[int, str] | None:
        """(index, tool) of the last call before `before` whose result holds the value."""
        holding = [
            (index, tool)
            for index, tool, output in self.outputs
            if index < before and _in_text(lower, output)
        ]
        return holding[-1] if holding else None

    def origin(self, value: str, before: int) -> str | None:
        """'the request', a tool's name (its result held it), CONSTANT (a value the project's
        runs all commit with), or None (from nowhere the run shows)."""
        lower = " ".join(value.split()).lower()
        if len(lower) < _WHOLE_VALUE_MIN:
            return None
        if lower in self.constants:
            return CONSTANT
        if _in_text(lower, self.request):
            return "the request"
        holding = self._holding(lower, before)
        if holding:
            return holding[1]
        words = content_words(lower)
        if len(lower.split()) < 3:  # a path, a name: not a query written from the request
            return None
        if len(words) >= 3 and len(words & content_words(self.request)) * 2 >= len(words):
            return "the request's words"
        return None


def _in_text(value: str, text: str) -> bool:
    if value not in text:  # the word search below finds only what this finds (it was 5 %
        return False  # of a review when it ran on every short value)
    if len(value) <= 3:  # "no", "SEA": a whole word, not a piece of one
        return re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text) is not None
    return True


def _leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def _placeholder(key: str, origin: str) -> str:
    if origin == "the request's words":
        return f"<{key} in the request's words>"
    return f"<{key} from {origin}>"


def argument_pattern(
    key: str,
    value: Any,
    sources: Sources,
    before: int,
    *,
    final: bool = False,
    answer: bool = False,
    command: bool = False,
) -> str:
    """One argument as a placeholder by its origin, or as itself (short) when it has none.
    `command`: the argument is a command line or a SQL statement (command_effects.executed):
    one of one line keeps its command with its values named ("python -m pytest <path from the
    request>"), even when its words are the request's ("<command in the request's words>" hid
    the test run), cut at COMMAND_CHARS when longer ("<command written for the case>" hid a
    shell agent's whole way); a script of several lines (a heredoc) is written for the case.
    `answer`: the call is the answer nearly every run ends on; a value of it that the request
    held ("Which is older, A or B?") is that case's answer, not where the next one is: served to
    other questions, "<answer from the request>" was judged misleading 10 times of 12 (helpful
    none), and "<answer: one of the options the request names>" 9 of 9 (it reads as "answer
    with a term of the question"); "<answer of the case>" leaves the searches as the way."""
    leaves = _leaves(value)
    if isinstance(value, dict | list):
        origins = [o for leaf in leaves if (o := sources.origin(leaf, before))]  # "" is falsy
        if origins:
            named = sorted(set(origins), key=origins.index)
            return _placeholder(key, " and ".join(named[:2]))
        size = len(value)
        return f"{key}=[{size} items]" if isinstance(value, list) else f"{key}={{{size} fields}}"
    if not leaves:
        return "" if value is None else f"{key}={str(value).lower()}"
    if command and len(leaves[0].split()) >= 2 and "\n" not in leaves[0].strip():
        # A long one is cut, not hidden: its programs and options are the strategy.
        # Only its head is shown: a one-line script of kilobytes is not named piece by piece.
        head = leaves[0][: COMMAND_CHARS * 8]
        shown = _pieces_named(head, sources, before, command=True)
        return f'"{cut_command(shown, COMMAND_CHARS)}"'
    origin = sources.origin(leaves[0], before)
    if origin == CONSTANT:
        return f'"{leaves[0]}"'
    if answer and origin == "the request":
        return f"<{key} of the case>"
    if origin is not None:
        return _placeholder(key, origin)
    if len(leaves[0]) > LITERAL_CHARS or len(leaves[0].split()) >= FREE_TEXT_WORDS:
        return f"<{key} written for the case>"  # a summary, a message: never the same twice
    if final or _IDENTIFIER.match(leaves[0]) or _NAMED.search(leaves[0]):
        # An id, a date or a name (a person, a title) from somewhere unseen (the agent's own
        # thought): the next case has its own.
        return f"<{key} of the case>"
    return f'"{_pieces_named(leaves[0], sources, before)}"'


def cut_command(command: str, limit: int) -> str:
    """A command line within `limit`, cut where no quote is open (an awk program cut in its
    braces read as broken JSON), at the end of a pipeline stage when one ends in the second
    half ("find … -exec md5sum {} ; | sort …")."""
    command = " ".join(command.split())
    if len(command) <= limit:
        return command
    closed = [
        i
        for i, char in enumerate(command[:limit])
        if char == " " and command[:i].count('"') % 2 == 0 and command[:i].count("'") % 2 == 0
    ]
    stages = [i for i in closed if command[i + 1 : i + 3] in ("| ", "&&", "||")]
    ends = [i for i in stages if i >= limit // 2] or closed
    return command[: ends[-1]].rstrip(" ;") + " …" if ends else cut_at_word(command, limit)


# A piece of a short value that is a value of its own: a path or file name ("utils/date.py"), an
# id with letters and digits ("pod-7f9c"), a name with an underscore ("test_date"); never a
# plain word, a number or an option ("-m").
_PIECE = re.compile(
    r"(?<![\w<])(?=[\w./-]*[A-Za-z])(?=[\w./-]*(?:\d|_|/|\w\.\w))[\w./-]*\w(?![\w>])"
)


# Where a command line names a program: its start, after a pipe or a separator, inside `$(…)`
# or backquotes, after find's -exec and after xargs (and xargs' options).
_PROGRAM_BEFORE = re.compile(
    r"(?:^|[|;&`]|\$\(|\(|-exec(?:dir)?|\bxargs(?:\s+-\S+(?:\s+\{\})?)*)\s*$"
)
_SINGLE_QUOTED = re.compile(r"'[^']*'")


def _pieces_named(value: str, sources: Sources, before: int, *, command: bool = False) -> str:
    """A short literal (a command, an expression) with its pieces that are values named by
    where they came from: `cat utils/date.py`, the path from the request, reads `cat <path from
    the request>`; a path or an id from nowhere the run shows, `<path of the case>`. The command
    stays: it is the same next time, the file it was run on is not; so do its programs
    (`md5sum`, never "<value of the case>"), its options (`-n1`) and, in a quoted script or
    pattern (`sed 's/[^0-9]//g'`, `awk '{print $1}'`), whatever is not a value the run shows. A
    value of one piece (a path alone) is left as it was: what it names may be where every case
    looks. `command`: an option's number the request holds is the request's (`_number_named`)."""
    if len(value.split()) < 2:
        return value
    quoted = [m.span() for m in _SINGLE_QUOTED.finditer(value)]

    def named(match: re.Match[str]) -> str:
        piece = match.group(0)
        if piece.startswith("-") or _PROGRAM_BEFORE.search(value[: match.start()]):
            return piece
        origin = sources.origin(piece, before)
        if origin == CONSTANT:
            return piece
        path = "/" in piece or re.search(r"\w\.[A-Za-z]{1,5}$", piece) is not None
        kind = "path" if path else "value"
        if origin is not None:
            return _placeholder(kind, origin)
        if any(start < match.start() < end for start, end in quoted):
            return piece  # a script's or a pattern's own text
        # From nowhere the run shows: a path or an id is that case's; a name ("str_replace",
        # a subcommand) is the same next time.
        return f"<{kind} of the case>" if path or re.search(r"\d", piece) else piece

    if command:  # an option's number first ("+2k" is no piece then); a WebShop option is none
        value = _NUMBER.sub(lambda m: _number_named(m, sources, quoted), value)
        quoted = [m.span() for m in _SINGLE_QUOTED.finditer(value)]
    value = _PIECE.sub(named, value)
    value = _GLOB.sub(lambda m: _glob_named(m.group(0), sources), value)
    return _QUOTED_REQUEST.sub(lambda m: _quoted_named(m, sources), value)


# An option's number, signed or with a unit ("-mtime +7", "-size +2k", "head -n 3").
_NUMBER = re.compile(r"(?<=\s)([+-]?)(\d+)([a-zA-Z]?)(?=$|[\s;|)])")


def _number_named(match: re.Match[str], sources: Sources, quoted: list[tuple[int, int]]) -> str:
    """A number the request holds ("more than 7 days", "top 3") is the request's, `-mtime
    +<value from the request>`: served as it was, another case's filter was copied ("find …
    -mtime +7" for "modified in the last 60 days"). 0 and 1 stay: they are the syntax of many
    commands (`-maxdepth 1`, `head -n 1`), and so does a number inside a quoted script."""
    sign, number, unit = match.groups()
    if number in ("0", "1") or any(start < match.start() < end for start, end in quoted):
        return match.group(0)
    if not re.search(rf"(?<![\w.]){number}(?![\d.])", sources.request):
        return match.group(0)
    return f"{sign}<value from the request>{unit}"


# A quoted literal of a command or a statement (WHERE code = 'APG', grep 'world').
_QUOTED_REQUEST = re.compile(r"'([^'<>]{2,40})'")


def _quoted_named(match: re.Match[str], sources: Sources) -> str:
    """A quoted literal the request holds is `'<value from the request>'`: the next request
    names its own ("flights leaving from APG" → `WHERE departure_airport = 'APG'`)."""
    inner = match.group(1)
    if inner.strip() and _in_text(inner.lower(), sources.request) and not inner.startswith("-"):
        return "'<value from the request>'"
    return match.group(0)


# A file name pattern ("*.php", "new*.sh", "*FooBar*"): the request's when its words are.
_GLOB = re.compile(r"(?<![\w<*])[\w.-]*\*[\w.*-]*(?![\w>])")


def _glob_named(glob: str, sources: Sources) -> str:
    """`glob` as `<pattern from the request>` when the request holds it or every word of it
    ("*.php" for "all php files"): served to the next request, the agent's own pattern, not the
    files of this one's. A pattern of no word ("*") or of words the request does not hold
    stays."""
    words = re.findall(r"[A-Za-z0-9]{2,}", glob)
    lower = glob.lower()
    if _in_text(lower, sources.request) or (
        words and all(_in_text(w.lower(), sources.request) for w in words)
    ):
        return "<pattern from the request>"
    return glob


def call_pattern(
    step: StepView, sources: Sources, *, final: bool = False, answer: bool = False
) -> str:
    """`tool <arg from origin> …` within PATTERN_CHARS; a call without arguments is its tool.
    `final`: the call that gave the run's answer or made its change: a literal there is that
    case's value ("no", "1985"), never advice for the next one. `answer`: it is the answer
    nearly every run ends on (argument_pattern)."""
    if not step.tool:
        return f"{step.kind.replace('_', ' ')}"
    arguments = step.arguments
    ran = executed(step.tool, arguments)
    if isinstance(arguments, dict):
        parts = [
            argument_pattern(
                str(k), v, sources, step.index, final=final, answer=answer, command=v == ran
            )
            for k, v in arguments.items()
        ]
    elif arguments in (None, "", [], {}):
        parts = []
    else:
        parts = [
            argument_pattern(
                "input", arguments, sources, step.index, final=final, answer=answer,
                command=ran is not None,
            )
        ]  # fmt: skip
    parts = [p for p in parts if p]
    text = step.tool
    for part in parts:
        # The first part always shows: a command or statement is already cut to COMMAND_CHARS,
        # and "execute_sql …" said nothing of the query.
        if text != step.tool and len(text) + len(part) + 1 > PATTERN_CHARS:
            text += " …"
            break
        text += f" {part}"
    return text


def literal_call(step: StepView) -> str:
    """The call as it was made (for the replay of the same case); a command line up to
    COMMAND_CHARS: cut at 30, "find /testbed/dir2/subdir2 -t…" said nothing of what it did."""
    ran = executed(step.tool, step.arguments)
    if ran is not None and len(ran.split()) >= 2:  # not an editor's "view" beside its path
        return f'{step.tool} "{cut_command(ran, COMMAND_CHARS)}"'
    arguments = argument_summary(step.arguments, limit=30)
    return f"{step.tool} {arguments}" if arguments else step.tool


def is_aside(step: StepView) -> bool:
    """A call that acts on nothing and returns nothing (a `think` tool): not a step of a
    strategy, and its text is the agent's own thinking about one case. A command line or a SQL
    statement that printed nothing did its work in silence (`rm`, `find -delete`, an UPDATE):
    taken for asides, a shell agent's one-command successes taught nothing."""
    if (step.observation_raw or step.observation).strip() or step.is_error:
        return False
    return executed(step.tool, step.arguments) is None


def when_you_use(
    tool: str, before: str, pattern: str, after: str = "", *, purpose: str = ""
) -> str:
    """The injection form of a strategy: "When you use X, first A, then B; call it with <…>;
    after it, C". The tool is named as the condition only, its arguments as "call it with".
    `purpose`: what the request asked the call to do ("When you use bash to remove: …"), for a
    tool every run calls, whose name alone is no condition."""
    arguments = pattern.removeprefix(tool).strip()
    condition = f"{tool} to {purpose}" if purpose else tool
    text = f"When you use {condition}, first {before}" if before else f"When you use {condition}:"
    if arguments:
        text += f"; call it with {arguments}" if before else f" call it with {arguments}"
    elif not before:
        text += " call it as the last step"
    if after:
        text += f"; after it, {after}"
    return text
