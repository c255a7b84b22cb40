"""Projects, members, keys, account settings and the audit log moved from traces to accounts
(2026-12-07) with their tables: a database made before the move keeps every row, every key
keeps working, and the admin's history keeps pointing at the same models."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import ApiKey, AuditEvent, Membership, Project
from traces.models import Trace

BEFORE = [
    ("traces", "0018_claim_finish_undo"),
    ("experiences", "0018_families_induced_again"),
    ("otlp", "0001_initial"),
    ("accounts", None),
]


def _migrate_to_latest() -> None:
    latest = MigrationExecutor(connection)
    latest.migrate(latest.loader.graph.leaf_nodes())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_its_rows(django_user_model, api_for):
    user = django_user_model.objects.create_user("ada", password="pw-long-enough-1")
    try:
        MigrationExecutor(connection).migrate(BEFORE)
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO traces_project (name, review_guidelines, created_at) "
                "VALUES ('old-project', 'read the runbook', now()) RETURNING id"
            )
            (project_id,) = cursor.fetchone()
            cursor.execute(
                "INSERT INTO traces_membership (project_id, user_id, role, created_at) "
                "VALUES (%s, %s, 'admin', now())",
                [project_id, user.pk],
            )
            # the key "hs_old_key" (its sha256), as traces.auth stored it
            cursor.execute(
                "INSERT INTO traces_apikey (project_id, name, prefix, key_hash, scopes, "
                "created_at) VALUES (%s, 'old', 'hs_old', encode(sha256('hs_old_key'), 'hex'), "
                "ARRAY['ingest', 'recall', 'read'], now())",
                [project_id],
            )
            cursor.execute(
                "INSERT INTO traces_auditevent (project_id, actor_user_id, action, object_type, "
                "object_id, created_at) VALUES (%s, %s, 'member.add', 'membership', '1', now())",
                [project_id, user.pk],
            )
            # as a database of then had them (the test database was made with today's apps)
            cursor.execute(
                "UPDATE django_content_type SET app_label = 'traces' WHERE app_label = "
                "'accounts' AND model = 'project' RETURNING id"
            )
            (project_type,) = cursor.fetchone()
        _migrate_to_latest()

        project = Project.objects.get(name="old-project")
        assert project.pk == project_id and project.review_guidelines == "read the runbook"
        assert Membership.objects.get(project=project, user=user).role == "admin"
        assert AuditEvent.objects.get(project=project).action == "member.add"
        assert ApiKey.objects.get(project=project).scopes == ["ingest", "recall", "read"]
        assert ContentType.objects.get_for_model(Project).pk == project_type
    finally:
        _migrate_to_latest()  # later tests of this process need the newest schema

    # the old key still sends and reads trajectories, into the same project
    api = api_for("hs_old_key")
    sent = api.post(
        "traces",
        {"external_id": "after-move", "task": "t", "agent": "a", "outcome": "success",
         "steps": [{"index": 0, "kind": "tool_call", "tool": "ls", "observation": "ok"}]},
    )  # fmt: skip
    assert sent.status_code == 201, sent.content
    assert Trace.objects.get(external_id="after-move").project_id == project_id
    assert api.get("traces").json()["items"][0]["external_id"] == "after-move"
