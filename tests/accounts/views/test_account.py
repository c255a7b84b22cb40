"""Accounts inside the site: changing one's password on the site's own page (not the admin's),
a one-time password that must be changed before anything else, an admin resetting a member's
password (only where that reaches no other project), projects created from the settings."""

from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import AuditEvent, Membership, PasswordChangeDue, Project
from tests.support.personas import PASSWORD, make_user

NEW = "a-brand-new-long-password-7"


def _sign_in(username: str, password: str) -> Client:
    browser = Client()
    response = browser.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content
    return browser


def _change(browser: Client, old: str, new: str = NEW):
    return browser.post(
        "/accounts/password_change/",
        {"old_password": old, "new_password1": new, "new_password2": new},
    )


def test_the_password_change_is_the_sites_own_page(client_for, reviewer):
    body = client_for(reviewer).get("/accounts/password_change/").content.decode()

    assert 'class="topbar"' in body and "Change your password" in body
    assert "/admin/" not in body and 'href="/accounts/settings/" aria-current="page"' in body


def test_changing_the_password_keeps_this_session_and_is_audited(reviewer):
    browser = _sign_in("rita", PASSWORD)

    response = _change(browser, PASSWORD)

    assert response["Location"] == "/accounts/password_change/done/"
    assert "Password changed" in browser.get(response["Location"]).content.decode()
    assert browser.get("/traces/").status_code == 200
    assert get_user_model().objects.get(username="rita").check_password(NEW)
    assert AuditEvent.objects.filter(action="account.password_change").exists()


def test_a_wrong_old_password_is_refused_on_the_page(reviewer):
    response = _change(_sign_in("rita", PASSWORD), "wrong")

    assert response.status_code == 200 and 'role="alert"' in response.content.decode()


def test_a_one_time_password_must_be_changed_before_anything_else(client_for, admin_user):
    created = client_for(admin_user).post(
        "/settings/members/new/", {"username": "newbie", "role": "reviewer"}
    )
    password = created.content.decode().split('id="new-member-password">')[1].split("<")[0]
    assert PasswordChangeDue.objects.filter(user__username="newbie").exists()

    browser = _sign_in("newbie", password)
    page = browser.get("/traces/")
    partial = browser.get("/queue/", headers={"HX-Request": "true"})
    form = browser.get("/accounts/password_change/")
    changed = _change(browser, password)

    assert page.status_code == 302 and page["Location"] == "/accounts/password_change/"
    assert partial.status_code == 200 and partial["HX-Redirect"] == "/accounts/password_change/"
    assert "You signed in with a one-time password" in form.content.decode()
    assert changed.status_code == 302
    assert browser.get("/traces/").status_code == 200  # the site opens
    assert not PasswordChangeDue.objects.filter(user__username="newbie").exists()


def test_an_admin_resets_a_members_password_after_asking(client_for, admin_user, reviewer):
    client = client_for(admin_user)
    rita = Membership.objects.get(user=reviewer)
    other_session = _sign_in("rita", PASSWORD)

    asked = client.get(f"/settings/members/{rita.pk}/password/").content.decode()
    reset = client.post(f"/settings/members/{rita.pk}/password/")

    assert "Reset the password of <bdi>rita</bdi>?" in asked
    body = reset.content.decode()
    password = body.split('id="reset-member-password">')[1].split("<")[0]
    assert reset["Cache-Control"] == "no-store" and len(password) >= 12
    assert other_session.get("/traces/").status_code == 302  # her sessions ended
    browser = _sign_in("rita", password)
    assert browser.get("/traces/")["Location"] == "/accounts/password_change/"
    event = AuditEvent.objects.get(action="member.password_reset")
    assert event.actor_user == admin_user and event.after == {"user": "rita"}
    assert password not in str(event.after)


def test_a_reset_never_reaches_a_project_the_admin_does_not_administer(
    client_for, admin_user, reviewer, other_project
):  # fmt: skip
    Membership.objects.create(project=other_project, user=reviewer, role="admin")
    boss = make_user("root", superuser=True)
    Membership.objects.create(project=Membership.objects.get(user=admin_user).project, user=boss)
    client = client_for(admin_user)
    rita = Membership.objects.get(user=reviewer, role="reviewer")

    page = client.get("/settings/").content.decode()
    refused = client.post(f"/settings/members/{rita.pk}/password/", follow=True)
    own = client.post(f"/settings/members/{Membership.objects.get(user=admin_user).pk}/password/")

    assert "They are also a member of a project you do not administer" in page
    assert "A site administrator&#x27;s password is reset in /admin/" in page
    assert "cannot reset rita&#x27;s password" in refused.content.decode()
    assert own.status_code == 302
    assert reviewer.password == get_user_model().objects.get(pk=reviewer.pk).password
    assert not AuditEvent.objects.filter(action="member.password_reset").exists()


def test_a_reviewer_cannot_reset_a_password(client_for, reviewer, admin_user):
    ada = Membership.objects.get(user=admin_user)

    response = client_for(reviewer).post(f"/settings/members/{ada.pk}/password/")

    assert response.status_code == 403


def test_an_admin_creates_a_project_and_works_in_it(client_for, admin_user):
    client = client_for(admin_user)

    response = client.post("/settings/projects/", {"name": "billing"}, follow=True)

    project = Project.objects.get(name="billing")
    assert Membership.objects.get(project=project, user=admin_user).role == "admin"
    body = response.content.decode()
    assert "Settings of billing" in body and "Project billing created" in body
    assert AuditEvent.objects.get(action="project.create").project == project


def test_a_project_name_taken_or_malformed_is_refused_next_to_the_field(client_for, admin_user):
    client = client_for(admin_user)

    taken = client.post("/settings/projects/", {"name": "acme"})
    malformed = client.post("/settings/projects/", {"name": "two words"})

    assert taken.status_code == malformed.status_code == 422
    assert "a project named &#x27;acme&#x27; exists already" in taken.content.decode()
    assert "letters, numbers, underscores or hyphens" in malformed.content.decode()
    assert Project.objects.count() == 1


def test_a_reviewer_cannot_create_a_project(client_for, reviewer):
    assert client_for(reviewer).post("/settings/projects/", {"name": "x"}).status_code == 403
    assert not Project.objects.filter(name="x").exists()
