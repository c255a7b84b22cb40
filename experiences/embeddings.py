"""Text embeddings behind one small interface: local MiniLM (default, offline) or an
OpenAI-compatible endpoint. Chosen by settings; the model name is stored with every vector."""

import base64
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained on 256-token inputs


class Embedder(Protocol):
    model_name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class LocalMiniLM:
    """all-MiniLM-L6-v2 as ONNX with int8 weights and activations (built at setup by
    scripts/build_embedding_model.py): mean-pooled token embeddings, L2-normalised (384-d).

    Each text is run on its own. Dynamic quantisation takes the activations' scale from the
    whole input tensor, so in a batch a text's vector would depend on its neighbours and on
    their padding (cosine down to 0.974 against the same text alone): a stored experience would
    not match the query that repeats its scene, and dedup thresholds would sit in that noise.
    """

    model_name = "all-MiniLM-L6-v2/int8-dynamic/single"
    dimensions = 384

    def __init__(self, tokenizer_path: str, model_path: str) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        for path, what, script, setting in (
            (tokenizer_path, "tokenizer", "fetch_tokenizer.py", "HINDSIGHT_TOKENIZER_PATH"),
            (
                model_path,
                "embedding model",
                "build_embedding_model.py",
                "HINDSIGHT_LOCAL_MODEL_PATH",
            ),
        ):
            if not Path(path).is_file():
                raise ImproperlyConfigured(
                    f"{what} not found at {path}; run `make run` (or "
                    f"`python scripts/{script} PATH`) or set {setting}"
                )
        self.tokenizer = Tokenizer.from_file(tokenizer_path)
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # its file pads to 128; each text is run alone (see above)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # one core per worker process; workers scale out
        self.session = onnxruntime.InferenceSession(
            model_path, options, providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            encoded = self.tokenizer.encode_batch(texts)
        vectors = []
        for one in encoded:  # no padding, no neighbours: the same text, the same vector
            ids = np.array([one.ids], dtype=np.int64)
            (tokens,) = self.session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids},
            )
            pooled = tokens[0].mean(axis=0)
            vectors.append(pooled / max(float(np.linalg.norm(pooled)), 1e-12))
        return np.array(vectors).tolist()


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, TEI, vLLM)."""

    def __init__(self, *, base_url: str, api_key: str, model: str, dimensions: int) -> None:
        import openai

        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", max_retries=2, timeout=30
        )
        self.model_name = model
        self.dimensions = dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        response = self.client.embeddings.create(
            model=self.model_name, input=texts, encoding_format="base64"
        )
        vectors = []
        for item in sorted(response.data, key=lambda d: d.index):
            raw = item.embedding
            if isinstance(raw, str):  # base64 little-endian float32
                vector = np.frombuffer(base64.b64decode(raw), dtype="<f4").tolist()
            else:
                vector = list(raw)
            if len(vector) != self.dimensions:
                raise ImproperlyConfigured(
                    f"embedding endpoint returned {len(vector)} dimensions; "
                    f"HINDSIGHT_EMBEDDING_DIM is {self.dimensions}"
                )
            vectors.append(vector)
        return vectors


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    choice = settings.HINDSIGHT_EMBEDDER
    if choice == "auto":
        choice = "openai" if settings.HINDSIGHT_EMBEDDING_BASE_URL else "local"
    if choice == "openai":
        return OpenAIEmbedder(
            base_url=settings.HINDSIGHT_EMBEDDING_BASE_URL or settings.OPENAI_BASE_URL,
            api_key=settings.HINDSIGHT_EMBEDDING_API_KEY,
            model=settings.HINDSIGHT_EMBEDDING_MODEL,
            dimensions=settings.HINDSIGHT_EMBEDDING_DIM,
        )
    if choice == "local":
        if settings.HINDSIGHT_EMBEDDING_DIM != LocalMiniLM.dimensions:
            raise ImproperlyConfigured(
                "the local embedder makes 384-d vectors; set HINDSIGHT_EMBEDDING_DIM=384"
            )
        return LocalMiniLM(settings.HINDSIGHT_TOKENIZER_PATH, settings.HINDSIGHT_LOCAL_MODEL_PATH)
    raise ImproperlyConfigured(f"HINDSIGHT_EMBEDDER must be auto, local or openai; got {choice!r}")


def embed_in_batches(texts: list[str]) -> list[list[float]]:
    embedder = get_embedder()
    size = settings.HINDSIGHT_EMBEDDING_BATCH
    vectors: list[list[float]] = []
    for start in range(0, len(texts), size):
        vectors.extend(embedder.embed(texts[start : start + size]))
    return vectors
