"""What recall and the warnings endpoint answer, as small read-only objects.

Each keeps the full JSON in `raw`, so fields the server adds later are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RecallItem:
    experience_id: int
    advice: str
    score: float
    score_parts: dict[str, Any]
    environment_match: bool | None  # None when the query gave no environment
    polarity: str
    path: list[Any]
    raw: dict[str, Any] = field(repr=False)
    kind: str = "episode"  # episode (one run), workflow or insight (a task family's)
    same_instance: bool = False  # the very same case: `replay` holds that run's literal values
    replay: str = ""
    sources: list[str] = field(default_factory=list)  # external ids of the runs it came from

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecallItem:
        return cls(
            experience_id=data["experience_id"],
            advice=data.get("advice", ""),
            score=float(data.get("score", 0.0)),
            score_parts=dict(data.get("score_parts") or {}),
            environment_match=data.get("environment_match"),
            polarity=data.get("polarity", ""),
            path=list(data.get("path") or []),
            raw=data,
            kind=data.get("kind") or "episode",
            same_instance=bool(data.get("same_instance")),
            replay=data.get("replay") or "",
            sources=list(data.get("sources") or []),
        )


@dataclass(frozen=True)
class ToolWarning:
    pattern_id: int
    message: str
    occurrences: int
    instead: str
    raw: dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        """The message, with what to do instead when the message does not already say it."""
        if self.instead and self.instead not in self.message:
            return f"{self.message} Instead: {self.instead}"
        return self.message

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolWarning:
        return cls(
            pattern_id=data.get("pattern_id", 0),
            message=data.get("message", ""),
            occurrences=int(data.get("occurrences", 0)),
            instead=data.get("instead", "") or "",
            raw=data,
        )


@dataclass(frozen=True)
class Recall:
    """One recall: `prompt_block` is ready to sit after the tool descriptions and before the
    user's input; `id` is what `HindsightClient.recall_feedback` takes."""

    id: int | str
    items: list[RecallItem]
    prompt_block: str
    warnings: list[ToolWarning]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recall:
        return cls(
            id=data["id"],
            items=[RecallItem.from_json(item) for item in data.get("items") or []],
            prompt_block=data.get("prompt_block", "") or "",
            warnings=[ToolWarning.from_json(w) for w in data.get("warnings") or []],
            raw=data,
        )
