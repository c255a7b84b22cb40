"""The experience library: filters, search, pages, empty states, inline edits, votes, bulk."""

import pytest
from django.test import Client

from accounts.models import AuditEvent, Membership
from experiences.models import Experience, ExperienceVersion, ExperienceVote
from tests.support.pages import HTMX, count_queries

# ---------------------------------------------------------------------------- the list


def test_it_lists_the_projects_experiences_newest_first(
    client_for, reviewer, project, make_experience
):
    older = make_experience(project, advice="When you rotate certificates, first check the expiry.")
    newer = make_experience(project, advice="When you migrate a table, first take a backup.")

    response = client_for(reviewer).get("/experiences/")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.index(newer.advice) < body.index(older.advice)
    assert "2 experiences." in body


def test_each_row_shows_scene_evidence_last_recall_and_status(
    client_for, reviewer, project, make_experience
):
    make_experience(
        project,
        tools=["kubectl"],
        environment=["k8s"],
        support_count=4,
        success_count=3,
        failure_count=1,
        upvotes=2,
        downvotes=1,
        status="approved",
        scope_agents=["ops-bot"],
        last_recalled_at="2026-01-01T00:00Z",
    )

    body = client_for(reviewer).get("/experiences/").content.decode()

    assert '<code class="tool"><bdi>kubectl</bdi></code>' in body
    assert '<span class="tag">k8s</span>' in body
    assert "<strong>4</strong> traces" in body and "3 succeeded" in body and "1 failed" in body
    assert (  # the vote buttons' names (the visible text is the count alone)
        '<span class="visually-hidden">Helpful (2 up votes)</span>' in body
        and '<span class="visually-hidden">Not helpful (1 down vote)</span>' in body
    )
    assert "ago</time>" in body
    assert 'class="badge st-approved"' in body
    assert "agent: <bdi>ops-bot</bdi>" in body


def test_it_never_shows_another_projects_experiences(
    client_for, reviewer, other_project, make_experience
):
    make_experience(other_project, advice="A secret lesson from elsewhere.")

    body = client_for(reviewer).get("/experiences/").content

    assert b"A secret lesson from elsewhere" not in body
    assert b"No experiences yet" in body


def test_experiences_merged_into_another_are_left_out(
    client_for, reviewer, project, make_experience
):
    survivor = make_experience(project, advice="The survivor's advice.")
    make_experience(project, advice="The absorbed advice.", merged_into=survivor)

    body = client_for(reviewer).get("/experiences/").content

    assert b"The survivor" in body and b"The absorbed advice" not in body


def test_filters_narrow_the_list(client_for, reviewer, project, make_experience):
    make_experience(
        project,
        advice="Alpha: read the logs.",
        status="approved",
        polarity="failure",
        source="llm",
        tools=["kubectl"],
        environment=["k8s"],
        agent="kube-bot",
        scope_environments=["k8s"],
    )
    make_experience(project, advice="Beta: restart the pod.", scope_users=["ann"], source="human")
    make_experience(project, advice="Gamma: check the disk.", scope_agents=["ops-bot"])
    make_experience(project, advice="Delta: ask the user.")
    client = client_for(reviewer)

    def shown(query: str) -> set[str]:
        body = client.get("/experiences/?" + query).content.decode()
        return {name for name in ("Alpha", "Beta", "Gamma", "Delta") if f"{name}:" in body}

    assert shown("status=approved") == {"Alpha"}
    assert shown("polarity=failure") == {"Alpha"}
    assert shown("source=llm") == {"Alpha"}
    assert shown("source=human") == {"Beta"}
    assert shown("tool=kubectl") == {"Alpha"}
    assert shown("environment=K8S") == {"Alpha"}
    assert shown("agent=kube-bot") == {"Alpha"}
    assert shown("scope=global") == {"Delta"}
    assert shown("scope=environment") == {"Alpha"}
    assert shown("scope=agent") == {"Gamma"}
    assert shown("scope=user") == {"Beta"}
    assert shown("q=restart+POD") == {"Beta"}
    assert shown("q=the") == {"Alpha", "Beta", "Gamma", "Delta"}
    assert shown("q=restart+disk") == set()


def test_an_invalid_filter_is_ignored_not_an_error(client_for, reviewer, project, make_experience):
    make_experience(project)

    response = client_for(reviewer).get("/experiences/?status=bogus&scope=nope&cursor=%%%")

    assert response.status_code == 200
    assert b"1 experience." in response.content


def test_a_filter_that_matches_nothing_says_so(client_for, reviewer, project, make_experience):
    make_experience(project)

    body = client_for(reviewer).get("/experiences/?status=promoted").content

    assert b"No experience matches these filters" in body


def test_the_empty_library_says_where_experiences_come_from(client_for, admin_user):
    body = client_for(admin_user).get("/experiences/").content.decode()

    assert "No experiences yet" in body
    assert "distilled from your agents" in body and 'href="/traces/"' in body


def test_pages_follow_the_cursor(client_for, reviewer, project, make_experience, monkeypatch):
    made = [make_experience(project, advice=f"Advice number {i}.") for i in range(5)]
    monkeypatch.setattr("experiences.views.library.PAGE_SIZE", 2)
    client = client_for(reviewer)

    first = client.get("/experiences/").context["result"].page
    second = client.get(f"/experiences/?cursor={first.next_cursor}").context["result"].page

    assert [e.pk for e in first.items] == [made[4].pk, made[3].pk]
    assert [e.pk for e in second.items] == [made[2].pk, made[1].pk]
    assert "Older experiences" in client.get("/experiences/").content.decode()


def test_htmx_gets_only_the_results_partial(client_for, reviewer, project, make_experience):
    make_experience(project)

    response = client_for(reviewer).get("/experiences/", headers=HTMX)

    assert response.status_code == 200
    assert response.content.lstrip().startswith(b'<section id="results"')
    assert b"<html" not in response.content
    assert "HX-Request" in response.headers["Vary"]


def test_the_full_page_has_the_filters_and_the_results(
    client_for, reviewer, project, make_experience
):
    make_experience(project)

    body = client_for(reviewer).get("/experiences/").content

    assert b"<html" in body and b'id="results"' in body and b"<search>" in body
    assert b"<label>Scope <select" in body


def test_the_list_reads_a_constant_number_of_queries(
    client_for, admin_user, project, make_experience
):
    client = client_for(admin_user)
    for _ in range(3):
        experience = make_experience(project)
        ExperienceVote.objects.create(experience=experience, user=admin_user, value=1)
    few = count_queries(client, "/experiences/")
    for _ in range(12):
        make_experience(project, scope_environments=["k8s"], last_recalled_at="2026-01-01T00:00Z")
    many = count_queries(client, "/experiences/")

    assert few == many, (few, many)
    assert many <= 8, many


def test_advice_and_scene_are_escaped(client_for, reviewer, project, make_experience):
    make_experience(
        project, advice="<script>alert(1)</script> then <b>bold</b>", tools=["<img src=x>"]
    )

    body = client_for(reviewer).get("/experiences/").content.decode()

    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body
    assert "<img src=x>" not in body and "&lt;img src=x&gt;" in body


# ---------------------------------------------------------------------------- who may do what


@pytest.mark.parametrize("path", ["/experiences/", "/experiences/1/", "/merges/", "/kb/"])
def test_anonymous_visitors_are_sent_to_the_login_page(client, db, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/?next=")


def test_reviewers_see_votes_but_no_admin_controls(client_for, reviewer, project, make_experience):
    make_experience(project)

    body = client_for(reviewer).get("/experiences/").content.decode()

    assert 'class="vote"' in body
    assert 'id="bulk"' not in body and "/edit/" not in body and "/status/" not in body


def test_admins_get_bulk_selection_and_row_controls(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project)

    body = client_for(admin_user).get("/experiences/").content.decode()

    assert 'id="bulk"' in body and "data-select-all" in body
    assert f'name="ids" value="{experience.pk}" form="bulk"' in body
    assert f'hx-get="/experiences/{experience.pk}/edit/"' in body
    assert 'name="status" value="approved"' in body and ">Approve</button>" in body


@pytest.mark.parametrize(
    ("method", "suffix", "data"),
    [
        ("get", "edit/", {}),
        ("post", "edit/", {"advice": "x", "task_type": "query"}),
        ("get", "scope/", {}),
        ("post", "scope/", {"environments": "k8s"}),
        ("post", "status/", {"status": "approved"}),
    ],
)
def test_reviewers_cannot_change_experiences(
    client_for, reviewer, project, make_experience, method, suffix, data
):
    experience = make_experience(project)
    client = client_for(reviewer)

    full = getattr(client, method)(f"/experiences/{experience.pk}/{suffix}", data)
    partial = getattr(client, method)(f"/experiences/{experience.pk}/{suffix}", data, headers=HTMX)

    assert full.status_code == 403 and b"for project admins" in full.content
    assert partial.status_code == 403 and b"<html" not in partial.content
    experience.refresh_from_db()
    assert (experience.status, experience.version, experience.scope_environments) == (
        "candidate",
        1,
        [],
    )


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("get", ""),
        ("get", "row/"),
        ("get", "edit/"),
        ("post", "edit/"),
        ("get", "scope/"),
        ("post", "scope/"),
        ("post", "status/"),
        ("post", "vote/"),
    ],
)
def test_another_projects_experience_is_not_found(
    client_for, outsider, project, make_experience, method, suffix
):
    experience = make_experience(project)

    response = getattr(client_for(outsider), method)(
        f"/experiences/{experience.pk}/{suffix}", headers=HTMX
    )

    assert response.status_code == 404


def test_the_role_that_counts_is_the_one_in_the_experiences_project(
    client_for, reviewer, project, other_project, make_experience
):
    Membership.objects.create(project=other_project, user=reviewer, role=Membership.Role.ADMIN)
    mine_as_reviewer = make_experience(project)
    mine_as_admin = make_experience(other_project)
    client = client_for(reviewer)

    as_reviewer = client.post(f"/experiences/{mine_as_reviewer.pk}/status/", {"status": "approved"})
    as_admin = client.post(f"/experiences/{mine_as_admin.pk}/status/", {"status": "approved"})

    assert as_reviewer.status_code == 403
    assert as_admin.status_code == 302
    assert client.get(f"/experiences/{mine_as_admin.pk}/").status_code == 200


def test_forms_need_a_csrf_token(admin_user, project, make_experience):
    experience = make_experience(project)
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)

    response = client.post(f"/experiences/{experience.pk}/status/", {"status": "approved"})

    assert response.status_code == 403
    experience.refresh_from_db()
    assert experience.status == "candidate"


# ---------------------------------------------------------------------------- inline changes


def test_the_edit_partial_is_a_row_with_the_form(client_for, admin_user, project, make_experience):
    experience = make_experience(project, tools=["docker_logs", "grep"])

    response = client_for(admin_user).get(f"/experiences/{experience.pk}/edit/", headers=HTMX)

    body = response.content.decode()
    assert body.lstrip().startswith(
        f'<tr id="experience-{experience.pk}" class="experience-row editing">'
    )
    assert 'value="docker_logs, grep"' in body
    assert f'<label for="edit-{experience.pk}-advice">' in body
    assert f'hx-get="/experiences/{experience.pk}/row/"' in body  # cancel


def test_without_htmx_the_edit_form_is_a_page(client_for, admin_user, project, make_experience):
    experience = make_experience(project)

    response = client_for(admin_user).get(f"/experiences/{experience.pk}/edit/")

    assert b"<html" in response.content and b"Edit experience #" in response.content


def test_an_inline_edit_saves_a_new_human_version(client_for, admin_user, project, make_experience):
    experience = make_experience(project)
    data = {
        "advice": "When the web container restarts, read docker_logs --since 10m first.",
        "task_type": "analysis",
        "tools": "docker_logs, grep , docker_logs",
        "environment": "docker, compose",
        "intent": "find the restart cause",
        "agent": "ops-bot",
    }

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/edit/", data, headers=HTMX
    )

    assert response.status_code == 200
    assert b'class="experience-row status-row-candidate"' in response.content
    assert b"docker_logs --since 10m" in response.content
    experience.refresh_from_db()
    assert experience.advice == data["advice"] and experience.version == 2
    assert (experience.source, experience.task_type) == ("human", "analysis")
    assert experience.tools == ["docker_logs", "grep"] and experience.environment == [
        "docker",
        "compose",
    ]
    assert ExperienceVersion.objects.get(experience=experience).reason == "edited by ada"
    assert AuditEvent.objects.filter(
        action="experience.edit", object_id=str(experience.pk)
    ).exists()


def test_saving_an_unchanged_form_makes_no_new_version(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, intent="find the cause")
    data = {
        "advice": experience.advice,
        "task_type": "operation",
        "tools": "docker_logs",
        "environment": "docker",
        "intent": "find the cause",
        "agent": "ops-bot",
    }

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/edit/", data, headers=HTMX
    )

    assert response.status_code == 200
    experience.refresh_from_db()
    assert (experience.version, experience.source) == (1, "heuristic")
    assert not ExperienceVersion.objects.exists()


def test_an_edit_without_htmx_redirects_to_the_experience(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project)
    data = {"advice": "When you see restarts, read the logs.", "task_type": "operation"}

    response = client_for(admin_user).post(f"/experiences/{experience.pk}/edit/", data)

    assert response.status_code == 302 and response.url == f"/experiences/{experience.pk}/"


def test_an_empty_advice_is_refused_with_the_form_again(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project)

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/edit/", {"advice": "  ", "task_type": "query"}, headers=HTMX
    )

    assert response.status_code == 422
    assert b"This field is required" in response.content and b"editing" in response.content
    experience.refresh_from_db()
    assert experience.version == 1


def test_the_scope_is_set_inline(client_for, admin_user, project, make_experience, make_trace):
    experience = make_experience(project)
    make_trace(project, environment=["k8s", "docker"])  # known values: saved without a warning
    data = {"environments": "K8S, docker", "agents": "ops-bot", "users": ""}

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/scope/", data, headers=HTMX
    )

    assert response.status_code == 200
    assert b"environment: <bdi>docker</bdi>" in response.content
    experience.refresh_from_db()
    assert (experience.scope_environments, experience.scope_agents, experience.scope_users) == (
        ["docker", "k8s"],
        ["ops-bot"],
        [],
    )
    assert AuditEvent.objects.filter(action="experience.scope").exists()


def test_the_status_changes_inline_and_shows_the_next_moves(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project)

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/status/", {"status": "approved"}, headers=HTMX
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert 'class="badge st-approved"' in body and ">Promote</button>" in body
    experience.refresh_from_db()
    assert experience.status == "approved"
    assert AuditEvent.objects.get(action="experience.status").actor_user == admin_user


def test_a_forbidden_transition_comes_back_with_the_reason(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, status="rejected")

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/status/", {"status": "promoted"}, headers=HTMX
    )

    assert response.status_code == 409
    assert b"Not saved." in response.content and b"can become candidate" in response.content
    experience.refresh_from_db()
    assert experience.status == "rejected"


def test_a_status_change_without_htmx_redirects_with_a_message(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project, status="rejected")

    response = client_for(admin_user).post(
        f"/experiences/{experience.pk}/status/", {"status": "promoted"}, follow=True
    )

    assert response.redirect_chain[-1][0] == f"/experiences/{experience.pk}/"
    assert b"can become candidate" in response.content


def test_the_cancel_partial_is_the_display_row(client_for, admin_user, project, make_experience):
    experience = make_experience(project)
    client = client_for(admin_user)

    response = client.get(f"/experiences/{experience.pk}/row/", headers=HTMX)

    assert response.content.lstrip().startswith(
        f'<tr id="experience-{experience.pk}" class="experience-row '.encode()
    )
    assert client.get(f"/experiences/{experience.pk}/row/").url == f"/experiences/{experience.pk}/"


# ---------------------------------------------------------------------------- votes


def test_a_reviewer_votes_up_then_changes_to_down_then_withdraws(
    client_for, reviewer, project, make_experience
):
    experience = make_experience(project)
    client = client_for(reviewer)
    url = f"/experiences/{experience.pk}/vote/"

    up = client.post(url, {"value": "1"}, headers=HTMX)
    assert up.status_code == 200
    assert b'class="small vote-up" aria-pressed="true"' in up.content
    assert b'name="value" value="0" class="small vote-up"' in up.content  # pressing again withdraws
    client.post(url, {"value": "-1"}, headers=HTMX)
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (0, 1)
    client.post(url, {"value": "0"}, headers=HTMX)
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (0, 0)
    assert not ExperienceVote.objects.exists()


def test_a_vote_without_htmx_goes_back_to_the_page_it_came_from(
    client_for, reviewer, project, make_experience
):
    experience = make_experience(project)

    response = client_for(reviewer).post(
        f"/experiences/{experience.pk}/vote/",
        {"value": "1", "next": f"/experiences/{experience.pk}/"},
    )

    assert response.url == f"/experiences/{experience.pk}/"


def test_an_offsite_next_is_ignored(client_for, reviewer, project, make_experience):
    experience = make_experience(project)

    response = client_for(reviewer).post(
        f"/experiences/{experience.pk}/vote/", {"value": "1", "next": "https://evil.example/"}
    )

    assert response.url == f"/experiences/{experience.pk}/"


def test_an_invalid_vote_is_refused(client_for, reviewer, project, make_experience):
    experience = make_experience(project)

    response = client_for(reviewer).post(
        f"/experiences/{experience.pk}/vote/", {"value": "5"}, headers=HTMX
    )

    assert response.status_code == 409 and b"A vote is up, down or withdrawn" in response.content


# ---------------------------------------------------------------------------- bulk actions


def test_bulk_approve_reports_what_could_not_move(client_for, admin_user, project, make_experience):
    candidates = [make_experience(project) for _ in range(3)]
    rejected = make_experience(project, status="rejected")
    ids = [e.pk for e in [*candidates, rejected]]

    response = client_for(admin_user).post(
        "/experiences/bulk/",
        {"action": "approve", "ids": ids, "query": "status=candidate"},
        follow=True,
    )

    assert response.redirect_chain[0][0] == "/experiences/?status=candidate"
    body = response.content.decode()
    assert "3 experiences approved." in body
    assert f"#{rejected.pk} left as it was: a rejected experience can become candidate" in body
    assert set(Experience.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        "approved",
        "rejected",
    }
    assert AuditEvent.objects.filter(action="experience.status").count() == 3


def test_bulk_archive(client_for, admin_user, project, make_experience):
    experiences = [make_experience(project, status="approved") for _ in range(2)]

    client_for(admin_user).post(
        "/experiences/bulk/", {"action": "archive", "ids": [e.pk for e in experiences]}
    )

    assert set(Experience.objects.values_list("status", flat=True)) == {"archived"}


def test_bulk_scope_sets_the_same_scope_on_each(
    client_for, admin_user, project, make_experience, make_trace
):  # fmt: skip
    make_trace(project, environment=["k8s"], user="bob")  # known values: no question
    experiences = [make_experience(project) for _ in range(2)]

    client_for(admin_user).post(
        "/experiences/bulk/",
        {
            "action": "scope",
            "ids": [e.pk for e in experiences],
            "environments": "k8s",
            "agents": "",
            "users": "bob",
        },
    )

    for experience in experiences:
        experience.refresh_from_db()
        assert (experience.scope_environments, experience.scope_users) == (["k8s"], ["bob"])


def test_bulk_ignores_other_projects_experiences(
    client_for, admin_user, project, other_project, make_experience
):
    mine, theirs = make_experience(project), make_experience(other_project)

    client_for(admin_user).post(
        "/experiences/bulk/", {"action": "approve", "ids": [mine.pk, theirs.pk]}
    )

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == ("approved", "candidate")


def test_bulk_without_a_selection_says_so(client_for, admin_user, project):
    response = client_for(admin_user).post("/experiences/bulk/", {"action": "approve"}, follow=True)

    assert b"Select at least one experience" in response.content


def test_reviewers_cannot_use_bulk_actions(client_for, reviewer, project, make_experience):
    experience = make_experience(project)

    response = client_for(reviewer).post(
        "/experiences/bulk/", {"action": "approve", "ids": [experience.pk]}
    )

    assert response.status_code == 403
    experience.refresh_from_db()
    assert experience.status == "candidate"
