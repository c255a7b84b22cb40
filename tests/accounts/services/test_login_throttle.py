"""Sign-in brute-force protection: growing delays per account and per address (no lockout),
the trusted proxy's address header, and the console's way in; on both the dashboard's and the
admin's sign-in page, over the real Redis."""

import time
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import AuditEvent
from accounts.services.login_throttle import login_failure_record, login_wait_seconds

pytestmark = pytest.mark.django_db

WAIT = "Too many failed sign-ins: wait"


@pytest.fixture
def account(db):
    name = f"ana-{time.monotonic_ns()}"  # fresh counters in the shared Redis
    User.objects.create_user(name, password="right-password", is_staff=True, is_superuser=True)
    return name


def sign_in(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def address() -> str:
    n = time.monotonic_ns()
    return f"10.{n % 250}.{n // 7 % 251}.{n // 11 % 249}"


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_five_wrong_passwords_make_the_next_try_wait_a_second_not_a_quarter_hour(account):
    # Before: five wrong passwords locked any account, the admin's too, for 15 minutes.
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        assert "didn't match" in sign_in(client, account, "wrong").content.decode()

    answer = sign_in(client, account, "right-password")
    assert f"{WAIT} 1 second before trying again" in answer.content.decode()
    assert not signed_in(client)
    for _ in range(3):  # refused while waiting, the password not even checked
        assert WAIT in sign_in(client, account, "wrong").content.decode()
    time.sleep(1.1)
    assert sign_in(client, account, "right-password").status_code == 302 and signed_in(client)
    event = AuditEvent.objects.get(action="login.delayed", object_type="account")
    assert event.object_id == account and event.after == {
        "failures": 5, "seconds": 1, "address": client.defaults["REMOTE_ADDR"]
    }  # fmt: skip


def test_each_further_failure_doubles_the_wait_up_to_the_cap(account, settings):
    settings.HINDSIGHT_LOGIN_MAX_DELAY_SECONDS = 4
    waits = []
    for _ in range(8):
        login_failure_record(username=account, address="192.0.2.1")
        waits.append(login_wait_seconds(username=account, address="192.0.2.1"))
    assert waits == [0, 0, 0, 0, 1, 2, 4, 4]


def test_tries_while_waiting_are_not_counted(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        sign_in(client, account, "wrong")
    for _ in range(5):
        sign_in(client, account, "wrong")  # refused: it had to wait

    login_failure_record(username=account, address=client.defaults["REMOTE_ADDR"])
    assert login_wait_seconds(username=account, address=client.defaults["REMOTE_ADDR"]) == 2


def test_guesses_from_elsewhere_do_not_hold_the_owner_at_her_usual_address(account):
    home = Client(REMOTE_ADDR=address())
    assert sign_in(home, account, "right-password").status_code == 302
    home.logout()
    guesser = Client(REMOTE_ADDR=address())
    for _ in range(8):
        sign_in(guesser, account, "wrong")

    assert sign_in(home, account, "right-password").status_code == 302 and signed_in(home)
    # The account's wait holds every address it never signed in from, the right password too.
    stranger = Client(REMOTE_ADDR=address())
    assert WAIT in sign_in(stranger, account, "right-password").content.decode()


def test_a_success_clears_the_failures(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(4):
        sign_in(client, account, "wrong")
    assert sign_in(client, account, "right-password").status_code == 302
    client.logout()
    for _ in range(4):
        sign_in(client, account, "wrong")
    assert sign_in(client, account, "right-password").status_code == 302


def test_one_address_trying_many_accounts_waits_alone_behind_a_trusted_proxy(account, settings):
    # Behind a proxy every sign-in comes from its address: 20 failures held everyone.
    settings.HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    settings.HINDSIGHT_CLIENT_ADDRESS_HEADER = "X-Forwarded-For"
    proxy, guesser, colleague = address(), address(), address()

    def behind_proxy(forwarded: str) -> Client:
        return Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forwarded)

    for n in range(6):
        sign_in(behind_proxy(f"198.51.100.{n}, {guesser}"), f"guess-{n}-{account}", "wrong")

    # The proxy's entry (the last) is the address; what the client wrote before it is not.
    assert WAIT in sign_in(behind_proxy(f"9.9.9.9, {guesser}"), account, "x").content.decode()
    assert sign_in(behind_proxy(colleague), account, "right-password").status_code == 302
    assert AuditEvent.objects.filter(
        action="login.delayed", object_type="address", object_id=guesser
    ).exists()


def test_without_the_proxy_header_setting_the_connection_address_counts(account, settings):
    settings.HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS = 3
    proxy = address()
    for n in range(3):
        sign_in(Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}"), f"g{n}", "x")
    answer = sign_in(Client(REMOTE_ADDR=proxy), account, "right-password")
    assert WAIT in answer.content.decode()


def test_the_admin_sign_in_counts_and_waits_alike(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(5):
        sign_in(client, account, "wrong", "/admin/login/")
    assert WAIT in sign_in(client, account, "right-password", "/admin/login/").content.decode()
    assert WAIT in sign_in(client, account, "right-password").content.decode()


def sign_in_link(username: str) -> str:
    out = StringIO()
    call_command("sign_in_link", username, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_an_admin_can_always_get_in_from_the_console(account):
    client = Client(REMOTE_ADDR=address())
    for _ in range(12):
        sign_in(client, account, "wrong")
    assert WAIT in sign_in(client, account, "right-password").content.decode()

    link = sign_in_link(account)
    assert link.startswith("http://localhost:")
    path = link.split("localhost:", 1)[1].partition("/")[2]
    answer = client.get("/" + path)

    assert answer.status_code == 302 and answer["Location"] == "/traces/"
    assert signed_in(client)
    assert login_wait_seconds(username=account, address=client.defaults["REMOTE_ADDR"]) == 0
    client.logout()
    again = client.get("/" + path)  # once only
    assert again.status_code == 400 and "used already" in again.content.decode()
    assert not signed_in(client)
    assert client.get("/" + path[:-3] + "xx/").status_code == 400  # cut or forged


def test_a_sign_in_link_needs_an_active_account(account):
    User.objects.filter(username=account).update(is_active=False)
    with pytest.raises(CommandError, match="no active account"):
        sign_in_link(account)


def test_the_console_says_how_long_the_link_works(account, settings):
    settings.HINDSIGHT_SIGN_IN_LINK_SECONDS = 120
    said = StringIO()
    call_command("sign_in_link", account, stdout=StringIO(), stderr=said)
    assert "within 2 minutes (HINDSIGHT_SIGN_IN_LINK_SECONDS)" in said.getvalue()
