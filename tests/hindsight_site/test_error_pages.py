"""Error pages are the site's own (navigation and a way on), not Django's bare defaults; the
500 page renders without a request context (the database may be what failed)."""

import pytest
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.views.defaults import permission_denied, server_error

pytestmark = pytest.mark.django_db


def test_an_unknown_page_is_a_styled_404_with_the_navigation(client_for, reviewer, settings):
    settings.DEBUG = False
    response = client_for(reviewer).get("/no-such-page/")

    assert response.status_code == 404
    body = response.content.decode()
    assert "<h1>Page not found</h1>" in body and 'aria-label="Main"' in body
    assert 'href="/traces/"' in body


def test_a_forbidden_page_is_a_styled_403(reviewer):
    request = RequestFactory().get("/settings/")
    request.user, request.session = reviewer, {}
    response = permission_denied(request, PermissionDenied())

    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in response.content.decode()


def test_the_500_page_renders_without_a_request_context():
    response = server_error(RequestFactory().get("/traces/"))

    assert response.status_code == 500
    body = response.content.decode()
    assert "<h1>Something went wrong</h1>" in body and "nothing you entered was lost" in body
