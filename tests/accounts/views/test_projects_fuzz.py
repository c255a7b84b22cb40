"""Dashboard forms: a bad value is a redirect with a message, never a 500."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.dashboard import SESSION_PROJECT
from accounts.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(project):
    user = get_user_model().objects.create_user("rita", "rita@example.com", "a-long-password")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "value", ["abc", "", "99999999999999999999999", "1\u0000", " 1", "-1", None], ids=repr
)
def test_switching_to_a_project_that_is_not_a_number_of_yours_redirects_with_a_message(
    member, value
):
    data = {} if value is None else {"project": value}
    response = member.post("/projects/switch/", data, follow=True)

    assert response.redirect_chain == [("/traces/", 302)]
    assert b"That project is not one of yours" in response.content
    assert SESSION_PROJECT not in member.session


def test_switching_to_ones_own_project_still_works(member, project):
    response = member.post("/projects/switch/", {"project": str(project.pk)})

    assert response.status_code == 302
    assert member.session[SESSION_PROJECT] == project.pk
