"""A bad value in a list's filters (an unknown choice, a malformed date, a date range upside
down) is named next to its field and in a notice that says it was not applied, on the trace
list, the library, the queue and the audit log; the trace list pages back ("Newer", "Newest");
/stats/ shows its figures as tables."""

import re

import pytest

from core.pagination import encode_cursor, newer_page, paginate_by_id
from traces.models import Trace

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def _error_of(body: str, field_id: str) -> str:
    found = re.search(rf'<small class="field-error" id="{field_id}_error"[^>]*>(.*?)</small>', body)
    assert found, f"no error element for {field_id}"
    return found.group(1)


def test_an_unknown_outcome_and_a_malformed_date_are_named_and_not_applied(
    client_for, reviewer, project, make_trace
):
    make_trace(project, outcome="failure")
    make_trace(project, outcome="success")

    response = client_for(reviewer).get("/traces/?outcome=bogus&since=2026-13-45")
    body = response.content.decode()

    assert response.status_code == 200
    assert "2 filters were not applied" in body
    assert "Select a valid choice. bogus is not one of the available choices." in _error_of(
        body, "id_outcome"
    )
    assert _error_of(body, "id_since") == "Enter a valid date."
    assert re.search(r'<select name="outcome"[^>]*aria-invalid="true"', body)
    assert 'aria-describedby="id_since_error"' in body
    assert "2 traces." in body  # the list itself: unfiltered, and says so above
    assert '<details class="filter-fold" open>' in body  # the errors are not folded away


def test_an_upside_down_date_range_is_not_applied(client_for, reviewer, project, make_trace):
    make_trace(project)

    body = client_for(reviewer).get("/traces/?since=2026-12-10&until=2026-12-01").content.decode()

    assert _error_of(body, "id_since") == "Later than Until: neither date was applied."
    assert _error_of(body, "id_until") == "Earlier than Since: neither date was applied."
    assert "1 trace." in body and "2 filters were not applied" in body


def test_valid_filters_give_no_notice_and_empty_error_slots(
    client_for, reviewer, project, make_trace
):
    make_trace(project, outcome="failure")

    body = client_for(reviewer).get("/traces/?outcome=failure&since=2026-01-01").content.decode()

    assert "not applied" not in body
    assert _error_of(body, "id_outcome") == ""
    assert "aria-invalid" not in body
    assert "· 2 active" in body  # the folded filters' summary on a narrow screen


def test_htmx_results_carry_the_field_errors_out_of_band(client_for, reviewer, project, make_trace):
    make_trace(project)
    client = client_for(reviewer)

    body = client.get("/traces/?until=nope", headers=HTMX).content.decode()

    assert body.lstrip().startswith('<section id="results"')
    after = body.split("</section>")[-1]  # the out-of-band pieces follow the results
    assert (
        '<small class="field-error" id="id_until_error" hx-swap-oob="true">Enter a valid date.'
        in after
    )
    assert '<small class="field-error" id="id_outcome_error" hx-swap-oob="true"></small>' in after
    assert '<span class="active-count" id="filters-active" hx-swap-oob="true">' in after
    assert "One filter was not applied" in body


def test_the_library_names_an_unknown_status(client_for, reviewer, project, make_experience):
    make_experience(project, status="approved")

    body = client_for(reviewer).get("/experiences/?status=bogus&polarity=x").content.decode()

    assert "2 filters were not applied" in body
    assert "bogus is not one of the available choices" in _error_of(body, "id_status")
    assert "1 experience." in body


def test_the_queue_names_an_unknown_reason(client_for, reviewer, project, make_trace):
    make_trace(project)

    body = client_for(reviewer).get("/queue/?outcome=bogus&why=nope").content.decode()

    assert "2 filters were not applied" in body
    assert "nope is not one of the available choices" in _error_of(body, "id_why")
    assert "1–1 of 1" in body


def test_the_audit_log_names_a_malformed_date(client_for, admin_user, project):
    client = client_for(admin_user)
    client.post("/settings/keys/", {"name": "ci", "scopes": ["ingest"]})  # one event to list

    body = client.get("/audit/?since=31/12/2026").content.decode()

    assert "One filter was not applied" in body
    assert _error_of(body, "id_since") == "Enter a valid date."


# ---------------------------------------------------------------------------- Newer / Newest


def _link(body: str, link_id: str) -> str | None:
    found = re.search(rf'<a href="([^"]*)"[^>]*id="{link_id}"', body)
    return found.group(1).replace("&amp;", "&") if found else None


def _shown(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'name="id" value="(\d+)"', body)]


def test_older_pages_link_back_to_the_newer_page_and_the_newest(
    client_for, reviewer, project, make_trace, monkeypatch
):
    monkeypatch.setattr("traces.views.trace_list.PAGE_SIZE", 2)
    ids = sorted((make_trace(project, outcome="failure").pk for _ in range(5)), reverse=True)
    make_trace(project, outcome="success")  # filtered out below
    client = client_for(reviewer)

    first = client.get("/traces/?outcome=failure").content.decode()
    assert _shown(first) == ids[:2]
    assert _link(first, "page-newer") is None and _link(first, "page-newest") is None
    second = client.get("/traces/" + _link(first, "page-older")).content.decode()
    assert _shown(second) == ids[2:4]
    assert _link(second, "page-newest") == "/traces/?outcome=failure"
    assert _link(second, "page-newer") == "?outcome=failure"  # the newer page is the first
    third = client.get("/traces/" + _link(second, "page-older")).content.decode()
    assert _shown(third) == ids[4:]
    assert _link(third, "page-older") is None
    back = client.get("/traces/" + _link(third, "page-newer")).content.decode()
    assert _shown(back) == ids[2:4]


def test_newer_page_is_the_page_before_in_the_same_order(project, make_trace):
    for _ in range(7):
        make_trace(project, labelled=None)
    rows = Trace.objects.filter(project=project)
    pages, cursor = [], None
    while True:  # every page forward, then each one's way back
        page = paginate_by_id(rows, cursor=cursor, limit=3)
        pages.append((cursor, [t.pk for t in page.items]))
        if not page.next_cursor:
            break
        cursor = page.next_cursor

    assert newer_page(rows, cursor=None, limit=3) is None
    for (before_cursor, before_items), (cursor, _items) in zip(pages, pages[1:], strict=False):
        back = newer_page(rows, cursor=cursor, limit=3)
        assert back is not None and back.cursor == before_cursor
        assert [t.pk for t in paginate_by_id(rows, cursor=back.cursor, limit=3).items] == (
            before_items
        )
    beyond = newer_page(rows, cursor=encode_cursor(1), limit=3)  # past the end: the last page
    assert beyond is not None and beyond.cursor is not None


# ---------------------------------------------------------------------------- stats without JS


def test_stats_show_every_figure_as_a_table(client_for, reviewer, project, make_trace):
    make_trace(project, steps=4, labelled="heuristic")
    make_trace(project, steps=2)

    body = client_for(reviewer).get("/stats/").content.decode()

    labels = body.split('aria-labelledby="labels-h">')[2].split("</table>")[0]
    assert '<th scope="col">heuristic</th>' in labels
    # necessary: llm 2, heuristic 4, human 0, accepted as is 0, all 6
    assert re.search(
        r"lbl-necessary\">necessary</span></th><td>2</td><td>4</td><td>0</td><td>0</td><td>6</td>",
        labels,
    )
    status = body.split('aria-labelledby="status-h">')[2].split("</table>")[0]
    assert '<th scope="row">reviewed</th><td>2</td>' in status
    assert "<td>2</td></tr>" in body.split('aria-labelledby="days-h">')[2]
    # no "Loading…" without a script: it is hidden until stats.js shows it
    assert '<p class="muted" data-js-only hidden>Loading experience statistics…</p>' in body
    assert '<noscript><p><a href="/experiences/stats/">' in body


def test_the_experience_stats_are_a_page_of_their_own_without_htmx(
    client_for, reviewer, project, make_experience
):  # fmt: skip
    make_experience(project, status="approved")
    client = client_for(reviewer)

    page = client.get("/experiences/stats/")
    partial = client.get("/experiences/stats/", headers=HTMX)

    assert b"<html" in page.content and b'aria-label="Main"' in page.content
    assert b"<h1>Experiences and recall</h1>" in page.content
    assert b"Experiences by status" in page.content
    assert b"<html" not in partial.content and b"Experiences by status" in partial.content
    assert "HX-Request" in page.headers["Vary"]
    # added to what the session already varies on, never in its place
    assert {"Cookie", "HX-Request"} <= {v.strip() for v in partial.headers["Vary"].split(",")}
    # a history restore (the back button after the cache let the page go) is the whole page
    restore = HTMX | {"HX-History-Restore-Request": "true"}
    restored = client.get("/experiences/stats/", headers=restore)
    assert b"<html" in restored.content


def test_a_history_restore_gets_the_whole_page_with_its_suggestions(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    tool = sorted(make_trace(project).tools)[0]
    restore = HTMX | {"HX-History-Restore-Request": "true"}

    page = client_for(reviewer).get("/traces/", headers=restore).content.decode()

    assert "<html" in page
    assert f'<option value="{tool}">' in page.split('<datalist id="known-tools">')[1]


# ---------------------------------------------------------------------------- conflicts


def test_a_conflict_on_a_full_page_request_is_no_bare_409(
    client_for, reviewer, admin_user, project, make_trace
):
    """Only htmx gets a 409 (with the step's current state to swap in); a full-page relabel
    that conflicts goes back to the inspector with the message, so no 409 page is needed."""
    trace = make_trace(project)
    url = f"/traces/{trace.pk}/steps/0/label/"
    client_for(admin_user).post(url, {"label": "failed", "version": 1}, headers=HTMX)
    client = client_for(reviewer)

    response = client.post(url, {"label": "redundant", "version": 1})

    assert response.status_code == 302 and response.url == f"/traces/{trace.pk}/#step-0"
    assert "changed meanwhile by ada" in client.get(response.url).content.decode()
