"""The demo key `make run` creates has the scopes an agent needs (ingest, recall), not admin."""

from pathlib import Path

import pytest

from accounts.auth import api_key_lookup
from accounts.services.api_keys import api_key_revoke
from hindsight_site.launcher import ensure_demo_key

pytestmark = pytest.mark.django_db


def test_the_demo_key_has_ingest_and_recall_only(tmp_path):
    raw = ensure_demo_key(tmp_path)

    key = api_key_lookup(raw)
    assert key is not None and key.project.name == "demo"
    assert key.scopes == ["ingest", "recall"]
    assert (tmp_path / "demo-api-key").read_text() == raw
    assert (tmp_path / "demo-api-key").stat().st_mode & 0o777 == 0o600


def test_the_demo_key_is_kept_across_runs_and_replaced_once_revoked(tmp_path):
    first = ensure_demo_key(tmp_path)
    assert ensure_demo_key(tmp_path) == first

    key = api_key_lookup(first)
    assert key is not None
    api_key_revoke(key=key)
    second = ensure_demo_key(tmp_path)

    assert second != first and api_key_lookup(second) is not None


def test_the_readme_says_what_the_demo_key_can_do():
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    readme = " ".join(text.split())  # however the lines are wrapped

    assert "demo key of `make run` has the `ingest` and `recall` scopes" in readme
    assert "demo project with an API key (scopes `ingest` and `recall`" in readme
