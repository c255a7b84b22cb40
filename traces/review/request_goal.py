"""What a request asks done, in a few words of its own: "Count md5sum of all '*.py' files in
/testbed" asks to "count md5sum of all files". It is the condition of a recipe for a tool every
run calls: "When you use bash:" holds for every shell task, so another task's `tree` recipe read
as advice for "print the source of the file system"; "When you use bash to list the tree of a
directory:" says when it applies.

The phrase is the request's first verb and the words after it, up to where the request starts
to say where, which, or with what (a path, "in", "under", "that", "except", …), at most
GOAL_WORDS words. Values (quoted, numbers, globs, ids) never enter it: they are the old case's.
A request that does not start with a verb (a question, "I want to …") has no goal here.
"""

import re
from collections import Counter

from traces.review.command_effects import READ_PROGRAMS, WRITE_PROGRAMS
from traces.review.scene import query_request
from traces.review.tool_effects import READ_VERBS, WRITE_VERBS, change_verbs

GOAL_WORDS = 6

# Verbs a request starts with, beyond the tool-name verbs of tool_effects.
REQUEST_VERBS = (
    READ_VERBS
    | WRITE_VERBS
    | frozenset(
        "print display output determine locate identify extract sort report generate measure "
        "sum split join convert format filter make prepend append calculate count search list "
        "show get dump concatenate prune hide unhide download mount unmount wrap strip trim "
        "encode decode encrypt decrypt execute run evaluate reverse rotate".split()
    )
) - frozenset("top which where open info details detail test status logs log".split())
# Words where the request starts to say where, which or with what: the goal ends before them.
_GOAL_ENDS = frozenset(
    "in inside within under below beneath from into at to onto via using with without "
    "that which whose where who when while if than and or but then so except excluding "
    "including called named containing matching modified like as larger smaller bigger older "
    "newer greater less more fewer residing having ending starting beginning existing".split()
)
# Words a goal does not end on ("calculate the md5 sum of the" -> "calculate the md5 sum").
_DANGLING = frozenset("the a an of all for by on each every any its their some".split())
_ADVERB = re.compile(r"^[a-z]+ly$")
# A word, or a short name with a digit that is no value ("md5", "sha1", "ipv4").
_WORD = re.compile(r"^[a-z][a-z-]*$|^[a-z]{2,3}\d$")
# A value inside the goal's words: left out, the words around it kept ("print top 3 largest
# files" -> "print top largest files", "remove all *.txt files" -> "remove all files").
_VALUE = re.compile(r"^['\"`.]|[*?\d]")


def _base(verb: str) -> str:
    """The verb as the WRITE_VERBS / READ_VERBS lists have it ("prints" -> "print")."""
    for stem in (verb, verb[:-3] + "y" if verb.endswith("ies") else "", verb[:-2], verb[:-1]):
        if stem and stem in REQUEST_VERBS:
            return stem
    return ""


def _ended(words: list[str]) -> str:
    """The words without the ones a goal does not end on (_DANGLING), as one phrase."""
    while len(words) > 1 and words[-1] in _DANGLING:
        words = words[:-1]
    return " ".join(words)


def request_goal(request: str) -> str:
    """The goal phrase of `request` (lower case, GOAL_WORDS words at most), or ""."""
    words = request.split()
    while words and _ADVERB.match(words[0].lower()) and not _base(words[0].lower()):
        words = words[1:]  # "Recursively prints …"
    if not words or not (verb := _base(words[0].lower())):
        return ""
    goal = [verb]
    for raw in words[1:]:
        word = raw.lower()
        ends_clause = word[-1:] in ",;:.!?"
        word = word.rstrip(",;:.!?")
        if word in _GOAL_ENDS or len(goal) == GOAL_WORDS:
            break
        if _WORD.match(word) or word in READ_PROGRAMS or word in WRITE_PROGRAMS:
            goal.append(word)  # md5sum is a program, not a value
        elif "/" in word or not _VALUE.search(word):
            break  # a path, or what is no word: where the request starts to name its values
        if ends_clause:
            break
    return _ended(goal)


def purpose(request: str, *, changes_state: bool) -> str:
    """What `request` asked a command line or a SQL statement to do: its goal; for a change, a
    goal that does not start with the change the request asked for is that change's verb alone
    ("find all *.tmp files and delete them": "delete", not "find all files"); a request that
    names no change of the lists is read by its goal ("prune all the files")."""
    goal = request_goal(query_request(request))
    if not changes_state:
        return goal
    changes = change_verbs(request)
    if not changes or (goal and goal.split()[0] in changes):
        return goal  # "prune all the files": no verb of the lists, the goal says it
    return changes[0]


def shared_purpose(purposes: list[str]) -> str:
    """The longest start that at least half of `purposes` (and two, when there are two or more)
    share, word by word ("remove all files", "remove all directories", "remove files":
    "remove"); "" when none is. A family's runs asked each their own: what most of them asked
    is the condition of what they teach together."""
    for size in range(GOAL_WORDS, 0, -1):
        starts = Counter(" ".join(p.split()[:size]) for p in purposes if len(p.split()) >= size)
        if starts:
            start, count = starts.most_common(1)[0]
            if 2 * count >= len(purposes) and (count >= 2 or len(purposes) == 1):
                return _ended(start.split())
    return ""
