"""Whether a command line only reads: one call of a tool that runs commands (`bash`, a terminal,
`str_replace_editor`'s `view`), judged by the command it ran.

A shell tool reads in one call (`cat utils/date.py`, `python -m pytest`, `git diff`) and
changes files in the next (`sed -i …`, `git commit`, `echo x > f`), so the tool's own effect
(traces.review.tool_effects) says nothing of the call: a lesson built on it could forbid the
`grep` a run needed, or read a `rm -rf` as a look-up. A command line is the value of an
argument named `command` (`cmd`, `keystrokes`, `script`), or the whole argument of a tool whose
name says it runs commands (`bash`, `shell`, `terminal`, `run_command`). It **reads** when every
command of it (split at `&&`, `||`, `;`, `|` and new lines) is a program that only observes —
`cat`, `ls`, `grep`, `head`, `md5sum`, a test runner, `git status` / `log` / `diff`, `sed`
without `-i`, `find` whose every `-exec` reads, `tar -t`, `gzip -c`, a verb of reading (`view`)
— and none writes its output to a file; it **changes state** when one of them is a program that
does (`rm`, `mv`, `pip install`, `git commit`, `sed -i`, `find -delete` or `-exec rm`, `xargs
rm`, `tar c`, `gzip`, a verb of changing: `create`, `str_replace`) or writes to a file (`>`,
`>>`, `tee`); else nothing is said and the tool's effect stands (a script: `python fix.py`).

A **SQL statement** (the value of an argument named `sql`, `query` or `statement`, or the whole
argument of a tool whose name says SQL or database: `run_sql`, `query_db`) is judged the same
way: `SELECT`, `WITH … SELECT`, `SHOW`, `DESCRIBE`, `EXPLAIN` read; `INSERT INTO`, `UPDATE …
SET`, `DELETE FROM`, `CREATE` / `DROP` / `ALTER TABLE` and the like change state; a search's
words ("update on the election") are no statement and say nothing.
"""

import re
import shlex
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from traces.review.tool_effects import verb_effect

COMMAND_KEYS = ("command", "cmd", "keystrokes", "script")
SHELL_WORDS = frozenset("bash sh zsh shell terminal console powershell command cmd".split())
READ_PROGRAMS = frozenset(
    "cat ls ll grep egrep fgrep rg ag ack find fd head tail less more wc pwd tree stat file du "
    "df diff cmp which whereis type echo printf env printenv id whoami uname date ps top jq awk "
    "cut sort uniq nl od xxd hexdump readlink realpath basename dirname cd true false sleep "
    "pytest tox nosetests jest mocha vitest md5sum sha1sum sha256sum sha512sum cksum hostname "
    "comm join paste tac rev fold fmt column strings tr seq yes cal bc expr test [ [[ free "
    "uptime who groups nproc lsof zcat zgrep bzcat xzcat pgrep pstree dig nslookup host ping "
    "getent locale".split()
)
WRITE_PROGRAMS = frozenset(
    "rm rmdir mv cp mkdir touch chmod chown chgrp ln tee dd truncate kill pkill killall reboot "
    "shutdown patch install shred unlink mkfifo mknod rsync scp wget split csplit zip".split()
)
# Archivers and compressors: they write files unless told only to list, test or print.
ARCHIVERS = frozenset("tar gzip gunzip bzip2 bunzip2 xz unxz unzip 7z".split())
_ARCHIVE_READS = frozenset("-c -l -t --stdout --to-stdout --list --test -tf -tzf -tvf".split())
# Options that take the next word as their value (xargs -I {}, -n 1; sudo -u root).
_OPTION_VALUES = frozenset("-I -n -P -L -d -s -E -a -u -g".split())
_FIND_EXEC = ("-exec", "-execdir", "-ok", "-okdir")
# Programs whose first word after them says (`git diff` reads, `pip install` changes).
SUBCOMMANDS = {
    "git": (
        "status log diff show grep blame ls-files rev-parse describe shortlog",
        "add commit push pull checkout switch reset restore apply am merge rebase stash "
        "cherry-pick rm mv tag clone init fetch",
    ),
    **dict.fromkeys(
        "pip pip3 npm yarn pnpm cargo go apt apt-get brew poetry uv conda gem".split(),
        (
            "list ls show view info search outdated audit why test freeze check",
            "install i add remove uninstall rm update upgrade publish",
        ),
    ),
}
PYTHONS = re.compile(r"^(python[\d.]*|py)$")
TEST_MODULES = frozenset("pytest unittest doctest".split())
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_ASSIGNMENT = re.compile(r"^\w+=")
_WRAPPERS = frozenset("sudo timeout nohup time env xargs".split())


SQL_KEYS = ("sql", "query", "statement")
SQL_WORDS = frozenset("sql sqlite postgres mysql db database".split())
_SQL_READ = re.compile(r"^(?:select|show|describe|desc|explain|pragma)\b|^with\b", re.I)
_SQL_WRITE = re.compile(
    r"^(?:insert\s+(?:or\s+\w+\s+)?into|update\s+\S+\s+set|delete\s+from|merge\s+into|"
    r"replace\s+into|truncate\s+table|(?:create|drop|alter)\s+(?:or\s+replace\s+)?"
    r"(?:temp\w*\s+)?(?:unique\s+)?(?:table|view|index|schema|database|function|procedure|"
    r"trigger)\b)",
    re.I,
)
_SQL_WRITES_INSIDE = re.compile(
    r"\b(?:insert\s+into|update\s+\S+\s+set|delete\s+from|merge\s+into)\b", re.I
)
_SQL_SHAPE = re.compile(
    r"^\s*(?:select|with)\b[\s\S]*\bfrom\s+\w[\s\S]*\bwhere\b|"
    r"^\s*(?:select\s+(?:\*|count\s*\()|insert\s+into\s+\w+\s*\(|"
    r"update\s+\w+\s+set\s+\w+\s*=|delete\s+from\s+\w+\s+where\b)",
    re.I,
)
_SQL_COMMENT = re.compile(r"^\s*(?:--[^\n]*\n|/\*.*?\*/)", re.S)


def call_verdict(tool: str, arguments: Any) -> tuple[bool | None, str]:
    """What one call ran says of its effect: its command line, else its SQL statement (True:
    only reads / False: changes state / None: nothing said), and what said so."""
    command = command_line(tool, arguments)
    if command is not None:
        return command_effect(command)
    ran = statement(tool, arguments)
    return sql_effect(ran) if ran is not None else (None, "")


def statement(tool: str, arguments: Any) -> str | None:
    """The SQL a call ran: a `sql` / `statement` argument, a `query` of a database tool or one
    shaped like SQL (a search's `query` for "Show Boat" or "Grant Hill" is words), or the whole
    argument of a database tool."""
    database = bool({w.lower() for w in re.findall(r"[A-Za-z]+", tool)} & SQL_WORDS)
    if isinstance(arguments, Mapping):
        for key in SQL_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                shaped = key != "query" or database or _SQL_SHAPE.search(value)
                return value if shaped else None
        return None
    return arguments if isinstance(arguments, str) and database else None


@lru_cache(maxsize=4096)  # a review asks for one call's effect many times
def sql_effect(statement: str) -> tuple[bool | None, str]:
    """(True: every statement reads / False: one changes state / None: not SQL or not known)."""
    verdicts = []
    for part in statement.split(";"):
        while (comment := _SQL_COMMENT.match(part)) is not None:
            part = part[comment.end() :]
        part = part.strip()
        if not part:
            continue
        if _SQL_WRITE.match(part) or (
            part[:4].lower() == "with" and _SQL_WRITES_INSIDE.search(part)
        ):
            return False, part.split(None, 1)[0].upper()
        verdicts.append(True if _SQL_READ.match(part) else None)
    if verdicts and all(verdicts):
        return True, "SELECT"
    return None, ""


def executed(tool: str, arguments: Any) -> str | None:
    """What a call ran: its command line, else its SQL statement (None: neither). Both are a
    strategy's text, shown with their values named, never summed up as "written for the case"."""
    return command_line(tool, arguments) or statement(tool, arguments)


def command_line(tool: str, arguments: Any) -> str | None:
    """The command line a call ran, if it ran one."""
    if isinstance(arguments, Mapping):
        for key in COMMAND_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return None
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", tool)}
    if isinstance(arguments, str) and arguments.strip() and words & SHELL_WORDS:
        return arguments
    return None


@lru_cache(maxsize=4096)  # a review asks for one call's effect many times
def command_effect(command: str) -> tuple[bool | None, str]:
    """(True: only reads / False: changes state / None: not known, and what said so)."""
    verdicts = [v for line in command.splitlines() for v in _line_verdicts(line)]
    if not verdicts:
        return None, ""
    for verdict, program in verdicts:
        if verdict is False:
            return False, program
    if all(verdict is True for verdict, _ in verdicts):
        return True, ", ".join(dict.fromkeys(program for _, program in verdicts))
    return None, ""


def _line_verdicts(line: str) -> list[tuple[bool | None, str]]:
    """Each command of one line (quoted text stays one word: `grep "a|b"` is one command)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an open quote (a heredoc's text, a cut line): not known
        return [(None, "")] if line.strip() else []
    verdicts: list[tuple[bool | None, str]] = []
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SEPARATORS:
            if command:
                verdicts.append(_one_command(command))
            command = []
        else:
            command.append(token)
    return verdicts


def _one_command(tokens: list[str]) -> tuple[bool | None, str]:
    for i, token in enumerate(tokens[:-1]):
        if token in _REDIRECTS and tokens[i + 1] != "/dev/null":
            return False, "a redirect to a file"
    tokens = [t for t in tokens if t not in ("<", "<<", "<<<", ">&", "(", ")")]
    while tokens and (_ASSIGNMENT.match(tokens[0]) or tokens[0] in _WRAPPERS):
        tokens = tokens[1:]
        if tokens and tokens[0].isdigit():  # timeout 30 …
            tokens = tokens[1:]
        while tokens and tokens[0].startswith("-"):  # xargs -0 -I {} …
            tokens = tokens[2:] if tokens[0] in _OPTION_VALUES else tokens[1:]
    if not tokens:
        return None, ""
    if tokens[0] in _FIND_EXEC:  # find's next -exec, after the `;` that ended the one before
        return _find(tokens)
    program = tokens[0].rsplit("/", 1)[-1].lower()
    rest = tokens[1:]
    if program in SUBCOMMANDS:
        reads, writes = SUBCOMMANDS[program]
        sub = next((t for t in rest if not t.startswith("-")), "")
        verdict = True if sub in reads.split() else False if sub in writes.split() else None
        return verdict, f"{program} {sub}".strip()
    if PYTHONS.match(program):
        if len(rest) >= 2 and rest[0] == "-m":
            if rest[1] in TEST_MODULES:
                return True, f"{program} -m {rest[1]}"
            if rest[1] in SUBCOMMANDS:
                return _one_command(rest[1:])
        return None, program
    if program == "sed":
        return (False, "sed -i") if any(t.startswith("-i") for t in rest) else (True, "sed")
    if program == "find":
        return _find(rest)
    if program in ARCHIVERS:
        listing = program == "unzip" and "-l" in rest
        if listing or any(t in _ARCHIVE_READS for t in rest):
            return True, program
        if program == "tar" and rest and re.fullmatch(r"-?[a-zA-Z]*t[a-zA-Z]*", rest[0]):
            return (True, "tar") if not re.search(r"[cxru]", rest[0]) else (False, "tar")
        return False, program
    if program in READ_PROGRAMS:
        return True, program
    if program in WRITE_PROGRAMS:
        return False, program
    return verb_effect(program), program


def _find(rest: list[str]) -> tuple[bool | None, str]:
    """`find` reads, unless it deletes or runs a command that changes state on what it finds
    (`-exec rm {} ;`, judged as that command; the `;` ended the command here)."""
    if "-delete" in rest:
        return False, "find -delete"
    starts = [i for i, t in enumerate(rest) if t in _FIND_EXEC]
    if not starts:
        return True, "find"
    verdicts = []
    for start in starts:
        command = []
        for token in rest[start + 1 :]:
            if token in _FIND_EXEC or token == "+":
                break
            if token != "{}":
                command.append(token)
        verdicts.append(_one_command(command) if command else (None, ""))
    for verdict, program in verdicts:
        if verdict is not True:
            return verdict, f"find -exec {program}".strip()
    return True, "find -exec " + ", ".join(dict.fromkeys(p for _, p in verdicts))
