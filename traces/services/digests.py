"""Content digests: how a re-sent trajectory, opening or step is told apart from a new one.

A digest is sha256 over the content's canonical JSON (keys sorted, no spaces). The JSON is
written by orjson (UTF-8, its own float notation) and the digest is marked `v2:` (61 hex
digits after it, so it fits the 64-character column). Rows stored before v2 hold the digest of
Python's json module (ASCII escapes, Python's float notation): `digest_matches` recomputes that
one, only when a re-sent item meets such a row, so a retry that spans the upgrade is still a
duplicate and never a conflict. Why: writing the JSON was 10 of the ~90 ms of web CPU that a
500-step batch costs to ingest, orjson takes 1.
"""

import hashlib
import json
from collections.abc import Callable
from typing import Any

import orjson

V2 = "v2:"
_V2_HEX = 64 - len(V2)


def _legacy_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()


def content_digest(data: Any, *, legacy: bool = False) -> str:
    """The digest of a JSON value (`legacy`: as written before v2)."""
    if legacy:
        return hashlib.sha256(_legacy_json(data)).hexdigest()
    try:
        canonical = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: the same content, same path
        canonical = _legacy_json(data)
    return V2 + hashlib.sha256(canonical).hexdigest()[:_V2_HEX]


def digest_matches(stored: str, digest: str, legacy: Callable[[], str]) -> bool:
    """Whether content whose digest is `digest` is what a row holding `stored` was made of;
    `legacy()` gives the content's digest as written before v2, asked only for such rows."""
    if not stored or stored.startswith(V2):
        return stored == digest
    return stored == legacy()
