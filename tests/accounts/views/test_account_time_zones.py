"""Times in one format, in the viewer's time zone: the account page sets it, every page shows
it, and a zone the site does not know is refused with the field named."""

from datetime import UTC, datetime

import pytest
from django.template import Context, Template
from django.utils import timezone

from accounts.models import AccountSettings
from traces.models import Trace

pytestmark = pytest.mark.django_db

NOON_UTC = datetime(2026, 12, 3, 12, 0, 5, tzinfo=UTC)


def render(text: str, **context) -> str:
    return Template(text).render(Context(context))


def test_every_moment_is_one_time_element_in_the_active_zone():
    assert render("{% when at %}", at=NOON_UTC) == (
        '<time datetime="2026-12-03T12:00:05+00:00" title="2026-12-03 12:00:05 UTC (UTC)">'
        "2026-12-03 12:00 UTC</time>"
    )
    with timezone.override("Asia/Tokyo"):
        shown = render('{% when at %} {% when at "date" %} {% when at "time" %}', at=NOON_UTC)
    assert ">2026-12-03 21:00 JST</time>" in shown and ">2026-12-03</time>" in shown
    assert ">21:00 JST</time>" in shown and "2026-12-03 21:00:05 JST (Asia/Tokyo)" in shown
    assert render("{% when at %}", at=None) == ""


def test_the_account_page_sets_the_zone_and_the_trace_list_follows(
    reviewer, client_for, project, make_trace
):
    trace = make_trace(project)
    Trace.objects.filter(pk=trace.pk).update(created_at=NOON_UTC)
    client = client_for(reviewer)
    page = client.get("/accounts/settings/")
    assert page.status_code == 200
    assert b'<option value="Asia/Tokyo">Asia/Tokyo</option>' in page.content
    assert b">2026-12-03 12:00 UTC</time>" in client.get("/traces/").content  # the site's zone

    saved = client.post("/accounts/settings/", {"time_zone": "Asia/Tokyo"}, follow=True)

    assert b"Times are shown in Asia/Tokyo from now on." in saved.content
    assert AccountSettings.objects.get(user=reviewer).time_zone == "Asia/Tokyo"
    listing = client.get("/traces/").content
    assert b">2026-12-03 21:00 JST</time>" in listing and b"(Asia/Tokyo)" in listing
    # Another session of the same account reads the choice once, at sign-in.
    assert b">2026-12-03 21:00 JST</time>" in client_for(reviewer).get("/traces/").content

    client.post("/accounts/settings/", {"time_zone": ""})  # back to the site's
    assert b">2026-12-03 12:00 UTC</time>" in client.get("/traces/").content


def test_a_zone_the_site_does_not_know_is_refused_with_the_field_named(reviewer, client_for):
    client = client_for(reviewer)
    response = client.post("/accounts/settings/", {"time_zone": "Mars/Olympus_Mons"})
    assert response.status_code == 422
    assert b"time_zone: &#x27;Mars/Olympus_Mons&#x27; is not a time zone" in response.content
    assert b'aria-invalid="true"' in response.content
    assert not AccountSettings.objects.filter(user=reviewer).exists()


def test_signed_out_the_account_page_asks_to_sign_in(client):
    response = client.get("/accounts/settings/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
