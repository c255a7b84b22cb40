"""The offline reviewer against the hand-labelled gold set, in process (no site, no database).

    .venv/bin/python bench/gold.py [--show RUN_ID ...]

The gold set (bench/datasets/gold_labels.json) labels every step of 50 public runs by the
causal rule. Each run is turned into the reviewer's input exactly as ingest stores it (observation
summary and raw text), labelled by `traces.review.heuristic.label_steps`, and compared: per-label
precision and recall, accuracy and Cohen's kappa. bench/quality.py reports the same figures from
the labels the running site stored. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOLD = ROOT / "bench" / "datasets" / "gold_labels.json"
LABELS = ("necessary", "redundant", "misleading", "failed")


def review_request(body: dict):
    """The reviewer's input for a native trajectory body, as ingest and review build it."""
    from django.conf import settings

    from traces.observations import as_text, cap, summarize
    from traces.review.service import review_request as build
    from traces.review.types import StepView, TraceView, Window

    trace = TraceView(
        id=0, task=body["task"], task_type=body.get("task_type", "other"),
        intent=body.get("intent", ""), agent=body["agent"],
        environment=body.get("environment", []), outcome=body.get("outcome", "unknown"),
        feedback=body.get("feedback", ""), final_answer=body.get("final_answer", ""),
        duration_ms=None,
    )  # fmt: skip
    steps = []
    for raw_step in body["steps"]:
        raw_text = as_text(raw_step.get("observation"))
        steps.append(StepView(
            index=raw_step["index"], kind=raw_step["kind"], tool=raw_step.get("tool", ""),
            arguments=raw_step.get("arguments") or {},
            observation=summarize(raw_text, chars=settings.HINDSIGHT_OBSERVATION_SUMMARY_CHARS),
            observation_raw=cap(raw_text, limit=settings.HINDSIGHT_OBSERVATION_RAW_CAP)[0],
            is_error=bool(raw_step.get("is_error")), error_type=raw_step.get("error_type", ""),
            content=raw_step.get("content", ""), agent=body["agent"],
        ))  # fmt: skip
    window = Window("full", "size", steps[0].index, steps[-1].index)
    return build(trace, steps, window)


def agreement(pairs: list[tuple[str, str]]) -> dict:
    """Per-label precision / recall of the machine against the gold labels, and Cohen's kappa."""
    n = len(pairs)
    if not n:
        return {}
    figures: dict = {"steps": n}
    for label in LABELS:
        tp = sum(1 for g, m in pairs if g == label and m == label)
        predicted = sum(1 for _, m in pairs if m == label)
        actual = sum(1 for g, _ in pairs if g == label)
        figures[label] = {
            "precision": round(tp / predicted, 3) if predicted else None,
            "recall": round(tp / actual, 3) if actual else None,
            "gold": actual,
        }
    observed = sum(1 for g, m in pairs if g == m) / n
    gold_counts, machine_counts = Counter(g for g, _ in pairs), Counter(m for _, m in pairs)
    expected = sum(gold_counts[c] * machine_counts[c] for c in gold_counts) / (n * n)
    figures["accuracy"] = round(observed, 3)
    figures["kappa"] = round((observed - expected) / (1 - expected), 3) if expected < 1 else 1.0
    figures["unlabelled"] = machine_counts["unlabelled"]
    return figures


def gold_runs() -> dict[str, dict]:
    return {r["external_id"]: r for r in json.loads(GOLD.read_text())["runs"]}


def evaluate(show: list[str] | None = None) -> dict:
    from hindsight_site.bootstrap import setup_django

    setup_django()
    from bench.datasets import hotpotqa, webshop
    from traces.review.heuristic import label_steps

    runs = {r.external_id: r for r in hotpotqa.load() + webshop.load()}
    pairs: list[tuple[str, str]] = []
    by_dataset: dict[str, list[tuple[str, str]]] = {}
    for external_id, gold in gold_runs().items():
        run = runs[external_id]
        machine = label_steps(review_request(run.body))
        rows = [(g["label"], machine[g["index"]].label) for g in gold["labels"]]
        pairs += rows
        by_dataset.setdefault(run.dataset, []).extend(rows)
        if show and external_id in show:
            print(f"== {external_id} {run.body['outcome']}: {run.task[:90]}")
            for g, step in zip(gold["labels"], run.body["steps"], strict=True):
                m = machine[g["index"]]
                mark = "  " if m.label == g["label"] else "✗ "
                what = step.get("tool") or step["kind"]
                text = json.dumps(step.get("arguments")) if step.get("tool") else step["content"]
                print(f"{mark}{g['index']:2} gold {g['label']:10} got {m.label:10} {what:13} "
                      f"{text[:50]:50} | {m.reason[:60]}")  # fmt: skip
    figures = agreement(pairs)
    figures["by_dataset"] = {d: agreement(p) for d, p in by_dataset.items()}
    return figures


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")
    os.environ.setdefault("HINDSIGHT_EMBEDDED", "off")  # settings only: no PostgreSQL / Redis
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", nargs="*", default=None, help="print these runs step by step")
    args = parser.parse_args()
    figures = evaluate(args.show)
    for name, part in [("all", figures)] + list(figures["by_dataset"].items()):
        print(f"{name:9} kappa {part['kappa']:.3f} accuracy {part['accuracy']:.3f}  " + "  ".join(
            f"{label} P {part[label]['precision']} R {part[label]['recall']}" for label in LABELS
        ))  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
