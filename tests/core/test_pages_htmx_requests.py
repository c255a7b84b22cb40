"""Every GET that answers htmx with a part of a page: the whole page on a history restore (a
back button after hx-push-url whose page left htmx's cache), and Vary: HX-Request always."""

import pytest

HTMX = {"HX-Request": "true"}
RESTORE = {"HX-Request": "true", "HX-History-Restore-Request": "true"}


@pytest.mark.parametrize("path", ["/traces/", "/queue/", "/experiences/", "/audit/"])
def test_a_history_restore_gets_the_whole_page_and_a_partial_request_the_part(
    client_for, admin_user, make_trace, project, path
):
    make_trace(project)
    client = client_for(admin_user)

    whole = client.get(path, headers=RESTORE)
    part = client.get(path, headers=HTMX)

    assert whole.status_code == part.status_code == 200
    assert b"<html" in whole.content and b"<html" not in part.content
    for response in (whole, part, client.get(path)):
        assert "HX-Request" in response["Vary"]


def test_a_step_raw_observation_varies_on_htmx(client_for, reviewer, make_trace, project):
    trace = make_trace(project)
    client = client_for(reviewer)
    url = f"/traces/{trace.pk}/steps/0/raw/"

    plain, part = client.get(url), client.get(url, headers=HTMX)

    assert plain["Content-Type"].startswith("text/plain") and b"<" not in plain.content[:1]
    assert part["Content-Type"].startswith("text/html")
    assert "HX-Request" in plain["Vary"] and "HX-Request" in part["Vary"]
    assert client.get(url, headers=RESTORE)["Content-Type"].startswith("text/plain")


def test_the_library_row_forms_vary_on_htmx(client_for, admin_user, project):
    from experiences.models import Experience

    experience = Experience.objects.create(
        project=project,
        task="web restarts",
        summary="web restarts",
        advice="Read the logs.",
        polarity="success",
        source="heuristic",
    )
    client = client_for(admin_user)
    for path in ("edit", "scope", "row"):
        url = f"/experiences/{experience.pk}/{path}/"
        part, whole = client.get(url, headers=HTMX), client.get(url, headers=RESTORE)
        assert part.status_code == 200 and b"<html" not in part.content, path
        assert "HX-Request" in part["Vary"] and "HX-Request" in whole["Vary"], path
        assert whole.status_code in (200, 302) and b"<tr" not in whole.content[:200], path
