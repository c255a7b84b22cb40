"""A lapsed session never loses a label silently: htmx requests of a signed-out browser get a
401 the page acts on (not the sign-in page swapped into a step), and signing in again in place
answers JSON with the rotated CSRF token, through the sign-in page's throttle."""

from django.test import Client

from tests.support.personas import PASSWORD
from traces.models import Step

HTMX = {"HX-Request": "true"}


def test_an_htmx_relabel_without_a_session_gets_a_401_saying_so(client, project, make_trace):
    trace = make_trace(project)

    response = client.post(
        f"/traces/{trace.pk}/steps/1/label/", {"label": "redundant", "version": "1"}, headers=HTMX
    )

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert "session has ended" in response.json()["detail"]
    assert response.json()["login_url"].startswith("/accounts/login/?next=")
    assert Step.objects.get(trace=trace, index=1).label_source == "llm"  # nothing saved


def test_an_htmx_window_of_steps_without_a_session_gets_a_401(client, project, make_trace):
    trace = make_trace(project)

    response = client.get(f"/traces/{trace.pk}/?after=0", headers=HTMX)

    assert response.status_code == 401


def test_a_page_without_a_session_still_goes_to_the_sign_in_page(client, project, make_trace):
    trace = make_trace(project)

    response = client.get(f"/traces/{trace.pk}/")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_signed_in_htmx_request_is_left_alone(client_for, reviewer, project, make_trace):
    trace = make_trace(project)
    client = client_for(reviewer)

    response = client.post(
        f"/traces/{trace.pk}/steps/1/label/", {"label": "redundant", "version": "1"}, headers=HTMX
    )

    assert response.status_code == 200


def test_signing_in_again_in_place_answers_the_new_csrf_token(reviewer):
    browser = Client(enforce_csrf_checks=True)
    browser.get("/accounts/login/")  # the page the reviewer had open set the CSRF cookie
    token = browser.cookies["csrftoken"].value

    response = browser.post(
        "/accounts/session/", {"username": "rita", "password": PASSWORD},
        headers={"X-CSRFToken": token},
    )  # fmt: skip

    assert response.status_code == 200
    assert response.json()["username"] == "rita"
    assert response.json()["csrf_token"] and browser.cookies["csrftoken"].value != token
    assert browser.get("/traces/").status_code == 200  # signed in


def test_a_wrong_password_in_place_is_a_401_and_counts_for_the_throttle(reviewer, settings):
    settings.HINDSIGHT_LOGIN_MAX_FAILURES = 2
    browser = Client()

    answers = [
        browser.post("/accounts/session/", {"username": "rita", "password": "wrong"})
        for _ in range(3)
    ]

    assert [a.status_code for a in answers] == [401, 401, 401]
    assert answers[0].json()["detail"].startswith("Your username and password didn't match")
    assert "Too many failed sign-ins" in answers[2].json()["detail"]
    assert browser.get("/traces/").status_code == 302


def test_signing_in_again_needs_a_post(client):
    assert client.get("/accounts/session/").status_code == 405
