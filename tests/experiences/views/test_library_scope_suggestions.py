"""/experiences/: scope values suggested from what the project's agents use, unknown ones warned
about (and still savable), and the status move on a promoted experience named for what it does."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import AuditEvent
from experiences.known_scopes import scope_known_values, scope_unknown_values
from experiences.models import Experience, RecallLog
from tests.support.pages import HTMX
from traces import known_values

pytestmark = pytest.mark.django_db


def _scope_url(experience: Experience) -> str:
    return f"/experiences/{experience.pk}/scope/"


def test_the_library_suggests_the_environments_agents_and_users_agents_used(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker", "k8s"], agent="ops-bot", user="alice")
    make_trace(project, environment=["bare-metal"], agent="cert-bot")
    RecallLog.objects.create(
        project=project, query={"agent": "recall-only-bot", "user": "bob", "environment": ["nomad"]}
    )
    make_experience(project)

    body = client_for(admin_user).get("/experiences/").content.decode()

    environments = body.split('<datalist id="known-environments"')[1].split("</datalist>")[0]
    for value in ("docker", "k8s", "bare-metal", "nomad"):
        assert f'<option value="{value}">' in environments
    agents = body.split('<datalist id="known-agents"')[1].split("</datalist>")[0]
    assert '"ops-bot"' in agents and '"cert-bot"' in agents and '"recall-only-bot"' in agents
    users = body.split('<datalist id="known-users"')[1].split("</datalist>")[0]
    assert '"alice"' in users and '"bob"' in users
    # the bulk scope inputs and the filters use them
    assert 'list="known-environments" data-known="environments"' in body
    assert 'name="tool"' in body and 'list="known-tools"' in body


def test_another_projects_values_are_never_suggested(
    client_for, admin_user, project, other_project, make_trace
):
    make_trace(other_project, environment=["secret-env"], agent="their-bot")

    body = client_for(admin_user).get("/experiences/").content.decode()

    assert "secret-env" not in body and "their-bot" not in body


def test_the_results_partial_does_not_read_the_known_values(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    make_experience(project)

    body = client_for(admin_user).get("/experiences/", headers=HTMX).content.decode()

    assert "<datalist" not in body


def test_known_values_cost_two_queries_and_are_bounded(project, make_trace, monkeypatch):
    for i in range(4):
        make_trace(project, environment=[f"env-{i}"], agent=f"bot-{i}")
    monkeypatch.setattr(known_values, "RECENT_TRACES", 2)

    with CaptureQueriesContext(connection) as queries:
        known = scope_known_values(project=project)

    assert len(queries) == 2  # the trace window, the recall window
    assert known.environments == ["env-2", "env-3"]  # only the latest two traces
    assert known.agents == ["bot-2", "bot-3"]


def test_an_unknown_value_gets_a_near_known_one_as_suggestion(project, make_trace):
    make_trace(project, environment=["docker"], agent="ops-bot")
    known = scope_known_values(project=project)

    unknown = scope_unknown_values(
        known=known, environments=["Dokcer", "docker"], agents=["ops-bot", "opsbot"], users=[]
    )

    assert [(u.kind, u.value, u.suggestion) for u in unknown] == [
        ("environments", "dokcer", "docker"),
        ("agents", "opsbot", "ops-bot"),
    ]


def test_an_unknown_scope_is_not_saved_silently_but_comes_back_with_a_warning(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"], agent="ops-bot")
    experience = make_experience(project)

    response = client_for(admin_user).post(
        _scope_url(experience), {"environments": "dokcer", "agents": "ops-bot"}, headers=HTMX
    )

    assert response.status_code == 422
    body = response.content.decode()
    assert 'role="alert"' in body and "never seen in this project" in body
    assert "<code><bdi>dokcer</bdi></code> — did you mean <code><bdi>docker</bdi></code>?" in body
    assert ">Save anyway</button>" in body
    assert 'name="allow_unknown" value="environments:dokcer"' in body
    assert 'value="dokcer"' in body  # what was typed is kept
    experience.refresh_from_db()
    assert experience.scope_environments == []
    assert not AuditEvent.objects.filter(action="experience.scope").exists()


def test_saving_anyway_after_the_warning_saves_the_new_value(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    experience = make_experience(project)
    data = {"environments": "nomad", "allow_unknown": "environments:nomad"}

    response = client_for(admin_user).post(_scope_url(experience), data, headers=HTMX)

    assert response.status_code == 200
    assert b"environment: <bdi>nomad</bdi>" in response.content
    experience.refresh_from_db()
    assert experience.scope_environments == ["nomad"]


def test_a_value_changed_after_the_warning_is_warned_about_again(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    experience = make_experience(project)
    data = {"environments": "dockr", "allow_unknown": "environments:dokcer"}

    response = client_for(admin_user).post(_scope_url(experience), data, headers=HTMX)

    assert response.status_code == 422
    assert 'name="allow_unknown" value="environments:dockr"' in response.content.decode()
    experience.refresh_from_db()
    assert experience.scope_environments == []


def test_the_scope_form_without_htmx_saves_and_warns_in_a_message(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    experience = make_experience(project)

    response = client_for(admin_user).post(
        _scope_url(experience), {"environments": "dokcer"}, follow=True
    )

    body = response.content.decode()
    assert "Scope saved with values no trace or recall of this project used" in body
    assert "&#x27;dokcer&#x27; (environment; did you mean &#x27;docker&#x27;?)" in body
    experience.refresh_from_db()
    assert experience.scope_environments == ["dokcer"]


def test_bulk_scope_with_an_unknown_value_is_refused_until_saved_anyway(
    client_for, admin_user, project, make_trace, make_experience
):
    """As the row editor: `dockr` on a promoted experience is not saved silently."""
    make_trace(project, environment=["docker"], agent="ops-bot")
    one = make_experience(project, status="promoted", advice="Promoted advice")
    two = make_experience(project)
    data = {"action": "scope", "ids": [one.pk, two.pk], "environments": "dockr",
            "agents": "ops-bot", "query": "status=promoted"}  # fmt: skip
    client = client_for(admin_user)

    refused = client.post("/experiences/bulk/", data)

    assert refused.status_code == 422
    body = refused.content.decode()
    assert "Scope not saved yet" in body and "did you mean <code><bdi>docker</bdi></code>?" in body
    one.refresh_from_db()
    assert one.scope_environments == []
    signature = body.split('name="allow_unknown" value="')[1].split('"')[0]
    assert 'href="/experiences/?status=promoted"' in body  # back to the list as it was

    saved = client.post("/experiences/bulk/", {**data, "allow_unknown": signature}, follow=True)

    assert "2 experiences given the new scope." in saved.content.decode()
    one.refresh_from_db()
    assert one.scope_environments == ["dockr"]


def test_a_changed_unknown_value_is_asked_about_again(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    one = make_experience(project)
    data = {"action": "scope", "ids": [one.pk], "environments": "dockr"}
    client = client_for(admin_user)
    signature = (
        client.post("/experiences/bulk/", data)
        .content.decode()
        .split('name="allow_unknown" value="')[1]
        .split('"')[0]
    )

    again = client.post("/experiences/bulk/", {**data, "environments": "dokr",
                                               "allow_unknown": signature})  # fmt: skip

    assert again.status_code == 422
    one.refresh_from_db()
    assert one.scope_environments == []


def test_known_scope_values_are_saved_without_a_warning(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"], agent="ops-bot", user="alice")
    experience = make_experience(project)
    data = {"environments": "Docker", "agents": "ops-bot", "users": "alice"}

    response = client_for(admin_user).post(_scope_url(experience), data, headers=HTMX)

    assert response.status_code == 200
    experience.refresh_from_db()
    assert experience.scope_environments == ["docker"]
    assert experience.scope_users == ["alice"]


def test_unknown_values_are_escaped_in_the_warning(
    client_for, admin_user, project, make_trace, make_experience
):
    make_trace(project, environment=["docker"])
    experience = make_experience(project)

    response = client_for(admin_user).post(
        _scope_url(experience), {"agents": "<img src=x onerror=alert(1)>"}, headers=HTMX
    )

    body = response.content.decode()
    assert "<img src=x" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body


def test_a_promoted_experience_offers_demote_not_approve(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, status="promoted")

    body = client_for(admin_user).get(f"/experiences/{experience.pk}/row/", headers=HTMX)

    text = body.content.decode()
    assert 'value="approved"' in text and ">Demote to approved</button>" in text
    assert ">Approve</button>" not in text


def test_an_approved_experience_still_offers_approve_wording_elsewhere(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, status="archived")

    text = client_for(admin_user).get(f"/experiences/{experience.pk}/row/", headers=HTMX)

    assert ">Approve</button>" in text.content.decode()


def test_row_controls_carry_the_keys_focus_returns_to(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, status="approved")
    client = client_for(admin_user)

    row = client.get(f"/experiences/{experience.pk}/row/", headers=HTMX).content.decode()
    scope = client.get(_scope_url(experience), headers=HTMX).content.decode()

    assert 'tabindex="-1"' in row
    for key in ("edit", "scope", "vote-up", "vote-down", "status-promoted"):
        assert f'data-focus-key="{key}"' in row
    assert 'data-return-focus="scope"' in scope
