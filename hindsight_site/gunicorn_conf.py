"""gunicorn hooks for the web workers (`--config python:hindsight_site.gunicorn_conf`)."""

import logging

logger = logging.getLogger("hindsight.web")


def post_worker_init(worker) -> None:
    """Load the embedding model when a worker starts, not on its first recall (~130 ms).

    Not in the master before forking: an ONNX Runtime session is not documented as fork-safe.
    """
    from experiences.embeddings import get_embedder

    embedder = get_embedder()
    logger.info("web worker %s: embedding model %s ready", worker.pid, embedder.model_name)
