"""Served items against the hand-judged experiences (bench/datasets/judged_experiences.json):
would this item help or mislead an agent on a new task of this kind?

Each judged entry is the exact text an agent was served (an item's replay when it was the same
case, else its advice), the dataset, the judgement (`helpful`, `neutral` or `misleading`) and a
one-line reason, written by a person reading the served items of a bench/quality.py run
(`--answers DIR`). A served item whose text was judged counts; the figures are the shares of
the judged served items (probe × item, first three of each answer) that are helpful and
misleading, with how many served items the judgements cover. Changed wording is no longer
judged: coverage says so.
"""

from __future__ import annotations

import json
from pathlib import Path

JUDGED = Path(__file__).resolve().parent / "datasets" / "judged_experiences.json"
FIRST = 3


def served_text(item: dict) -> str:
    return item.get("replay") or item["advice"]


def judged_figures(dataset: str, answers: list[dict]) -> dict:
    if not JUDGED.exists():
        return {}
    judged = {
        e["text"]: e["judgement"]
        for e in json.loads(JUDGED.read_text())["experiences"]
        if e["dataset"] == dataset
    }
    served = [served_text(i) for a in answers for i in a["items"][:FIRST]]
    found = [judged[t] for t in served if t in judged]
    if not found:
        return {"judged_entries": len(judged), "served": len(served), "covered": 0}
    return {
        "judged_entries": len(judged),
        "served": len(served),
        "covered": len(found),
        "helpful_share": round(found.count("helpful") / len(found), 3),
        "misleading_share": round(found.count("misleading") / len(found), 3),
    }
