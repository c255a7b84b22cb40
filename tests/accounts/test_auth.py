"""API keys: missing, revoked, wrong scope, other project's data, rate limit."""

import time

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from accounts.services.rate_limit import rate_limit_check
from tests.support.api import trajectory

pytestmark = pytest.mark.django_db


def test_no_key_is_401(api_for):
    response = api_for(None).post("traces", trajectory())
    assert response.status_code == 401
    assert response.json() == {"detail": "Unauthorized"}


def test_unknown_key_is_401(api_for):
    assert api_for("hs_not-a-real-key").get("traces").status_code == 401


def test_revoked_key_is_401(api, pipeline_key):
    ApiKey.objects.update(revoked_at=timezone.now())
    assert api.post("traces", trajectory()).status_code == 401


def test_key_in_x_api_key_header_works(api, pipeline_key):
    response = api.client.get("/api/v1/traces", headers={"X-API-Key": pipeline_key})
    assert response.status_code == 200


def test_key_without_the_ingest_scope_is_403(project, make_key, api_for):
    recall_only = api_for(make_key(project, ("recall",)))
    response = recall_only.post("traces", trajectory())

    assert response.status_code == 403
    assert "ingest" in response.json()["detail"]


def test_key_of_another_project_cannot_read_the_trace(api, make_project, make_key, api_for):
    trace_id = api.post("traces", trajectory()).json()["id"]
    outsider = api_for(make_key(make_project(), ("ingest", "admin")))

    assert outsider.get(f"traces/{trace_id}").status_code == 404
    assert outsider.get("traces").json()["items"] == []
    assert (
        outsider.post(
            f"traces/{trace_id}/steps", {"steps": [{"index": 3, "kind": "system"}]}
        ).status_code
        == 404
    )


def test_last_used_at_is_recorded(api):
    api.get("traces")
    assert ApiKey.objects.get().last_used_at is not None


def test_rate_limit_answers_429_with_retry_after(api, settings):
    settings.HINDSIGHT_RATE_LIMIT_PER_MINUTE = 3
    statuses = [api.get("traces").status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 429]
    limited = api.get("traces")
    assert limited.status_code == 429
    # A burst of 3, then one request every 20 s: the next one is admitted within 20 s.
    assert 1 <= int(limited["Retry-After"]) <= 20


def test_rate_limit_is_per_key(api, project, make_key, api_for, settings):
    settings.HINDSIGHT_RATE_LIMIT_PER_MINUTE = 1
    other = api_for(make_key(project, ("ingest", "read")))
    assert api.get("traces").status_code == 200
    assert other.get("traces").status_code == 200
    assert api.get("traces").status_code == 429


def test_the_limit_admits_a_burst_then_refills_at_its_rate():
    # Against the real Redis: 600 a minute is a burst of 600, then one every 0.1 s.
    subject = f"test:{time.monotonic_ns()}"
    began = time.monotonic()
    waits = [rate_limit_check(subject=subject, limit=600) for _ in range(700)]
    elapsed = time.monotonic() - began
    admitted = sum(1 for wait in waits if wait == 0)

    assert 600 <= admitted <= 600 + int(elapsed / 0.1) + 1
    refused = [wait for wait in waits if wait > 0]
    assert refused and all(0 < wait <= 0.1 for wait in refused)
    time.sleep(max(refused[-1], 0.0) + 0.05)
    assert rate_limit_check(subject=subject, limit=600) == 0


READS = ["traces", "traces/{trace}", "experiences", "failure-patterns", "kb/export"]


@pytest.mark.parametrize(
    ("scopes", "can_read"),
    [
        (("ingest", "recall"), False),  # the demo key: what an agent needs, no reading
        (("ingest",), False),
        (("recall",), False),
        (("read",), True),
        (("admin",), True),
    ],
)
def test_reading_traces_the_library_and_the_kb_export_needs_the_read_scope(
    api, project, make_key, api_for, scopes, can_read
):
    trace_id = api.post("traces", trajectory()).json()["id"]
    client = api_for(make_key(project, scopes))

    statuses = {path: client.get(path.format(trace=trace_id)).status_code for path in READS}

    assert statuses == dict.fromkeys(READS, 200 if can_read else 403)
    if not can_read:
        detail = client.get("traces").json()["detail"]
        assert detail == "this API key lacks the 'read' or 'admin' scope"


def test_the_demo_key_sends_and_recalls(project, make_key, api_for):
    from hindsight_site.launcher import DEMO_KEY_SCOPES

    demo = api_for(make_key(project, tuple(DEMO_KEY_SCOPES)))
    assert demo.post("traces", trajectory()).status_code == 201
    assert demo.post("recall", {"task": "web container restarting"}).status_code == 200
    assert demo.get("traces").status_code == 403


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_keys_that_could_read_before_the_read_scope_keep_reading(project):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("traces", "0015_tool_profiles")], [("traces", "0016_apikey_read_scope")]
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        old = {
            ("ingest",): ["ingest", "read"],  # it read traces and experiences
            ("recall",): ["recall", "read"],  # it exported the KB
            ("ingest", "recall"): ["ingest", "recall", "read"],
            ("admin",): ["admin"],  # admin reads everything already
            ("admin", "ingest"): ["admin", "ingest"],
        }
        with connection.cursor() as cursor:
            for n, scopes in enumerate(old):
                cursor.execute(
                    "INSERT INTO traces_apikey (project_id, name, prefix, key_hash, scopes, "
                    "created_at) VALUES (%s, '', 'hs_old', %s, %s, now())",
                    [project.pk, f"old-{n}", list(scopes)],
                )
        MigrationExecutor(connection).migrate(after)

        migrated = {k.key_hash: sorted(k.scopes) for k in ApiKey.objects.all()}
    finally:  # back to the newest schema: later tests of this process need every table
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())
    assert migrated == {f"old-{n}": sorted(new) for n, new in enumerate(old.values())}
