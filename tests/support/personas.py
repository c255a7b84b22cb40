"""Personas of the page tests (a fixture module, registered in tests/conftest.py): a reviewer and
an admin of `project`, an outsider who administers another project, and a logged-in client for
any of them."""

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership, Project

PASSWORD = "a-long-test-password"


def make_user(username: str, *, superuser: bool = False):
    User = get_user_model()
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.com", PASSWORD)
    return User.objects.create_user(username, f"{username}@example.com", PASSWORD)


@pytest.fixture
def other_project(make_project) -> Project:
    return make_project("elsewhere")


@pytest.fixture
def reviewer(project):
    user = make_user("rita")
    Membership.objects.create(project=project, user=user, role=Membership.Role.REVIEWER)
    return user


@pytest.fixture
def admin_user(project):
    user = make_user("ada")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def outsider(other_project):
    user = make_user("otto")
    Membership.objects.create(project=other_project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def client_for() -> Callable[[Any], Client]:
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make
