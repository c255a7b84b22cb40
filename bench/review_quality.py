"""Review quality read from a benchmark site's database: the share of reviewed runs with an
experience (by outcome), label distribution, merges and merge proposals, advice that reads
badly (greeting scene, cut JSON, bare tool lists), and agreement with the hand-labelled gold set."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from bench.datasets import Run
from bench.gold import GOLD, agreement
from bench.site_api import Db

_GREETING = re.compile(
    r"^\W*(hi|hey|hello|hiya|good (morning|afternoon|evening)|greetings|thanks|thank you)\b",
    re.I,
)
_CUT_JSON = re.compile(r"[{\[]\s*\"[^}\]]*$|[{\[][^}\]]*…")
_TOOL_LIST = re.compile(r",\s*first use [\w.-]+(, then [\w.-]+)*\.?$")


def advice_problems(advice: str, scene: str) -> list[str]:
    """What makes an experience read badly: a greeting for a scene, JSON cut off mid-way, or
    advice that is nothing but a list of tool names."""
    problems = []
    quoted = re.search(r'task like "([^"]*)"', advice)
    if _GREETING.match(scene or "") or (quoted and _GREETING.match(quoted.group(1))):
        problems.append("greeting scene")
    if _CUT_JSON.search(advice) or advice.count("{") != advice.count("}"):
        problems.append("cut JSON")
    if _TOOL_LIST.search(advice.strip()):
        problems.append("bare tool list")
    return problems


def review_figures(db: Db, project: int, runs: list[Run]) -> dict:
    outcome_of = {r.external_id: r.body["outcome"] for r in runs}
    traces = db.rows(
        "SELECT t.id, t.external_id, t.review_status, t.review_status_reason, "
        "EXISTS (SELECT 1 FROM experiences_experiencesource s WHERE s.trace_id = t.id) "
        "FROM traces_trace t WHERE t.project_id = %s",
        project,
    )
    status = Counter(row[2] for row in traces)
    yield_by_outcome: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for _, external_id, review_status, _reason, has_experience in traces:
        if review_status == "reviewed":
            pair = yield_by_outcome[outcome_of[external_id]]
            pair[0] += int(has_experience)
            pair[1] += 1
    labels = db.rows(
        "SELECT t.outcome, s.label, count(*) FROM traces_step s JOIN traces_trace t ON "
        "t.id = s.trace_id WHERE t.project_id = %s AND s.label <> '' GROUP BY 1, 2",
        project,
    )
    distribution: dict[str, dict[str, int]] = defaultdict(dict)
    for outcome, label, count in labels:
        distribution[outcome][label] = count
    experiences = db.rows(
        "SELECT advice, coalesce(nullif(summary, ''), task), polarity FROM experiences_experience "
        "WHERE project_id = %s AND merged_into_id IS NULL",
        project,
    )
    problems = Counter(p for advice, task, _ in experiences for p in advice_problems(advice, task))
    (open_proposals,) = db.rows(
        "SELECT count(*) FROM experiences_mergeproposal WHERE project_id = %s", project
    )[0]
    (all_experiences,) = db.rows(
        "SELECT count(*) FROM experiences_experience WHERE project_id = %s", project
    )[0]
    (auto_merges,) = db.rows(
        "SELECT count(*) FROM experiences_experiencemerge WHERE project_id = %s", project
    )[0]
    reviewed = sum(p[1] for p in yield_by_outcome.values())
    with_experience = sum(p[0] for p in yield_by_outcome.values())
    return {
        "review_status": dict(status),
        "yield": round(with_experience / reviewed, 3) if reviewed else 0.0,
        "yield_by_outcome": {o: f"{a}/{b}" for o, (a, b) in sorted(yield_by_outcome.items())},
        "labels_by_outcome": {o: dict(sorted(d.items())) for o, d in sorted(distribution.items())},
        "experiences": all_experiences,
        "experiences_unmerged": len(experiences),
        "polarity": dict(Counter(p for _, _, p in experiences)),
        "auto_merges": auto_merges,
        "merge_proposals": open_proposals,
        "proposals_per_100": round(100 * open_proposals / all_experiences, 1)
        if all_experiences
        else 0.0,
        "advice_problems": dict(problems),
    }


def gold_figures(db: Db, projects: list[int]) -> dict:
    if not GOLD.exists():
        return {}
    gold = {r["external_id"]: r for r in json.loads(GOLD.read_text())["runs"]}
    rows = db.rows(
        "SELECT t.external_id, s.index, s.label FROM traces_step s JOIN traces_trace t ON "
        "t.id = s.trace_id WHERE t.project_id = ANY(%s) AND t.external_id = ANY(%s)",
        projects,
        list(gold),
    )
    machine = {(e, i): label for e, i, label in rows}
    # Only the gold runs this bench ingested: a HotpotQA-only run holds none of WebShop's, and
    # counted as "unlabelled" they read as disagreement (kappa 0.27 instead of 0.74).
    ingested = {e for e, _, _ in rows}
    pairs = []
    for external_id, run in gold.items():
        if external_id not in ingested:
            continue
        for item in run["labels"]:
            got = machine.get((external_id, item["index"]), "")
            pairs.append((item["label"], got or "unlabelled"))
    return agreement(pairs)
