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
import math
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Site, free_port  # noqa: E402
from bench.datasets import Run, hotpotqa, webshop  # noqa: E402
from bench.gold import LABELS, agreement  # noqa: E402

GOLD = ROOT / "bench" / "datasets" / "gold_labels.json"
K = 5
TOOLS = {"hotpotqa": ["Search", "Lookup", "Finish"], "webshop": ["search", "click"]}
ENVIRONMENT = {"hotpotqa": ["wikipedia"], "webshop": ["webshop"]}


# ---------------------------------------------------------------------------- splits


@dataclass
class Split:
    dataset: str
    history: list[Run]
    probes: list[Run]
    extra: list[Run] = field(default_factory=list)  # ingested after probing (gold runs, stats)


def split(dataset: str, slice_: int | None) -> Split:
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


# ---------------------------------------------------------------------------- HTTP


class Api:
    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.base}/api/v1/{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        for _attempt in range(20):
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                if error.code != 429:
                    detail = error.read()[:500]
                    raise RuntimeError(f"{method} {path}: {error.code} {detail!r}") from None
                time.sleep(float(error.headers.get("Retry-After", "1")))
        raise RuntimeError(f"{method} {path}: rate limited 20 times")

    def ingest(self, runs: list[Run]) -> None:
        for start in range(0, len(runs), 50):
            batch = [r.body for r in runs[start : start + 50]]
            results = self.call("POST", "traces/batch", {"traces": batch})["results"]
            bad = [r for r in results if r["status"] not in ("created", "duplicate")]
            if bad:
                raise RuntimeError(f"ingest refused: {bad[:3]}")


# ---------------------------------------------------------------------------- database reads


class Db:
    """Read-only figures straight from the site's PostgreSQL (its address in services.json)."""

    def __init__(self, data_dir: Path) -> None:
        import psycopg

        record = json.loads((data_dir / "services.json").read_text())
        self.connection = psycopg.connect(record["database_url"], autocommit=True)

    def rows(self, sql: str, *params) -> list[tuple]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def project_id(self, name: str) -> int:
        return self.rows("SELECT id FROM traces_project WHERE name = %s", name)[0][0]

    def wait_idle(self, project: int, timeout: float = 900) -> float:
        """Until no trace of the project waits for review and no experience for its dedup."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            (busy,) = self.rows(
                "SELECT (SELECT count(*) FROM traces_trace WHERE project_id = %s AND "
                "review_status IN ('pending', 'queued', 'reviewing')) + (SELECT count(*) FROM "
                "experiences_experience WHERE project_id = %s AND merged_into_id IS NULL AND "
                "embedding IS NOT NULL AND status NOT IN ('archived', 'rejected') AND "
                "dedup_checked_version < version)",
                project,
                project,
            )[0]
            if busy == 0:
                return time.monotonic() - started
            time.sleep(0.5)
        raise RuntimeError(f"project {project}: the worker did not finish in {timeout} s")

    def trace_ids(self, project: int) -> dict[int, str]:
        rows = self.rows("SELECT id, external_id FROM traces_trace WHERE project_id = %s", project)
        return dict(rows)


# ---------------------------------------------------------------------------- ranking


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class TfIdf:
    """Plain TF-IDF (smoothed idf, l2-normalised) with cosine similarity."""

    def __init__(self, documents: list[str]) -> None:
        counts = [Counter(_words(d)) for d in documents]
        df = Counter(word for c in counts for word in c)
        n = len(documents)
        self.idf = {w: math.log((1 + n) / (1 + f)) + 1 for w, f in df.items()}
        self.vectors = [self._vector(c) for c in counts]

    def _vector(self, counts: Counter) -> dict[str, float]:
        weights = {w: c * self.idf.get(w, 0.0) for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        return {w: v / norm for w, v in weights.items()}

    def rank(self, query: str) -> list[int]:
        q = self._vector(Counter(_words(query)))
        scores = [sum(q[w] * d.get(w, 0.0) for w in q) for d in self.vectors]
        return sorted(range(len(scores)), key=lambda i: -scores[i])


class Dense:
    """The project's local embedding model over the raw task texts."""

    def __init__(self, documents: list[str]) -> None:
        import numpy as np

        from experiences.embeddings import LocalMiniLM

        share = ROOT / ".venv" / "share" / "hindsight"
        self.model = LocalMiniLM(
            str(share / "tokenizer.json"), str(share / "all-MiniLM-L6-v2-int8-dynamic.onnx")
        )
        vectors = []
        for start in range(0, len(documents), 32):
            vectors.extend(self.model.embed(documents[start : start + 32]))
        self.np, self.matrix = np, np.array(vectors)

    def rank(self, query: str) -> list[int]:
        (vector,) = self.model.embed([query])
        scores = self.matrix @ self.np.array(vector)
        return [int(i) for i in self.np.argsort(-scores)]


def ranking_figures(hits: list[list[bool]]) -> dict[str, float]:
    """hits[p][r]: is the r-th answer to probe p relevant (at most K answers)."""
    n = len(hits) or 1
    figures = {f"hit@{k}": round(sum(any(h[:k]) for h in hits) / n, 3) for k in (1, 3, 5)}
    reciprocal = [next((1 / (i + 1) for i, h in enumerate(row[:K]) if h), 0.0) for row in hits]
    figures["mrr"] = round(sum(reciprocal) / n, 3)
    return figures


# ---------------------------------------------------------------------------- advice checks

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


# ---------------------------------------------------------------------------- one dataset


def recall_hits(
    api: Api, db: Db, data: Split, project: int, show_misses: bool = False
) -> tuple[list[list[bool]], dict]:
    groups = {r.external_id: r.group for r in data.history}
    tasks = {r.external_id: r.task for r in data.history}
    outcomes = {r.external_id: r.body["outcome"] for r in data.history}
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
            "task": probe.task, "tools": TOOLS[data.dataset],
            "environment": ENVIRONMENT[data.dataset], "k": K, "include_candidates": True,
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
        if data.dataset == "hotpotqa" and failed_before:
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
    pairs = []
    for external_id, run in gold.items():
        for item in run["labels"]:
            got = machine.get((external_id, item["index"]), "")
            pairs.append((item["label"], got or "unlabelled"))
    return agreement(pairs)


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


def create_key(site: Site, project: str) -> str:
    import subprocess

    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "create_api_key",
         "--project", project, "--scopes", "ingest,recall,admin"],
        cwd=ROOT, env=site.env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"create_api_key failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["hotpotqa", "webshop", "both"], default="both")
    parser.add_argument("--slice", type=int, default=None,
                        help="HotpotQA: first N questions; WebShop: first N episodes")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, help="data dir to keep (default: temp)")
    parser.add_argument(
        "--misses", action="store_true", help="print the probes with nothing relevant in the top 3"
    )
    args = parser.parse_args(argv)
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
                result[name], project = evaluate(site, base, split(name, args.slice), args.misses)
                projects.append(project)
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
