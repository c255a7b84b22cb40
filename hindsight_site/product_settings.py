"""The product's own settings, from the environment: ingest limits, review, embeddings, the
dashboard, recall and warnings, dedup, the knowledge base and beat's schedule. settings.py, which
holds Django's, Celery's and the services', takes every name from here; docs/configuration.md
says what each does and .env.example lists them with their defaults.
"""

import sys
from pathlib import Path

from hindsight_site.env import env_bool, env_float, env_int, env_size, env_str

# ------------------------------------------------------------------ ingest
# Requests to /api/ over this size are refused with 413 before the body is read.
HINDSIGHT_MAX_BODY_BYTES = env_int("HINDSIGHT_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = HINDSIGHT_MAX_BODY_BYTES
HINDSIGHT_MAX_STEPS = env_int("HINDSIGHT_MAX_STEPS", 2000, minimum=1)
HINDSIGHT_MAX_BATCH = env_int("HINDSIGHT_MAX_BATCH", 500, minimum=1)
# Raw observations are kept up to this many characters (flagged when cut).
HINDSIGHT_OBSERVATION_RAW_CAP = env_int("HINDSIGHT_OBSERVATION_RAW_CAP", 65536, minimum=100)
# Raw observations of reviewed trajectories are dropped this many days after they were stored
# (the summaries stay; audited; 0 keeps them forever). Beat checks daily.
HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS = env_int(
    "HINDSIGHT_OBSERVATION_RAW_RETENTION_DAYS", 0, minimum=0
)
# Characters of an observation kept in its summary (error lines are always kept).
HINDSIGHT_OBSERVATION_SUMMARY_CHARS = env_int(
    "HINDSIGHT_OBSERVATION_SUMMARY_CHARS", 300, minimum=20
)
# Per API key, requests per minute; 0 turns the limit off.
HINDSIGHT_RATE_LIMIT_PER_MINUTE = env_int("HINDSIGHT_RATE_LIMIT_PER_MINUTE", 1200, minimum=0)
# Complete traces still pending after this many seconds are enqueued again by beat.
HINDSIGHT_REENQUEUE_AFTER_SECONDS = env_int("HINDSIGHT_REENQUEUE_AFTER_SECONDS", 60, minimum=1)
HINDSIGHT_SWEEP_INTERVAL_SECONDS = env_float("HINDSIGHT_SWEEP_INTERVAL_SECONDS", 30.0, minimum=1.0)
HINDSIGHT_AUDIT_INGEST = env_bool("HINDSIGHT_AUDIT_INGEST", True)
# OTLP: a trace whose root span never arrives is stored once no span came for this long.
HINDSIGHT_OTLP_IDLE_SECONDS = env_int("HINDSIGHT_OTLP_IDLE_SECONDS", 300, minimum=1)
# OTLP: the traces an export completes that are stored before it is answered (their errors in
# its partial success); the rest are stored by the worker, so a collector's batch of thousands
# of spans is answered in about a second.
HINDSIGHT_OTLP_INLINE_TRACES = env_int("HINDSIGHT_OTLP_INLINE_TRACES", 5, minimum=0)

# ------------------------------------------------------------------ review
# "auto": the LLM reviewer when OPENAI_BASE_URL is set, else the offline heuristic reviewer.
HINDSIGHT_REVIEWER = env_str("HINDSIGHT_REVIEWER", "auto")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
HINDSIGHT_LLM_MODEL = env_str("HINDSIGHT_LLM_MODEL", "gpt-4o-mini")
HINDSIGHT_LLM_TIMEOUT = env_float("HINDSIGHT_LLM_TIMEOUT", 60.0, minimum=1.0)
HINDSIGHT_REVIEW_MAX_RETRIES = env_int("HINDSIGHT_REVIEW_MAX_RETRIES", 4, minimum=0)
# Full review when a complete trajectory reaches any of these.
HINDSIGHT_REVIEW_MIN_EVENTS = env_int("HINDSIGHT_REVIEW_MIN_EVENTS", 10, minimum=1)
HINDSIGHT_REVIEW_MIN_TOOL_CALLS = env_int("HINDSIGHT_REVIEW_MIN_TOOL_CALLS", 3, minimum=1)
HINDSIGHT_REVIEW_MIN_SECONDS = env_float("HINDSIGHT_REVIEW_MIN_SECONDS", 30.0, minimum=0.0)
# Below those, a run that called a tool gets a short review by the offline reviewer (no LLM
# spent): its path is still the memory of its task. Off: such runs are skipped.
HINDSIGHT_REVIEW_SHORT_RUNS = env_bool("HINDSIGHT_REVIEW_SHORT_RUNS", True)
# Local reviews: the same call repeated more than this many times is a loop; the window takes
# this many steps on each side of the anomaly.
HINDSIGHT_LOOP_REPEATS = env_int("HINDSIGHT_LOOP_REPEATS", 3, minimum=1)
HINDSIGHT_LOCAL_WINDOW_STEPS = env_int("HINDSIGHT_LOCAL_WINDOW_STEPS", 2, minimum=0)
# Compression before review: characters of arguments and observation kept per step.
HINDSIGHT_COMPRESS_ARGUMENT_CHARS = env_int("HINDSIGHT_COMPRESS_ARGUMENT_CHARS", 50, minimum=10)
HINDSIGHT_COMPRESS_OBSERVATION_CHARS = env_int(
    "HINDSIGHT_COMPRESS_OBSERVATION_CHARS", 100, minimum=10
)

# ------------------------------------------------------------------ embeddings
# "auto": an OpenAI-compatible endpoint when HINDSIGHT_EMBEDDING_BASE_URL is set, else local.
HINDSIGHT_EMBEDDER = env_str("HINDSIGHT_EMBEDDER", "auto")
HINDSIGHT_EMBEDDING_BASE_URL = env_str("HINDSIGHT_EMBEDDING_BASE_URL", "")
HINDSIGHT_EMBEDDING_API_KEY = env_str("HINDSIGHT_EMBEDDING_API_KEY", OPENAI_API_KEY)
HINDSIGHT_EMBEDDING_MODEL = env_str("HINDSIGHT_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
HINDSIGHT_EMBEDDING_DIM = env_int("HINDSIGHT_EMBEDDING_DIM", 384, minimum=1)
HINDSIGHT_EMBEDDING_BATCH = env_int("HINDSIGHT_EMBEDDING_BATCH", 32, minimum=1)
# tokenizer.json of all-MiniLM-L6-v2, fetched by `make` (scripts/fetch_tokenizer.py), and the
# local model with int8 activations, built by `make` (scripts/build_embedding_model.py).
HINDSIGHT_TOKENIZER_PATH = env_str(
    "HINDSIGHT_TOKENIZER_PATH", str(Path(sys.prefix) / "share" / "hindsight" / "tokenizer.json")
)
HINDSIGHT_LOCAL_MODEL_PATH = env_str(
    "HINDSIGHT_LOCAL_MODEL_PATH",
    str(Path(sys.prefix) / "share" / "hindsight" / "all-MiniLM-L6-v2-int8-dynamic.onnx"),
)

# ------------------------------------------------------------------ dashboard
# A reviewer's claim on a queued trajectory lapses after this many minutes (nothing gets stuck).
HINDSIGHT_CLAIM_MINUTES = env_int("HINDSIGHT_CLAIM_MINUTES", 30, minimum=1)
# "Finish" on a claimed trajectory can be undone this long after (its accepted labels go back to
# the machine, the claim reopens).
HINDSIGHT_FINISH_UNDO_MINUTES = env_int("HINDSIGHT_FINISH_UNDO_MINUTES", 10, minimum=1)
# HINDSIGHT_LOW_CONFIDENCE, the queue's threshold, is set with the database settings (settings.py).

# ------------------------------------------------------------------ recall and warnings
HINDSIGHT_RECALL_HALF_LIFE_DAYS = env_float("HINDSIGHT_RECALL_HALF_LIFE_DAYS", 30.0, minimum=0.1)
# Failure lessons stay relevant longer than success strategies.
HINDSIGHT_RECALL_FAILURE_HALF_LIFE_DAYS = env_float(
    "HINDSIGHT_RECALL_FAILURE_HALF_LIFE_DAYS", 90.0, minimum=0.1
)
# Score factor for experience from a different environment (flagged, not hidden).
HINDSIGHT_RECALL_ENV_MISMATCH = env_float("HINDSIGHT_RECALL_ENV_MISMATCH", 0.6, minimum=0.0)
# Memory for building the HNSW index in one pass (`manage.py reembed`, benchmarks): a graph that
# outgrows it is finished on disk, many times slower. ~1.5 kB per 384-d experience (halfvec,
# m 32): 1GB holds ~600k, a 1M library wants 2GB.
HINDSIGHT_HNSW_BUILD_MEMORY = env_size("HINDSIGHT_HNSW_BUILD_MEMORY", "1GB")
# Nearest neighbours fetched by the vector index before scoring.
HINDSIGHT_RECALL_CANDIDATES = env_int("HINDSIGHT_RECALL_CANDIDATES", 40, minimum=1)
# Up to this many experiences passing a recall's pre-filter are ranked by exact distance, not by
# the HNSW walk (which comes back short when a filter passes few of the rows near the query);
# a walk that still comes back short is followed by an exact scan
# (experiences.services.recall_candidates).
HINDSIGHT_RECALL_EXACT_ROWS = env_int("HINDSIGHT_RECALL_EXACT_ROWS", 1000, minimum=0)
# Items below this cosine similarity are not returned at all.
HINDSIGHT_RECALL_MIN_SIMILARITY = env_float("HINDSIGHT_RECALL_MIN_SIMILARITY", 0.2, minimum=0.0)
# An item at least this similar to the query is the very same case: its exact replay (literal
# ids and values) is served in place of its general advice (experiences.services.recall_cases).
HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY = env_float(
    "HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY", 0.92, minimum=0.0
)
# An item whose request names one of the query's identifiers (the same user, the same order) is
# the same case only when it asks at least this similar a thing: the same user with another
# kind of request (a baggage question after a cancellation) is a new case.
HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY = env_float(
    "HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY", 0.5, minimum=0.0
)
# The asked family's workflow goes first in recall's answer only when that family holds at least
# this share of the score the k best items' families hold; below it the block names the ways
# (experiences.services.recall_block).
HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE = env_float(
    "HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE", 0.6, minimum=0.0
)
# The keyword score's share of relevance (cosine similarity has the rest): 0.25, the default
# of Weaviate's hybrid search (alpha 0.75, whose default fusion also sums scores, not ranks),
# not a figure fitted to any data here.
HINDSIGHT_RECALL_KEYWORD_WEIGHT = env_float("HINDSIGHT_RECALL_KEYWORD_WEIGHT", 0.25, minimum=0.0)
# Keyword search ignores words found in more than this share of the library (PostgreSQL's
# statistics of the search column), like an inverse document frequency cut.
HINDSIGHT_RECALL_COMMON_TERM = env_float("HINDSIGHT_RECALL_COMMON_TERM", 0.2, minimum=0.0)
# The keyword ranking reads the rows holding the query's rarest words, up to about this many
# (estimated from the same statistics), and scores them by all its words: its cost stays flat
# as the library grows (the rows matching only common words are left to the vector ranking).
HINDSIGHT_RECALL_KEYWORD_ROWS = env_int("HINDSIGHT_RECALL_KEYWORD_ROWS", 2000, minimum=1)
# Recall logs (what each recall returned, the agent's feedback) are kept this many days; 0 keeps
# them forever. Beat deletes older ones daily; /stats/ looks back 30 days.
HINDSIGHT_RECALL_LOG_DAYS = env_int("HINDSIGHT_RECALL_LOG_DAYS", 90, minimum=0)
# Warnings only for patterns seen at least this often, with arguments at least this similar.
HINDSIGHT_WARN_MIN_OCCURRENCES = env_int("HINDSIGHT_WARN_MIN_OCCURRENCES", 2, minimum=1)
HINDSIGHT_WARN_MIN_SIMILARITY = env_float("HINDSIGHT_WARN_MIN_SIMILARITY", 0.5, minimum=0.0)

# ------------------------------------------------------------------ dedup
# Cosine similarity at or above which a new experience is merged automatically...
HINDSIGHT_DEDUP_AUTO_THRESHOLD = env_float("HINDSIGHT_DEDUP_AUTO_THRESHOLD", 0.95, minimum=0.0)
# ...and from which (below the auto threshold) an admin is asked with a merge proposal.
HINDSIGHT_DEDUP_PROPOSAL_THRESHOLD = env_float(
    "HINDSIGHT_DEDUP_PROPOSAL_THRESHOLD", 0.85, minimum=0.0
)
HINDSIGHT_DEDUP_NEIGHBOURS = env_int("HINDSIGHT_DEDUP_NEIGHBOURS", 5, minimum=1)
# ... and only when they also say much the same (word overlap of strategy and pitfall, 0-1).
HINDSIGHT_DEDUP_MIN_SUBSTANCE = env_float("HINDSIGHT_DEDUP_MIN_SUBSTANCE", 0.5, minimum=0.0)
# Beat sends a dedup check for experiences whose check never ran (its task was lost while Redis
# was down) once their wording is this old, at most this many per sweep.
HINDSIGHT_DEDUP_SWEEP_GRACE_SECONDS = env_int("HINDSIGHT_DEDUP_SWEEP_GRACE_SECONDS", 120, minimum=1)
HINDSIGHT_DEDUP_SWEEP_BATCH = env_int("HINDSIGHT_DEDUP_SWEEP_BATCH", 200, minimum=1)

# ------------------------------------------------------------------ knowledge base
# A rebuild runs in the worker; one that has not finished within this many seconds is stopped
# (and shown as failed, with a Retry button).
HINDSIGHT_KB_REBUILD_TIME_LIMIT = env_int("HINDSIGHT_KB_REBUILD_TIME_LIMIT", 1800, minimum=30)

# ------------------------------------------------------------------ beat: every periodic task
# The sweeps that make lost work due again (a publish that failed while Redis was down, a
# trajectory whose root span never came, an experience whose dedup check was lost) and the
# daily clean-up. A review taken by a worker that went silent is reclaimed by the first one.
CELERY_BEAT_SCHEDULE = {
    "enqueue-pending-traces": {
        "task": "traces.enqueue_pending_traces",
        "schedule": HINDSIGHT_SWEEP_INTERVAL_SECONDS,
    },
    "otlp-complete-idle-traces": {
        "task": "otlp.complete_idle_traces",
        "schedule": HINDSIGHT_SWEEP_INTERVAL_SECONDS,
    },
    "dedup-unchecked-experiences": {
        "task": "experiences.dedup_due_experiences",
        "schedule": HINDSIGHT_SWEEP_INTERVAL_SECONDS,
    },
    "induce-due-families": {
        "task": "experiences.induce_due_families",
        "schedule": HINDSIGHT_SWEEP_INTERVAL_SECONDS,
    },
    "prune-recall-logs": {"task": "experiences.prune_recall_logs", "schedule": 24 * 3600},
    # Recall's copy of the keyword statistics follows autovacuum's analyses (a catalog read).
    "refresh-keyword-stats": {"task": "experiences.refresh_keyword_stats", "schedule": 60},
    "compact-tallies": {"task": "traces.compact_tallies", "schedule": 60},
    "drop-old-raw-observations": {
        "task": "traces.drop_old_raw_observations",
        "schedule": 24 * 3600,
    },
}
