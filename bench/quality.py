"""What the memory learns from real agent runs, against plain search over the raw tasks.

    .venv/bin/python bench/quality.py [--dataset hotpotqa|webshop|both|tau|all|bash|sql]
                                      [--tau FILE]
                                      [--intercode DIR]
                                      [--slice [DATASET=]N] [--keep DIR] [--misses]
                                      [--without-declarations] [--answers DIR]

Public runs by others (../shared/datasets, converted by bench/datasets) go through the product
as a user's would: a fresh site (`hindsight run` on a temp data dir, offline reviewer and local
embeddings), one project per dataset, the history posted with `POST /api/v1/traces/batch`,
review (and dedup) waited for, the keyword statistics refreshed (what beat's minute does on a
user's site: bench/site_api.keyword_statistics_refresh), then every probe asked with
`POST /api/v1/recall` (k 5, the
agent's tool set, candidates included: nobody has approved anything yet).

Splits and relevance (fixed before any tuning):
* HotpotQA — trials 0-3 are the history, trial 4 the probes; relevant = the same question.
* InterCode Bash (`--intercode`, a checkout of princeton-nlp/intercode; bench/datasets/
  intercode.py) — gpt-4's runs of the 200 NL2Bash tasks are the probes, three other models' runs
  of the same tasks the history; relevant = the same task.
* InterCode SQL (the same `--intercode` checkout; bench/datasets/intercode_sql.py) — every sixth
  of Spider's 1,034 dev questions by default (173 tasks: a bench run under ten minutes), gpt-4's
  runs the probes, six other models' runs of the same tasks the history; relevant = the same task.
* WebShop — episodes whose number is 4 mod 5 are the probes, the rest the history; relevant =
  the same product kind (bench/datasets/webshop_kinds.json: the first kind whose words the
  instruction contains); probes of no kind, or of a kind absent from the history, are not used.
An item of the project's answer is relevant when one of its source trajectories is. Baselines,
in the same run over the same history: TF-IDF over the raw task texts, and the project's own
embedding model over the raw task texts (each ranks the history runs).

What the served items say (bench/lesson_quality.py, each dataset's own gold): lessons that forbid
a read-only call, consequences that are JSON keys, items instructing another run's literals,
state-changing calls the task does not need, wrong writes warned of, the prompt block's length.

Tasks never seen (a family split, in a second project of the same site): HotpotQA and τ-bench
hold out every fifth question / task whole (all its trials), the history is the rest; relevant
= the same family by the dataset's gold (HotpotQA: the gold answer's kind, yes/no, a number or
date, or a name; τ-bench: the set of state-changing gold actions; InterCode Bash, every fifth
task held out likewise: the gold command's operative program, `rm`, `md5sum`, `find`; InterCode
SQL, every fifth task held out likewise: the same database, bench/splits.unseen_split; WebShop's
own probes are
already unseen tasks, relevant by product kind). A project item is relevant when most of its
source runs are. The first item's tools are judged against the gold too
(lesson_quality.right_tools_first).

Served items are also matched against the hand-judged experiences (bench/judged.py).

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
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, free_port  # noqa: E402
from bench.datasets import Run  # noqa: E402
from bench.judged import judged_figures  # noqa: E402
from bench.lesson_quality import lesson_figures, right_tools_first  # noqa: E402
from bench.quality_report import print_figures  # noqa: E402
from bench.ranking import Dense, K, TfIdf, ranking_figures  # noqa: E402
from bench.review_quality import advice_problems, gold_figures, review_figures  # noqa: E402
from bench.site_api import Api, Db, create_key, keyword_statistics_refresh  # noqa: E402
from bench.splits import ENVIRONMENT, TOOLS, Split, family, slice_arg, split, unseen_split  # noqa: E402

__all__ = ["advice_problems", "main"]  # advice_problems: tests/bench check it through here

# ---------------------------------------------------------------------------- one dataset


ANSWERS_DIR: Path | None = None  # --answers: where each split's answers are written
SERIAL = False  # --serial: the history reviewed after it is all in, in order, by one process


def history_ingest(site: Site, api: Api, runs: list[Run]) -> None:
    """The history through the batch API, reviewed as it comes (the user's case) or, with
    --serial, held until it is all in and then reviewed in order by one process: what a review
    says depends on what the project knew when it ran, so two codes compare run for run only
    when the reviews run in the same order."""
    if SERIAL:
        site.pause_worker()
    try:
        api.ingest(runs)
    finally:
        site.resume_worker()


def _write_answers(data: Split, answers: list[dict]) -> None:
    if ANSWERS_DIR is None:
        return
    ANSWERS_DIR.mkdir(parents=True, exist_ok=True)
    with (ANSWERS_DIR / f"{data.dataset}.jsonl").open("w") as out:
        for probe, answer in zip(data.probes, answers, strict=True):
            row = {"probe": probe.external_id, "group": probe.group, "family": family(probe),
                   "task": probe.task, "answer": answer}  # fmt: skip
            out.write(json.dumps(row) + "\n")


def recall_answers(api: Api, data: Split) -> tuple[list[dict], list[float]]:
    """Every probe's recall answer, as an agent asks it (k 5, its tools, candidates included)."""
    dataset = data.dataset.removesuffix("-unseen")
    answers, latencies = [], []
    for probe in data.probes:
        started = time.perf_counter()
        answers.append(api.call("POST", "recall", {
            "task": probe.task, "tools": data.tools or TOOLS[dataset],
            "environment": data.environment or ENVIRONMENT[dataset], "k": K,
            "include_candidates": True,
            "include_warnings": False,
        }))  # fmt: skip
        latencies.append((time.perf_counter() - started) * 1000)
    _write_answers(data, answers)
    return answers, latencies


def recall_hits(
    api: Api, db: Db, data: Split, project: int, show_misses: bool = False, by_family=False
) -> tuple[list[list[bool]], dict, list[dict]]:
    key = family if by_family else (lambda r: r.group)
    groups = {r.external_id: key(r) for r in data.history}
    tasks = {r.external_id: r.task for r in data.history}
    outcomes = {r.external_id: r.body["outcome"] for r in data.history}
    repeated = data.dataset in ("hotpotqa", "tau", "bash", "sql")  # the same task asked again
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
    answers, latencies = recall_answers(api, data)
    hits, lesson_probes, lesson_carried, empty = [], 0, 0, 0
    for probe, answer in zip(data.probes, answers, strict=True):
        items = answer["items"]
        empty += not items
        wanted = key(probe)
        if by_family:  # most of an item's sources in the probe's family
            row = []
            for i in items:
                counts = Counter(groups.get(s) for s in sources[i["experience_id"]])
                row.append(bool(counts) and counts.most_common(1)[0][0] == wanted)
        else:
            row = [any(groups.get(s) == wanted for s in sources[i["experience_id"]]) for i in items]
        hits.append(row + [False] * (K - len(row)))
        if show_misses and not any(row[:3]):
            print_miss(probe, [sources[i["experience_id"]] for i in items[:3]], groups, tasks)
        # A question whose earlier trials include a failure: does the first answer carry it?
        failed_before = [
            e for e, g in groups.items() if g == probe.group and outcomes[e] != "success"
        ]
        if repeated and failed_before and not by_family:
            lesson_probes += 1
            if items and row[0]:
                first = items[0]
                from_failure = set(sources[first["experience_id"]]) & set(failed_before)
                served = first.get("replay") or first["advice"]  # the same case: its replay
                says_lesson = re.search(
                    r"\b(do not|don't|avoid|instead|was refused|was not right|before you)\b",
                    served,
                    re.I,
                )
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
    kinds = Counter(a["items"][0].get("kind", "episode") for a in answers if a["items"])
    extra["first_item_kinds"] = dict(kinds)
    return hits, extra, answers


def print_miss(probe: Run, answer: list[list[str]], groups: dict, tasks: dict) -> None:
    """A probe with nothing relevant in the first 3: what it asked and what came back instead."""
    print(f"miss [{probe.group}] {probe.task[:150]}", file=sys.stderr)
    for rank, source_ids in enumerate(answer, 1):
        kinds = sorted({str(groups.get(s)) for s in source_ids})
        print(f"  {rank}. {kinds} {tasks.get(source_ids[0], '?')[:120]}", file=sys.stderr)


def baseline_hits(data: Split, ranker, by_family: bool = False) -> list[list[bool]]:
    key = family if by_family else (lambda r: r.group)
    hits = []
    for probe in data.probes:
        order = ranker.rank(probe.task)[:K]
        hits.append([key(data.history[i]) == key(probe) for i in order])
    return hits


def ranking_against_baselines(
    api: Api, db: Db, data: Split, project: int, show_misses: bool, by_family: bool
) -> tuple[dict, list[dict]]:
    hits, extra, answers = recall_hits(api, db, data, project, show_misses, by_family)
    documents = [r.task for r in data.history]
    figures = {
        "history": len(data.history),
        "probes": len(data.probes),
        "project": ranking_figures(hits) | extra,
        "tfidf_tasks": ranking_figures(baseline_hits(data, TfIdf(documents), by_family)),
        "minilm_tasks": ranking_figures(baseline_hits(data, Dense(documents), by_family)),
    }
    best = max(figures["tfidf_tasks"]["hit@3"], figures["minilm_tasks"]["hit@3"])
    figures["hit@3_margin_over_best_baseline"] = round(figures["project"]["hit@3"] - best, 3)
    return figures, answers


def evaluate(site: Site, base: str, data: Split, show_misses: bool = False) -> tuple[dict, int]:
    key = create_key(site, data.dataset)
    api, db = Api(base, key), Db(site.data_dir)
    project = db.project_id(data.dataset)
    started = time.monotonic()
    history_ingest(site, api, data.history)
    waited = db.wait_idle(project)
    review_seconds = time.monotonic() - started
    keyword_statistics_refresh(site)
    print(f"[{data.dataset}] {len(data.history)} history runs reviewed in {review_seconds:.1f} s",
          file=sys.stderr)  # fmt: skip
    unseen_tasks = data.dataset == "webshop"  # its probes are tasks never seen
    figures, answers = ranking_against_baselines(
        api, db, data, project, show_misses, by_family=False
    )
    figures |= {"review_seconds": round(review_seconds, 1), "idle_wait_seconds": round(waited, 1)}
    figures["lessons"] = lesson_figures(data.dataset, data.history, data.probes, answers)
    figures["judged"] = judged_figures(data.dataset, answers, [p.group for p in data.probes])
    if unseen_tasks:
        figures["right_tools_first"] = right_tools_first(
            data.dataset, data.probes, answers, data.history
        )
    held_out = unseen_split(data)
    if held_out is not None:
        figures["unseen"] = evaluate_unseen(site, base, held_out, show_misses)
    # Then everything else too, for review quality over all runs (the gold set included).
    api.ingest(data.probes + data.extra)
    db.wait_idle(project)
    figures["review"] = review_figures(db, project, data.history + data.probes + data.extra)
    return figures, project


def evaluate_unseen(site: Site, base: str, data: Split, show_misses: bool) -> dict:
    """The family split in its own project: tasks never seen, relevant by family."""
    key = create_key(site, data.dataset)
    api, db = Api(base, key), Db(site.data_dir)
    project = db.project_id(data.dataset)
    history_ingest(site, api, data.history)
    db.wait_idle(project)
    keyword_statistics_refresh(site)
    figures, answers = ranking_against_baselines(
        api, db, data, project, show_misses, by_family=True
    )
    dataset = data.dataset.removesuffix("-unseen")
    figures["right_tools_first"] = right_tools_first(dataset, data.probes, answers, data.history)
    figures["lessons"] = lesson_figures(dataset, data.history, data.probes, answers)
    # the domain's judged texts, and the judgements made for these tasks
    figures["judged"] = judged_figures(dataset, answers, [p.group for p in data.probes])
    if any("query_before_write" in p.meta for p in data.probes):
        figures["before_first_write"] = _before_first_write(api, db, data, project, dataset)
    return figures


def _before_first_write(api: Api, db: Db, data: Split, project: int, dataset: str) -> dict:
    """A labelled line, not the headline: the same never-seen tasks recalled again with what the
    agent knows just before its first state-changing call (every user turn until then), as an
    agent that recalls at each step would; the baselines get the same text."""
    later = [
        replace(p, meta={**p.meta, "query": p.meta["query_before_write"]}) for p in data.probes
    ]
    asked = replace(data, dataset=f"{data.dataset}-before-write", probes=later)
    figures, answers = ranking_against_baselines(api, db, asked, project, False, by_family=True)
    figures["right_tools_first"] = right_tools_first(dataset, later, answers, data.history)
    return figures


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    choices = ["hotpotqa", "webshop", "both", "tau", "all", "bash", "sql"]
    parser.add_argument("--dataset", choices=choices, default="both")
    parser.add_argument(
        "--tau", type=Path, default=None,
        help="a τ-bench historical_trajectories/*.json file (for --dataset tau / all), inside a "
        "checkout of sierra-research/tau-bench for the tools' declarations",
    )  # fmt: skip
    parser.add_argument(
        "--intercode", type=Path, default=None,
        help="a checkout of princeton-nlp/intercode (for --dataset bash / sql): its data/results/"
        "bash runs and data/nl2bash gold, its data/results/sql runs and data/sql/spider gold",
    )  # fmt: skip
    parser.add_argument(
        "--without-declarations", action="store_true",
        help="send τ-bench transcripts without their tool schemas (the reviewer infers read-only "
        "calls from behaviour and names alone)",
    )  # fmt: skip
    parser.add_argument(
        "--slice", type=slice_arg, action="append", default=[], metavar="[DATASET=]N",
        help="HotpotQA: first N questions; WebShop: first N episodes; τ-bench, InterCode Bash: "
        "first N tasks; InterCode SQL: first N of its every sixth task (DATASET=N for one dataset "
        "only; repeat for several)",
    )  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, help="data dir to keep (default: temp)")
    parser.add_argument(
        "--answers", type=Path, default=None,
        help="write every probe's recall answer to DIR/<split>.jsonl (for reading them)",
    )  # fmt: skip
    parser.add_argument(
        "--misses", action="store_true", help="print the probes with nothing relevant in the top 3"
    )
    parser.add_argument(
        "--serial", action="store_true",
        help="review each history after it is all in, in order, with one worker process: runs "
        "of one code then print the same figures, and two codes compare run for run",
    )  # fmt: skip
    args = parser.parse_args(argv)
    global ANSWERS_DIR, SERIAL
    ANSWERS_DIR, SERIAL = args.answers, args.serial
    if args.dataset in ("tau", "all"):
        if not args.tau or not args.tau.is_file():
            parser.error(f"--dataset {args.dataset} needs --tau FILE (sierra-research/tau-bench's "
                         "historical_trajectories/gpt-4o-airline.json, say)")  # fmt: skip
    has_intercode = args.intercode and (args.intercode / "data").is_dir()
    if args.dataset in ("bash", "sql") and not has_intercode:
        parser.error(f"--dataset {args.dataset} needs --intercode DIR (a checkout of "
                     "princeton-nlp/intercode)")  # fmt: skip
    slices = dict(args.slice)  # dataset (None: every one) -> how many groups
    datasets = {"both": ["hotpotqa", "webshop"], "all": ["hotpotqa", "webshop", "tau"]}.get(
        args.dataset, [args.dataset]
    )
    with tempfile.TemporaryDirectory(prefix="hindsight-quality-") as tmp:
        data_dir = args.keep or Path(tmp) / "data"
        env = {"HINDSIGHT_REVIEWER": "heuristic", "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
               "OPENAI_BASE_URL": "", "HINDSIGHT_EMBEDDING_BASE_URL": ""}  # fmt: skip
        if SERIAL:
            env["HINDSIGHT_WORKER_CONCURRENCY"] = "1"
        site = Site(data_dir, free_port(), env)
        site.start()
        base = f"http://127.0.0.1:{site.port}"
        result: dict = {}
        projects = []
        try:
            for name in datasets:
                size = slices.get(name, slices.get(None))
                data = split(name, size, args.tau, not args.without_declarations, args.intercode)
                result[name], project = evaluate(site, base, data, args.misses)
                projects.append(project)
            if {"hotpotqa", "webshop"} & set(datasets):  # the gold set labels their runs
                result["gold"] = gold_figures(Db(site.data_dir), projects)
        finally:
            site.stop()
    print_figures(result, datasets)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
