"""Rankings to compare the product's recall with, and their figures: plain TF-IDF and the
project's local embedding model over the raw task texts; hit@1/3/5 and MRR of the top K."""

from __future__ import annotations

import math
import re
from collections import Counter

from bench.common import ROOT

K = 5


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
