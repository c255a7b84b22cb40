"""What the memory learns from real agent runs, against plain search over the raw tasks.

    .venv/bin/python bench/quality.py [--dataset hotpotqa|webshop|both] [--slice N] [--keep DIR]
                                      [--misses]

Public runs by others (../shared/datasets, converted by bench/datasets) go through the product
as a user's would: a fresh site (`hindsight run` on a temp data dir, offline reviewer and local
embeddings), one project per dataset, the history posted with `POST /api/v1/traces/batch`,
review (and dedup) waited for, then every probe asked with `POST /api/v1/recall` (k 5, the
agent's tool set, candidates included: nobody has approved anything yet).

Splits and relevance (fixed before any tuning):
* HotpotQA — trials 0-3 are the history, trial 4 the probes; relevant = the same question.
* WebShop — episodes whose number is 4 mod 5 are the probes, the rest the history; relevant =
  the same product kind (bench/datasets/webshop_kinds.json: the first kind whose words the
  instruction contains); probes of no kind, or of a kind absent from the history, are not used.
An item of the project's answer is relevant when one of its source trajectories is. Baselines,
in the same run over the same history: TF-IDF over the raw task texts, and the project's own
embedding model over the raw task texts (each ranks the history runs).

Then the probes are ingested too, and review quality is read from the database: share of
reviewed runs with an experience (by outcome), label distribution, merge proposals per 100
experiences, advice problems (greeting scene, cut JSON, bare tool lists), and agreement with
the hand-labelled gold set (bench/datasets/gold_labels.json): per-label precision / recall and
Cohen's kappa. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, free_port  # noqa: E402
from bench.datasets import Run, hotpotqa, tau, webshop  # noqa: E402
from bench.gold import LABELS  # noqa: E402
from bench.ranking import Dense, K, TfIdf, ranking_figures  # noqa: E402
from bench.review_quality import advice_problems, gold_figures, review_figures  # noqa: E402
from bench.site_api import Api, Db, create_key  # noqa: E402

__all__ = ["advice_problems", "main"]  # advice_problems: tests/bench check it through here

TOOLS = {"hotpotqa": ["Search", "Lookup", "Finish"], "webshop": ["search", "click"]}
ENVIRONMENT = {"hotpotqa": ["wikipedia"], "webshop": ["webshop"]}


# ---------------------------------------------------------------------------- splits


@dataclass
class Split:
    dataset: str
    history: list[Run]
    probes: list[Run]
    extra: list[Run] = field(default_factory=list)  # ingested after probing (gold runs, stats)
    # What the agent sends with its recall when the dataset says it (else TOOLS / ENVIRONMENT).
    tools: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)


def split(dataset: str, slice_: int | None, tau_file: Path | None = None) -> Split:
    if dataset == "tau":
        assert tau_file is not None
        runs = tau.load(tau_file)
        if slice_:
            keep = list(dict.fromkeys(r.group for r in runs))[:slice_]
            runs = [r for r in runs if r.group in keep]
        # The agent's tool set and environment are what it would send with its recall.
        tools = sorted(
            {c["function"]["name"] for r in runs for m in r.body["messages"]
             for c in m.get("tool_calls") or []}
        )  # fmt: skip
        history = [r for r in runs if r.split_key <= 2]
        probes = [r for r in runs if r.split_key == 3]
        return Split(dataset, history, probes, tools=tools, environment=runs[0].body["environment"])
    if dataset == "hotpotqa":
        runs = hotpotqa.load()
        if slice_:
            keep = list(dict.fromkeys(r.group for r in runs))[:slice_]
            runs = [r for r in runs if r.group in keep]
        history = [r for r in runs if r.split_key <= 3]
        probes = [r for r in runs if r.split_key == 4]
    else:
        runs = webshop.load()
        if slice_:
            runs = runs[:slice_]
        history = [r for r in runs if r.split_key % 5 != 4]
        held = [r for r in runs if r.split_key % 5 == 4]
        kinds = {r.group for r in history}
        probes = [r for r in held if r.group and r.group in kinds]
        probes_ids = {r.external_id for r in probes}
        return Split(dataset, history, probes, [r for r in held if r.external_id not in probes_ids])
    return Split(dataset, history, probes)


# ---------------------------------------------------------------------------- one dataset


def recall_hits(
    api: Api, db: Db, data: Split, project: int, show_misses: bool = False
) -> tuple[list[list[bool]], dict]:
    groups = {r.external_id: r.group for r in data.history}
    tasks = {r.external_id: r.task for r in data.history}
    outcomes = {r.external_id: r.body["outcome"] for r in data.history}
    repeated = data.dataset in ("hotpotqa", "tau")  # the same task asked again
    trace_external = db.trace_ids(project)
    sources: dict[int, list[str]] = defaultdict(list)
    for experience_id, trace_id in db.rows(
        "SELECT s.experience_id, s.trace_id FROM experiences_experiencesource s "
        "JOIN experiences_experience e ON e.id = s.experience_id WHERE e.project_id = %s",
        project,
    ):
        sources[experience_id].append(trace_external[trace_id])
    polarity = dict(
        db.rows("SELECT id, polarity FROM experiences_experience WHERE project_id = %s", project)
    )
    hits, lesson_probes, lesson_carried, empty = [], 0, 0, 0
    latencies = []
    for probe in data.probes:
        started = time.perf_counter()
        answer = api.call("POST", "recall", {
            "task": probe.task, "tools": data.tools or TOOLS[data.dataset],
            "environment": data.environment or ENVIRONMENT[data.dataset], "k": K,
            "include_candidates": True,
            "include_warnings": False,
        })  # fmt: skip
        latencies.append((time.perf_counter() - started) * 1000)
        items = answer["items"]
        empty += not items
        row = [
            any(groups.get(s) == probe.group for s in sources[i["experience_id"]]) for i in items
        ]
        hits.append(row + [False] * (K - len(row)))
        if show_misses and not any(row[:3]):
            print_miss(probe, [sources[i["experience_id"]] for i in items[:3]], groups, tasks)
        # A question whose earlier trials include a failure: does the first answer carry it?
        failed_before = [
            e for e, g in groups.items() if g == probe.group and outcomes[e] != "success"
        ]
        if repeated and failed_before:
            lesson_probes += 1
            if items and row[0]:
                first = items[0]
                from_failure = set(sources[first["experience_id"]]) & set(failed_before)
                says_lesson = re.search(r"\b(do not|don't|avoid|instead)\b", first["advice"], re.I)
                if (from_failure or polarity.get(first["experience_id"]) == "failure") and (
                    says_lesson
                ):
                    lesson_carried += 1
    extra = {
        "probes_with_no_items": empty,
        "recall_ms_median": round(sorted(latencies)[len(latencies) // 2], 1),
    }
    if lesson_probes:
        extra["lesson_first_share"] = round(lesson_carried / lesson_probes, 3)
        extra["lesson_probes"] = lesson_probes
    return hits, extra


def print_miss(probe: Run, answer: list[list[str]], groups: dict, tasks: dict) -> None:
    """A probe with nothing relevant in the first 3: what it asked and what came back instead."""
    print(f"miss [{probe.group}] {probe.task[:150]}", file=sys.stderr)
    for rank, source_ids in enumerate(answer, 1):
        kinds = sorted({str(groups.get(s)) for s in source_ids})
        print(f"  {rank}. {kinds} {tasks.get(source_ids[0], '?')[:120]}", file=sys.stderr)


def baseline_hits(data: Split, ranker) -> list[list[bool]]:
    hits = []
    for probe in data.probes:
        order = ranker.rank(probe.task)[:K]
        hits.append([data.history[i].group == probe.group for i in order])
    return hits


def evaluate(site: Site, base: str, data: Split, show_misses: bool = False) -> tuple[dict, int]:
    key = create_key(site, data.dataset)
    api, db = Api(base, key), Db(site.data_dir)
    project = db.project_id(data.dataset)
    started = time.monotonic()
    api.ingest(data.history)
    waited = db.wait_idle(project)
    review_seconds = time.monotonic() - started
    print(f"[{data.dataset}] {len(data.history)} history runs reviewed in {review_seconds:.1f} s",
          file=sys.stderr)  # fmt: skip
    hits, extra = recall_hits(api, db, data, project, show_misses)
    documents = [r.task for r in data.history]
    figures = {
        "history": len(data.history),
        "probes": len(data.probes),
        "project": ranking_figures(hits) | extra,
        "tfidf_tasks": ranking_figures(baseline_hits(data, TfIdf(documents))),
        "minilm_tasks": ranking_figures(baseline_hits(data, Dense(documents))),
        "review_seconds": round(review_seconds, 1),
        "idle_wait_seconds": round(waited, 1),
    }
    best = max(figures["tfidf_tasks"]["hit@3"], figures["minilm_tasks"]["hit@3"])
    figures["hit@3_margin_over_best_baseline"] = round(figures["project"]["hit@3"] - best, 3)
    # Then everything else too, for review quality over all runs (the gold set included).
    api.ingest(data.probes + data.extra)
    db.wait_idle(project)
    figures["review"] = review_figures(db, project, data.history + data.probes + data.extra)
    return figures, project


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["hotpotqa", "webshop", "both", "tau"],
                        default="both")  # fmt: skip
    parser.add_argument(
        "--tau", type=Path, default=None,
        help="a τ-bench historical_trajectories/*.json file (for --dataset tau)",
    )  # fmt: skip
    parser.add_argument("--slice", type=int, default=None,
                        help="HotpotQA: first N questions; WebShop: first N episodes")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, help="data dir to keep (default: temp)")
    parser.add_argument(
        "--misses", action="store_true", help="print the probes with nothing relevant in the top 3"
    )
    args = parser.parse_args(argv)
    if args.dataset == "tau":
        if not args.tau or not args.tau.is_file():
            parser.error("--dataset tau needs --tau FILE (sierra-research/tau-bench's "
                         "historical_trajectories/gpt-4o-airline.json, say)")  # fmt: skip
    datasets = ["hotpotqa", "webshop"] if args.dataset == "both" else [args.dataset]
    with tempfile.TemporaryDirectory(prefix="hindsight-quality-") as tmp:
        data_dir = args.keep or Path(tmp) / "data"
        env = {"HINDSIGHT_REVIEWER": "heuristic", "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
               "OPENAI_BASE_URL": "", "HINDSIGHT_EMBEDDING_BASE_URL": ""}  # fmt: skip
        site = Site(data_dir, free_port(), env)
        site.start()
        base = f"http://127.0.0.1:{site.port}"
        result: dict = {}
        projects = []
        try:
            for name in datasets:
                result[name], project = evaluate(
                    site, base, split(name, args.slice, args.tau), args.misses
                )
                projects.append(project)
            if args.dataset != "tau":  # the gold set labels HotpotQA and WebShop runs
                result["gold"] = gold_figures(Db(site.data_dir), projects)
        finally:
            site.stop()
    for name in datasets:
        figures = result[name]
        print(f"{name}: {figures['history']} history runs, {figures['probes']} probes")
        for system in ("project", "tfidf_tasks", "minilm_tasks"):
            f = figures[system]
            print(f"  {system:13} hit@1 {f['hit@1']:.3f}  hit@3 {f['hit@3']:.3f}  "
                  f"hit@5 {f['hit@5']:.3f}  MRR {f['mrr']:.3f}")  # fmt: skip
        review = figures["review"]
        print(f"  yield {review['yield']:.3f} {review['yield_by_outcome']}; proposals/100 "
              f"{review['proposals_per_100']}; problems {review['advice_problems']}")  # fmt: skip
    if result.get("gold"):
        gold = result["gold"]
        print(f"gold set: {gold['steps']} steps, kappa {gold['kappa']}, " + ", ".join(
            f"{label} P {gold[label]['precision']} R {gold[label]['recall']}" for label in LABELS
        ))  # fmt: skip
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
