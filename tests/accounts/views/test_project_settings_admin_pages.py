"""Audit log and project settings (members, API keys): admins only."""

from accounts.auth import api_key_lookup
from accounts.models import ApiKey, AuditEvent, Membership
from accounts.services.api_keys import api_key_create
from tests.support.personas import make_user


def test_the_audit_log_lists_the_projects_events(
    client_for, admin_user, reviewer, project, make_trace
):
    trace = make_trace(project)
    client_for(reviewer).post(
        f"/traces/{trace.pk}/steps/0/label/", {"label": "failed", "version": 1}
    )

    body = client_for(admin_user).get("/audit/").content.decode()

    assert "step.relabel" in body and "rita" in body
    assert f"trace {trace.pk}, step 0" in body


def test_the_audit_log_filters_and_serves_a_partial(client_for, admin_user, project, make_trace):
    make_trace(project)
    api_key_create(project=project, scopes=["ingest"], user=admin_user)
    client = client_for(admin_user)

    response = client.get("/audit/?action=api_key", headers={"HX-Request": "true"})

    body = response.content.decode()
    assert body.lstrip().startswith('<section id="results"')
    assert "api_key.create" in body and "trace.ingest" not in body
    assert "trace.ingest" in client.get("/audit/?actor=").content.decode()
    # the results only: the page's action picker names every action of the log
    nobody = client.get("/audit/?actor=nobody", headers={"HX-Request": "true"})
    assert "api_key.create" not in nobody.content.decode()


def test_the_audit_log_hides_other_projects(client_for, outsider, admin_user, project, make_trace):
    make_trace(project)

    body = client_for(outsider).get("/audit/").content.decode()

    assert "trace.ingest" not in body


def test_creating_a_key_shows_it_once(client_for, admin_user, project):
    client = client_for(admin_user)

    response = client.post("/settings/keys/", {"name": "ci", "scopes": ["ingest"]})

    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    raw = response.content.decode().split('id="new-key-value">')[1].split("<")[0]
    key = api_key_lookup(raw)
    assert key is not None and key.project == project and key.scopes == ["ingest"]
    assert raw not in client.get("/settings/").content.decode()


def test_a_key_needs_a_scope(client_for, admin_user):
    response = client_for(admin_user).post("/settings/keys/", {"name": "ci"})

    assert response.status_code == 200
    assert ApiKey.objects.count() == 0
    assert "This field is required" in response.content.decode()


def test_revoking_a_key(client_for, admin_user, project):
    new = api_key_create(project=project, scopes=["ingest"])

    response = client_for(admin_user).post(f"/settings/keys/{new.key.pk}/revoke/")

    assert response.status_code == 302
    assert api_key_lookup(new.raw) is None
    assert AuditEvent.objects.filter(action="api_key.revoke").exists()


def test_reviewers_cannot_create_or_revoke_keys(client_for, reviewer, project):
    new = api_key_create(project=project, scopes=["ingest"])
    client = client_for(reviewer)

    assert client.post("/settings/keys/", {"scopes": ["ingest"]}).status_code == 403
    assert client.post(f"/settings/keys/{new.key.pk}/revoke/").status_code == 403
    assert api_key_lookup(new.raw) is not None


def test_another_projects_key_is_not_found(client_for, outsider, project):
    new = api_key_create(project=project, scopes=["ingest"])

    assert client_for(outsider).post(f"/settings/keys/{new.key.pk}/revoke/").status_code == 404


def test_admins_add_members_and_change_roles(client_for, admin_user, project):
    make_user("newbie")
    client = client_for(admin_user)

    client.post("/settings/members/", {"username": "newbie", "role": "reviewer"})
    membership = Membership.objects.get(user__username="newbie")
    client.post(f"/settings/members/{membership.pk}/", {"role": "admin"})

    membership.refresh_from_db()
    assert membership.role == "admin"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"member.add", "member.role"} <= actions
    assert "newbie" in client.get("/settings/").content.decode()


def test_adding_an_unknown_user_says_so(client_for, admin_user):
    response = client_for(admin_user).post(
        "/settings/members/", {"username": "ghost", "role": "reviewer"}, follow=True
    )

    assert "no user named" in response.content.decode()


def test_the_last_admin_cannot_be_removed(client_for, admin_user, project):
    membership = Membership.objects.get(user=admin_user)

    response = client_for(admin_user).post(
        f"/settings/members/{membership.pk}/remove/", follow=True
    )

    assert Membership.objects.filter(pk=membership.pk).exists()
    assert "at least one admin" in response.content.decode()


def test_removing_a_member_asks_first(client_for, admin_user, reviewer):
    membership = Membership.objects.get(user=reviewer)
    client = client_for(admin_user)

    asked = client.get(f"/settings/members/{membership.pk}/remove/").content.decode()
    assert f"Remove <bdi>{reviewer.username}</bdi> from" in asked
    assert "Cancel, keep them" in asked
    assert Membership.objects.filter(pk=membership.pk).exists()  # asking removes nothing

    done = client.post(f"/settings/members/{membership.pk}/remove/", follow=True)
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert f"{reviewer.username} removed from the project." in done.content.decode()
    assert AuditEvent.objects.filter(action="member.remove").exists()


def test_another_projects_member_is_not_found(client_for, outsider, reviewer):
    membership = Membership.objects.get(user=reviewer)

    response = client_for(outsider).post(f"/settings/members/{membership.pk}/remove/")

    assert response.status_code == 404
