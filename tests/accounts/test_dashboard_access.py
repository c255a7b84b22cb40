"""Who sees what: login, membership, roles, the project switcher."""

import pytest
from django.http import Http404
from django.test import RequestFactory

from accounts.dashboard import found_in_projects, object_in_projects
from accounts.models import Membership
from tests.support.personas import make_user

PAGES = ["/traces/", "/queue/", "/stats/", "/audit/", "/settings/"]


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_visitors_are_sent_to_the_login_page(client, db, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/?next=")


def test_root_redirects_to_the_trace_list(client, db):
    assert client.get("/").url == "/traces/"


def test_login_page_renders_a_labelled_form(client, db):
    response = client.get("/accounts/login/")

    assert response.status_code == 200
    assert b'<label for="id_username">' in response.content
    assert b"csrfmiddlewaretoken" in response.content


def test_logging_in_lands_on_the_traces(client, reviewer):
    response = client.post(
        "/accounts/login/", {"username": "rita", "password": "a-long-test-password"}
    )

    assert response.status_code == 302
    assert response.url == "/traces/"


def test_logout_is_a_post(client_for, reviewer):
    client = client_for(reviewer)

    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302


def test_a_user_without_a_project_is_told_to_ask_an_admin(client_for, db):
    response = client_for(make_user("nobody")).get("/traces/")

    assert response.status_code == 403
    assert b"not in any project" in response.content


@pytest.mark.parametrize("path", ["/audit/", "/settings/"])
def test_reviewers_cannot_open_admin_pages(client_for, reviewer, path):
    response = client_for(reviewer).get(path)

    assert response.status_code == 403
    assert b"for project admins" in response.content


def test_the_nav_shows_admin_pages_to_admins_only(client_for, reviewer, admin_user):
    assert b'href="/settings/"' not in client_for(reviewer).get("/traces/").content
    assert b'href="/settings/"' in client_for(admin_user).get("/traces/").content


def test_the_switcher_appears_for_members_of_several_projects(
    client_for, reviewer, other_project, make_trace
):
    make_trace(other_project, task="Only in the other project")
    client = client_for(reviewer)
    assert b"project-switch" not in client.get("/traces/").content

    Membership.objects.create(project=other_project, user=reviewer)
    response = client.post("/projects/switch/", {"project": other_project.pk, "next": "/traces/"})

    assert response.url == "/traces/"
    page = client.get("/traces/")
    assert b"project-switch" in page.content
    assert b"Only in the other project" in page.content


def test_switching_to_a_project_one_is_not_in_changes_nothing(
    client_for, reviewer, other_project, make_trace
):
    make_trace(other_project, task="Secret elsewhere")
    client = client_for(reviewer)

    client.post("/projects/switch/", {"project": other_project.pk})

    assert b"Secret elsewhere" not in client.get("/traces/").content


def test_switching_refuses_an_external_next_url(client_for, reviewer, project):
    response = client_for(reviewer).post(
        "/projects/switch/", {"project": project.pk, "next": "https://evil.example/"}
    )

    assert response.url == "/traces/"


def test_superusers_see_every_project(client_for, project, other_project, make_trace):
    make_trace(other_project, task="Visible to the superuser")
    boss = make_user("boss", superuser=True)
    client = client_for(boss)

    client.post("/projects/switch/", {"project": other_project.pk})

    assert b"Visible to the superuser" in client.get("/traces/").content


def test_an_object_of_another_project_is_not_found(reviewer, project, other_project):
    request = RequestFactory().get("/")
    request.user, request.session = reviewer, {}
    asked = []

    def find(*, projects, pk):
        asked.append(projects)
        return next((p for p in projects if p.pk == pk), None)  # a selector of projects

    assert found_in_projects(request, find, pk=project.pk) == project
    assert found_in_projects(request, find, pk=other_project.pk) is None
    with pytest.raises(Http404, match="project not found"):
        object_in_projects(request, find, "project", pk=other_project.pk)
    assert asked == [[project]] * 3  # the reviewer's projects, and only those
