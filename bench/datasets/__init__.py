"""Converters from public agent runs (../shared/datasets) into hindsight's native trajectories.

Each converter reads the published file as it is and returns `Run`s: the native `POST
/api/v1/traces` body plus what the quality benchmark needs to split and judge (a group key:
the question, or the product kind). Nothing here looks at labels or tunes anything; it maps a
format, like an SDK integration would.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _datasets_dir() -> Path:
    """$HINDSIGHT_DATASETS, else `shared/datasets` beside the checkout, else /work/shared/..."""
    if os.environ.get("HINDSIGHT_DATASETS"):
        return Path(os.environ["HINDSIGHT_DATASETS"])
    for candidate in (
        Path(__file__).resolve().parents[3] / "shared" / "datasets",
        Path("/work/shared/datasets"),
    ):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "the public datasets were not found: set HINDSIGHT_DATASETS to the folder that holds "
        "reflexion-hotpotqa/ and react-webshop/"
    )


DATASETS = _datasets_dir()


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
        """The task as an agent would ask recall for it (an import body may have none: then the
        converter says what the agent knows before its first action)."""
        return self.meta.get("query") or self.body["task"]
