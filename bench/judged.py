"""Served items against the hand-judged experiences (bench/datasets/judged_experiences.json):
would this item help or mislead an agent on a new task of this kind?

Each judged entry is the exact text an agent was served (an item's replay when it was the same
case, else its advice), the dataset, the judgement (`helpful`, `neutral` or `misleading`) and a
one-line reason, written by a person reading the served items of a bench/quality.py run
(`--answers DIR`). An entry with a `group` was judged for the task it was served to (τ-bench:
against that task's gold actions, its user's instruction and the policy): one text can help on
the task it came from and mislead on another (a replay of the same user's other request). An
entry without one judges the text on the kind of task it is about. A served item takes its
task's judgement, else its text's. The figures are the shares of the judged served items (probe
× item, first three of each answer) that are helpful and misleading, with how many served items
the judgements cover (and how many of those for their task). Changed wording is no longer
judged: coverage says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

JUDGED = Path(__file__).resolve().parent / "datasets" / "judged_experiences.json"
FIRST = 3


def served_text(item: dict) -> str:
    return item.get("replay") or item["advice"]


def judged_figures(
    dataset: str, answers: list[dict], groups: Sequence[str | None] | None = None
) -> dict:
    """`groups`: each answer's probe's group (its task), for the judgements made for a task."""
    if not JUDGED.exists():
        return {}
    entries = [e for e in json.loads(JUDGED.read_text())["experiences"] if e["dataset"] == dataset]
    for_task = {(e["text"], e["group"]): e["judgement"] for e in entries if e.get("group")}
    for_text = {e["text"]: e["judgement"] for e in entries if not e.get("group")}
    served = [
        (served_text(i), group)
        for a, group in zip(answers, groups or [None] * len(answers), strict=True)
        for i in a["items"][:FIRST]
    ]
    found, task_judged = [], 0
    for text, group in served:
        judgement = for_task.get((text, group)) if group is not None else None
        task_judged += judgement is not None
        judgement = judgement or for_text.get(text)
        if judgement is not None:
            found.append(judgement)
    if not found:
        return {"judged_entries": len(entries), "served": len(served), "covered": 0}
    return {
        "judged_entries": len(entries),
        "served": len(served),
        "covered": len(found),
        "covered_for_their_task": task_judged,
        "helpful_share": round(found.count("helpful") / len(found), 3),
        "misleading_share": round(found.count("misleading") / len(found), 3),
    }
