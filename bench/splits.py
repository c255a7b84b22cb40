"""How bench/quality.py cuts each dataset into history and probes (fixed before any tuning; the
module docstring of bench/quality.py gives the rules), and the family a run belongs to."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

from bench.datasets import Run, hotpotqa, intercode, intercode_sql, tau, webshop

TOOLS = {"hotpotqa": ["Search", "Lookup", "Finish"], "webshop": ["search", "click"],
         "bash": intercode.TOOLS, "sql": intercode_sql.TOOLS}  # fmt: skip
ENVIRONMENT = {"hotpotqa": ["wikipedia"], "webshop": ["webshop"], "bash": intercode.ENVIRONMENT,
               "sql": intercode_sql.ENVIRONMENT}  # fmt: skip
DATASETS = ("hotpotqa", "webshop", "tau", "bash", "sql")


@dataclass
class Split:
    dataset: str
    history: list[Run]
    probes: list[Run]
    extra: list[Run] = field(default_factory=list)  # ingested after probing (gold runs, stats)
    # What the agent sends with its recall when the dataset says it (else TOOLS / ENVIRONMENT).
    tools: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)


def family(run: Run) -> str:
    """The run's task family by the dataset's gold (what a never-seen task is relevant to)."""
    if run.dataset == "tau":  # the writes the checker expects
        needed = {a["name"] for a in run.meta.get("gold_actions", [])} & set(run.meta["writes"])
        return ",".join(sorted(needed)) or "none"
    if run.dataset == "hotpotqa":
        answer = run.meta.get("gold_answer", "").strip().lower()
        if answer in ("yes", "no"):
            return "yes/no"
        return "number" if re.search(r"\d", answer) else "name"
    if run.dataset == "bash":  # what the gold command does (bench/datasets/intercode.py)
        return run.meta["program"]
    if run.dataset == "sql":  # the database the question is asked of (its tables, its names)
        return run.meta["db"]
    return run.group


def unseen_split(data: Split) -> Split | None:
    """Every fifth group held out whole: its runs are the probes (one per group and trial 0 for
    HotpotQA, every trial for τ-bench), the other groups' runs the history. WebShop: None (its
    probes are unseen tasks already). InterCode SQL's family is the database (`family`): a new
    question on a database the history queried, whose tables and columns (and the errors of
    guessing them) are what the memory can tell an SQL agent; a database held out whole would
    leave it only other schemas' statements, and a gold shape (`JOIN` + `GROUP BY`) is what any
    model already writes."""
    if data.dataset == "webshop":
        return None
    runs = data.history + data.probes
    groups = list(dict.fromkeys(r.group for r in runs))
    held = {g for i, g in enumerate(groups) if i % 5 == 4}
    history = [r for r in runs if r.group not in held]
    # One probe per held task (HotpotQA's trial 0, InterCode's first model); τ-bench: every trial.
    probes = [r for r in runs if r.group in held and (data.dataset == "tau" or r.split_key == 0)]
    if not probes or not history:  # too few tasks to hold any out
        return None
    return Split(f"{data.dataset}-unseen", history, probes, tools=data.tools,
                 environment=data.environment)  # fmt: skip


def split(
    dataset: str,
    slice_: int | None,
    tau_file: Path | None = None,
    declared_tools: bool = True,
    intercode_dir: Path | None = None,
) -> Split:
    if dataset in ("bash", "sql"):  # the first model's runs are the probes, the others' the history
        assert intercode_dir is not None
        # SQL: every intercode_sql.EVERY-th task by default (the module says why), then the slice.
        runs = (intercode if dataset == "bash" else intercode_sql).load(intercode_dir)
        if slice_:
            keep = list(dict.fromkeys(r.group for r in runs))[:slice_]
            runs = [r for r in runs if r.group in keep]
        history = [r for r in runs if r.split_key > 0]
        return Split(dataset, history, [r for r in runs if r.split_key == 0])
    if dataset == "tau":
        assert tau_file is not None
        runs = tau.load(tau_file, declared_tools=declared_tools)
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


def slice_arg(text: str) -> tuple[str | None, int]:
    """`--slice N` (every dataset) or `--slice DATASET=N` (that one)."""
    name, _, size = text.rpartition("=")
    if name and name not in DATASETS:
        raise argparse.ArgumentTypeError(f"no dataset {name!r} ({', '.join(DATASETS)})")
    try:
        return name or None, int(size)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{size!r} is not a number") from None
