"""/settings/: revoking a key asks first; an admin creates member accounts with a one-time
password shown once."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.auth import api_key_lookup
from accounts.models import AuditEvent, Membership
from accounts.services.api_keys import api_key_create
from tests.support.personas import make_user

pytestmark = pytest.mark.django_db


def _password(response) -> str:
    return response.content.decode().split('id="new-member-password">')[1].split("<")[0]


def test_revoke_asks_first_and_revokes_nothing(client_for, admin_user, project):
    new = api_key_create(project=project, scopes=["ingest"], name="ci runner")
    client = client_for(admin_user)

    settings_page = client.get("/settings/").content.decode()
    response = client.get(f"/settings/keys/{new.key.pk}/revoke/")

    assert f'href="/settings/keys/{new.key.pk}/revoke/"' in settings_page  # a link, not a POST
    assert response.status_code == 200
    body = response.content.decode()
    assert 'role="alertdialog"' in body and f"Revoke key <code>{new.key.prefix}…</code>" in body
    assert "ci runner" in body and "gets <code>401</code> from now on" in body
    assert f'action="/settings/keys/{new.key.pk}/revoke/"' in body
    assert "Cancel, keep it" in body
    assert api_key_lookup(new.raw) is not None
    assert not AuditEvent.objects.filter(action="api_key.revoke").exists()


def test_confirming_revokes_the_key(client_for, admin_user, project):
    new = api_key_create(project=project, scopes=["ingest"])

    response = client_for(admin_user).post(f"/settings/keys/{new.key.pk}/revoke/", follow=True)

    assert api_key_lookup(new.raw) is None
    assert f"Key {new.key.prefix}… revoked." in response.content.decode()


def test_the_question_about_a_revoked_key_goes_back_to_settings(client_for, admin_user, project):
    new = api_key_create(project=project, scopes=["ingest"])
    client = client_for(admin_user)
    client.post(f"/settings/keys/{new.key.pk}/revoke/")

    response = client.get(f"/settings/keys/{new.key.pk}/revoke/")

    assert response.status_code == 302 and response.url == "/settings/"


def test_reviewers_and_other_projects_get_no_revoke_question(
    client_for, reviewer, outsider, project
):
    new = api_key_create(project=project, scopes=["ingest"])

    assert client_for(reviewer).get(f"/settings/keys/{new.key.pk}/revoke/").status_code == 403
    assert client_for(outsider).get(f"/settings/keys/{new.key.pk}/revoke/").status_code == 404


def test_an_admin_creates_a_member_who_can_log_in_with_the_one_time_password(
    client_for, admin_user, project
):
    client = client_for(admin_user)

    response = client.post(
        "/settings/members/new/",
        {"username": "newcomer", "email": "new@example.com", "role": "reviewer"},
    )

    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    password = _password(response)
    assert len(password) >= 16
    user = get_user_model().objects.get(username="newcomer")
    assert user.email == "new@example.com" and not user.is_staff and not user.is_superuser
    assert Membership.objects.get(user=user).role == "reviewer"
    assert password not in client.get("/settings/").content.decode()  # shown once
    newcomer = Client()
    assert newcomer.login(username="newcomer", password=password)
    assert newcomer.get("/accounts/password_change/").status_code == 200  # to choose their own


def test_creating_a_member_is_audited_without_the_password(client_for, admin_user, project):
    response = client_for(admin_user).post(
        "/settings/members/new/", {"username": "newcomer", "role": "admin"}
    )

    password = _password(response)
    event = AuditEvent.objects.get(action="member.create")
    assert event.project == project and event.actor_user == admin_user
    assert event.after == {"user": "newcomer", "email": "", "role": "admin"}
    assert password not in str(event.before) + str(event.after)


def test_an_existing_username_is_refused_with_the_form_again(client_for, admin_user, project):
    make_user("taken")

    response = client_for(admin_user).post(
        "/settings/members/new/", {"username": "TAKEN", "role": "reviewer"}
    )

    assert response.status_code == 422
    body = response.content.decode()
    assert "exists already: add it as a member instead" in body
    assert 'value="TAKEN"' in body
    assert not Membership.objects.filter(user__username="taken").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": "", "role": "reviewer"}, "This field is required."),
        ({"username": "no spaces", "role": "reviewer"}, "Enter a valid username."),
        ({"username": "ok", "email": "not-an-email", "role": "reviewer"}, "valid email"),
        ({"username": "ok", "role": "owner"}, "Select a valid choice."),
    ],
)
def test_invalid_member_details_are_refused(client_for, admin_user, data, message):
    response = client_for(admin_user).post("/settings/members/new/", data)

    assert response.status_code == 422
    assert message in response.content.decode()
    assert get_user_model().objects.count() == 1  # the admin only


def test_only_project_admins_create_members(client, client_for, reviewer, project):
    data = {"username": "sneaky", "role": "admin"}

    assert client_for(reviewer).post("/settings/members/new/", data).status_code == 403
    anonymous = client.post("/settings/members/new/", data)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous.url
    assert client_for(reviewer).get("/settings/members/new/").status_code == 405
    assert not get_user_model().objects.filter(username="sneaky").exists()


def test_the_new_member_belongs_to_the_admins_project_only(
    client_for, admin_user, project, other_project
):
    client_for(admin_user).post("/settings/members/new/", {"username": "newcomer", "role": "admin"})

    memberships = Membership.objects.filter(user__username="newcomer")
    assert [m.project for m in memberships] == [project]


def test_the_settings_page_offers_both_ways_to_add_a_member(client_for, admin_user):
    body = client_for(admin_user).get("/settings/").content.decode()

    assert "Add an existing account" in body and "Create an account" in body
    assert 'action="/settings/members/new/#create-member"' in body
    assert 'id="new-member-username"' in body and 'id="id_username"' in body
