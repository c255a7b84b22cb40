"""Sign-in brute-force protection: per account, per address, cleared by success, audited, on
both the dashboard's and the admin's sign-in page, over the real Redis."""

import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from traces.models import AuditEvent

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed sign-ins"


@pytest.fixture
def account(db):
    name = f"ana-{time.monotonic_ns()}"  # fresh counters in the shared Redis
    User.objects.create_user(name, password="right-password", is_staff=True, is_superuser=True)
    return name


def sign_in(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def address() -> str:
    return f"10.{time.monotonic_ns() % 250}.{time.monotonic_ns() % 251}.7"


def test_five_wrong_passwords_pause_the_account_even_for_the_right_one(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        answer = sign_in(client, account, "wrong")
        assert "didn't match" in answer.content.decode()

    answer = sign_in(client, account, "right-password")
    assert LOCKED in answer.content.decode() and "15 minutes" in answer.content.decode()
    assert "_auth_user_id" not in client.session
    # From another address too: it is the account that is paused.
    other = Client(REMOTE_ADDR=address())
    assert LOCKED in sign_in(other, account, "right-password").content.decode()
    event = AuditEvent.objects.get(action="login.locked", object_type="account")
    assert event.object_id == account and event.after["failures"] == 5


def test_a_success_clears_the_failures(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(4):
        sign_in(client, account, "wrong")
    assert sign_in(client, account, "right-password").status_code == 302
    client.logout()
    for _ in range(4):
        sign_in(client, account, "wrong")
    assert sign_in(client, account, "right-password").status_code == 302


def test_one_address_trying_many_accounts_is_paused(account, settings):
    settings.HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    client = Client(REMOTE_ADDR=address())
    for n in range(6):
        sign_in(client, f"guess-{n}-{account}", "wrong")

    assert LOCKED in sign_in(client, account, "right-password").content.decode()
    assert (
        Client(REMOTE_ADDR=address())
        .post("/accounts/login/", {"username": account, "password": "right-password"})
        .status_code
        == 302
    )  # the account itself is fine elsewhere
    assert AuditEvent.objects.filter(action="login.locked", object_type="address").exists()


def test_the_pause_ends(account, settings):
    settings.HINDSIGHT_LOGIN_LOCKOUT_SECONDS = 5  # also the window the failures count in
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        sign_in(client, account, "wrong")
    assert LOCKED in sign_in(client, account, "right-password").content.decode()
    time.sleep(5.5)
    assert sign_in(client, account, "right-password").status_code == 302


def test_the_admin_sign_in_counts_and_is_paused_alike(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        sign_in(client, account, "wrong", "/admin/login/")
    answer = sign_in(client, account, "right-password", "/admin/login/")
    assert LOCKED in answer.content.decode()
    assert LOCKED in sign_in(client, account, "right-password").content.decode()
