"""Converters from public agent runs (../shared/datasets) into hindsight's native trajectories.

Each converter reads the published file as it is and returns `Run`s: the native `POST
/api/v1/traces` body plus what the quality benchmark needs to split and judge (a group key:
the question, or the product kind). Nothing here looks at labels or tunes anything; it maps a
format, like an SDK integration would.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"


@dataclass
class Run:
    body: dict[str, Any]  # the native trajectory, as POST /api/v1/traces takes it
    dataset: str
    group: str  # runs of the same group are relevant to each other (question / product kind)
    split_key: int  # HotpotQA: the trial (0-4); WebShop: the episode number
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def external_id(self) -> str:
        return self.body["external_id"]

    @property
    def task(self) -> str:
        return self.body["task"]
