"""What an experience is matched on: its task key, its keywords and its contrasts.

The scene summary itself is written by the review (`traces.review.scene`); here are the parts
that only experiences need.
"""

import hashlib
import re
from collections.abc import Iterable

from traces.review.heuristic import key_values, names

MAX_KEYWORDS = 40


def task_key(task: str) -> str:
    """Runs of the same task share a key: the task text, case and spacing aside."""
    return hashlib.sha1(" ".join(task.lower().split()).encode()).hexdigest()


def keywords_of(texts: Iterable[str]) -> str:
    """Identifiers (ids, numbers, paths, error codes) and names, whole, for keyword search:
    exactly what a sentence embedding blurs."""
    found: list[str] = []
    for text in texts:
        for value in sorted(key_values(text) | names(text)):
            # PostgreSQL's parser splits "mia_li_3668" but keeps "mia-li-3668" whole too.
            value = value.replace("_", "-")
            if value not in found:
                found.append(value)
    return " ".join(found[:MAX_KEYWORDS])


# Words that the strategy and pitfall templates (and plain English) put in any experience:
# "get_user_details "x", then cancel_reservation "y": it led to …" shares "then", "it", "led",
# "to" with every other lesson, which made two lessons about different calls look alike; the
# placeholders' own words ("<user_id from the request>", "<… of the case>") too.
_FILLER = frozenset(
    "a an and are as at be by did do does for from if in into is it its led more no not of on "
    "or s step steps than that the then this to was were when with you your items fields "
    "instead first request case written words returned use said user then".split()
)


def substance_words(text: str) -> set[str]:
    """The words that carry an experience's substance: calls, arguments, values, not filler."""
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _FILLER}


def substance_overlap(first: str, second: str) -> float:
    """How much two experiences say the same: the share of the shorter one's substance words
    (of their strategy and pitfall, filler left out) that the other also says, so a more
    specific wording still covers a general one, while two runs of one scene that took
    different paths (other calls, other values) are not duplicates."""
    a, b = substance_words(first), substance_words(second)
    if not a or not b:
        return 1.0  # one says nothing structured (written by hand): the scene decides
    return len(a & b) / min(len(a), len(b))
