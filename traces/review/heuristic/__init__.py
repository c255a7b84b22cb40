"""The offline reviewer: deterministic, documented rules. Marked "heuristic" wherever it shows.

It reads a trajectory the way a person reviews one afterwards: where did each step's input come
from, what did its result feed, and — in a run that did not succeed — where did it go wrong.
Each rule is documented with the code that applies it: `flow` (the data flow: which step fed
which), `labels` (the four labels, first rule that fits), `template` (the review and the
experience built from the labels); `signals` reads single steps (`traces.review.values`
single texts), and `reviewer` puts them together behind the reviewer interface.
"""

from traces.review.heuristic.labels import label_steps
from traces.review.heuristic.reviewer import MODEL, PROMPT_VERSION, HeuristicReviewer
from traces.review.heuristic.template import build_template

__all__ = [
    "MODEL",
    "PROMPT_VERSION",
    "HeuristicReviewer",
    "build_template",
    "label_steps",
]
