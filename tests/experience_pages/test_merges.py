"""The merge queue: proposals side by side with a word diff, decisions, history, undo."""

import pytest

from experiences.models import Experience, ExperienceMerge, MergeProposal
from experiences.selectors import advice_diff
from experiences.services.dedup import experience_merge
from tests.experience_pages.conftest import HTMX, count_queries
from traces.models import AuditEvent


@pytest.fixture
def pair(project, make_experience, make_proposal):
    first = make_experience(
        project,
        advice="When the web container restarts, read docker_logs first.",
        cosine=1.0,
        support_count=2,
        upvotes=1,
    )
    second = make_experience(
        project,
        advice="When a container restarts, read docker_logs --tail 200 first.",
        cosine=0.9,
        tools=["docker_logs", "grep"],
        success_count=1,
    )
    return first, second, make_proposal(first, second, similarity=0.912)


def test_the_word_diff_marks_what_each_side_has_alone():
    left, right = advice_diff("read the docker logs first", "read docker logs --tail 200 first")

    assert [(p.kind, p.text) for p in left] == [
        ("same", "read"),
        ("del", "the"),
        ("same", "docker logs"),
        ("same", "first"),
    ]
    assert [(p.kind, p.text) for p in right] == [
        ("same", "read"),
        ("same", "docker logs"),
        ("ins", "--tail 200"),
        ("same", "first"),
    ]


def test_the_queue_shows_both_sides_with_diff_similarity_and_evidence(client_for, reviewer, pair):
    first, second, proposal = pair

    response = client_for(reviewer).get("/merges/")

    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="proposal-{proposal.pk}"' in body and "similarity 91.2 %" in body
    assert f'<del title="only in #{first.pk}"><bdi>the web</bdi></del>' in body
    assert f'<ins title="only in #{second.pk}"><bdi>--tail 200</bdi></ins>' in body
    assert "<strong>2</strong> traces" in body and "1 succeeded" in body and "▲ 1" in body
    assert 'class="decide"' not in body  # reviewers read only


def test_admins_get_the_decision_form_with_the_more_specific_wording_suggested(
    client_for, admin_user, pair
):
    _, second, proposal = pair

    body = client_for(admin_user).get("/merges/").content.decode()

    assert f'action="/merges/proposals/{proposal.pk}/"' in body
    assert 'name="keep" value="second" checked' in body  # more tools: more specific
    assert f">{second.advice}</textarea>" in body
    assert f"Merge #{second.pk} into #{proposal.first_id}" in body


def test_diff_text_is_escaped(client_for, reviewer, project, make_experience, make_proposal):
    first = make_experience(project, advice="<script>alert(1)</script> read logs", cosine=1.0)
    second = make_experience(project, advice="<img src=x onerror=alert(2)> read logs", cosine=0.9)
    make_proposal(first, second)

    body = client_for(reviewer).get("/merges/").content.decode()

    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<img src=x" not in body


def test_merging_with_the_second_wording(client_for, admin_user, pair):
    first, second, proposal = pair

    response = client_for(admin_user).post(
        f"/merges/proposals/{proposal.pk}/", {"decision": "merge", "keep": "second"}, headers=HTMX
    )

    assert response.status_code == 200
    assert response.headers["HX-Trigger"] == "merges-changed"
    merge = ExperienceMerge.objects.get()
    body = response.content.decode()
    assert f"Merged #{second.pk} into #{first.pk}." in body
    assert f'action="/merges/{merge.pk}/undo/"' in body
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.advice == second.advice and second.merged_into == first
    assert first.support_count == 3
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by) == ("merged", admin_user)
    assert AuditEvent.objects.filter(action="experience.merge.manual").exists()


def test_merging_with_a_combined_wording(client_for, admin_user, pair):
    first, second, proposal = pair
    combined = "When a container restarts, read docker_logs --tail 200 and grep for OOM first."

    client_for(admin_user).post(
        f"/merges/proposals/{proposal.pk}/",
        {"decision": "merge", "keep": "custom", "advice": combined},
        headers=HTMX,
    )

    first.refresh_from_db()
    assert first.advice == combined
    assert first.versions.first().advice == combined


def test_a_combined_wording_must_not_be_empty(client_for, admin_user, pair):
    _, _, proposal = pair

    response = client_for(admin_user).post(
        f"/merges/proposals/{proposal.pk}/",
        {"decision": "merge", "keep": "custom", "advice": " "},
        headers=HTMX,
    )

    assert response.status_code == 409
    assert (
        b"Write the combined wording" in response.content and b'class="decide"' in response.content
    )
    proposal.refresh_from_db()
    assert proposal.status == "open"


def test_dismissing_keeps_both(client_for, admin_user, pair):
    _, _, proposal = pair

    response = client_for(admin_user).post(
        f"/merges/proposals/{proposal.pk}/", {"decision": "dismiss"}, headers=HTMX
    )

    assert b"Dismissed" in response.content
    proposal.refresh_from_db()
    assert proposal.status == "dismissed"
    assert Experience.objects.filter(merged_into__isnull=True).count() == 2
    assert AuditEvent.objects.filter(action="experience.proposal.dismiss").exists()


def test_a_decision_without_htmx_redirects_with_a_message(client_for, admin_user, pair):
    _, _, proposal = pair

    response = client_for(admin_user).post(
        f"/merges/proposals/{proposal.pk}/", {"decision": "dismiss"}, follow=True
    )

    assert response.redirect_chain == [("/merges/", 302)]
    assert b"stay apart" in response.content and b"Nothing to decide" in response.content


def test_deciding_twice_is_a_conflict(client_for, admin_user, pair):
    _, _, proposal = pair
    client = client_for(admin_user)
    client.post(f"/merges/proposals/{proposal.pk}/", {"decision": "dismiss"})

    response = client.post(
        f"/merges/proposals/{proposal.pk}/", {"decision": "merge", "keep": "first"}, headers=HTMX
    )

    assert response.status_code == 409 and b"already dismissed" in response.content


def test_a_pair_whose_member_was_merged_elsewhere_can_only_be_dismissed(
    client_for, admin_user, project, make_experience, pair
):
    first, second, proposal = pair
    third = make_experience(project, cosine=0.99)
    # Merges re-point the absorbed one's proposals; a pair can still go stale when rows change
    # underneath the queue (an older proposal, a merge made before that rule): simulate that.
    Experience.objects.filter(pk=second.pk).update(merged_into=third)

    body = client_for(admin_user).get("/merges/").content.decode()

    assert f"#{second.pk} was merged into #{third.pk} meanwhile" in body
    assert 'name="decision" value="merge"' not in body and 'name="decision" value="dismiss"' in body


def test_reviewers_cannot_decide_or_undo(client_for, reviewer, pair):
    first, second, proposal = pair
    merge = experience_merge(
        survivor_id=first.pk, absorbed_id=second.pk, similarity=0.9, kind="auto"
    )
    client = client_for(reviewer)

    assert (
        client.post(f"/merges/proposals/{proposal.pk}/", {"decision": "dismiss"}).status_code == 403
    )
    assert client.post(f"/merges/{merge.pk}/undo/", headers=HTMX).status_code == 403
    merge.refresh_from_db()
    assert merge.undone_at is None


def test_another_projects_proposals_and_merges_are_not_found(client_for, outsider, pair):
    first, second, proposal = pair
    client = client_for(outsider)

    assert (
        client.post(f"/merges/proposals/{proposal.pk}/", {"decision": "dismiss"}).status_code == 404
    )
    merge = experience_merge(
        survivor_id=first.pk, absorbed_id=second.pk, similarity=0.9, kind="auto"
    )
    assert client.post(f"/merges/{merge.pk}/undo/").status_code == 404
    assert f"proposal-{proposal.pk}" not in client.get("/merges/").content.decode()


def test_the_history_lists_auto_and_manual_merges_with_undo(
    client_for, admin_user, project, make_experience
):
    a, b, c = (make_experience(project, advice=f"Wording {n}.") for n in "abc")
    auto = experience_merge(survivor_id=a.pk, absorbed_id=b.pk, similarity=0.97, kind="auto")
    manual = experience_merge(
        survivor_id=a.pk, absorbed_id=c.pk, similarity=0.9, kind="manual", user=admin_user
    )

    body = client_for(admin_user).get("/merges/").content.decode()

    assert body.index(f'id="merge-{manual.pk}"') < body.index(f'id="merge-{auto.pk}"')
    assert '<span class="badge kind-auto">auto</span>' in body and ">ada</td>" in body
    assert "Wording b." in body and "97.0 %" in body


def test_undo_from_the_history_restores_both(client_for, admin_user, project, make_experience):
    survivor, absorbed = (
        make_experience(project, advice="Kept."),
        make_experience(project, advice="Absorbed."),
    )
    merge = experience_merge(
        survivor_id=survivor.pk, absorbed_id=absorbed.pk, similarity=0.96, kind="auto"
    )

    response = client_for(admin_user).post(f"/merges/{merge.pk}/undo/", headers=HTMX)

    assert response.status_code == 200
    assert response.content.lstrip().startswith(
        f'<tr id="merge-{merge.pk}" class="merge-row undone">'.encode()
    )
    absorbed.refresh_from_db()
    assert absorbed.merged_into is None and absorbed.advice == "Absorbed."
    assert AuditEvent.objects.filter(action="experience.merge.undo").exists()


def test_undo_under_a_later_merge_explains_the_order(
    client_for, admin_user, project, make_experience
):
    a, b, c = (make_experience(project) for _ in range(3))
    first = experience_merge(survivor_id=a.pk, absorbed_id=b.pk, similarity=0.97, kind="auto")
    experience_merge(survivor_id=a.pk, absorbed_id=c.pk, similarity=0.97, kind="auto")

    response = client_for(admin_user).post(f"/merges/{first.pk}/undo/", headers=HTMX)

    assert response.status_code == 409
    assert b"undo the later merges into this experience first" in response.content


def test_undo_without_htmx_goes_back_with_a_message(
    client_for, admin_user, project, make_experience
):
    survivor, absorbed = make_experience(project), make_experience(project)
    merge = experience_merge(
        survivor_id=survivor.pk, absorbed_id=absorbed.pk, similarity=0.96, kind="auto"
    )

    response = client_for(admin_user).post(
        f"/merges/{merge.pk}/undo/", {"next": f"/experiences/{survivor.pk}/"}, follow=True
    )

    assert response.redirect_chain == [(f"/experiences/{survivor.pk}/", 302)]
    assert f"#{absorbed.pk} is back on its own".encode() in response.content


def test_history_pages_come_as_a_partial(
    client_for, admin_user, project, make_experience, monkeypatch
):
    survivor = make_experience(project)
    for _ in range(3):
        experience_merge(
            survivor_id=survivor.pk,
            absorbed_id=make_experience(project).pk,
            similarity=0.9,
            kind="auto",
        )
    monkeypatch.setattr("experiences.views.merges.HISTORY_PAGE_SIZE", 2)
    client = client_for(admin_user)

    page = client.get("/merges/")
    cursor = page.context["history"].next_cursor
    partial = client.get(f"/merges/?cursor={cursor}", headers=HTMX)

    assert cursor
    assert (
        partial.content.lstrip().startswith(b'<div id="history"')
        and b"<html" not in partial.content
    )
    assert partial.content.count(b'class="merge-row') == 1
    assert "HX-Request" in partial.headers["Vary"]


def test_the_queue_and_history_read_a_constant_number_of_queries(
    client_for, admin_user, project, make_experience, make_proposal
):
    client = client_for(admin_user)

    def add_round() -> None:
        a, b = make_experience(project), make_experience(project)
        make_proposal(a, b)
        c, d = make_experience(project), make_experience(project)
        experience_merge(survivor_id=c.pk, absorbed_id=d.pk, similarity=0.96, kind="auto")

    add_round()
    few = count_queries(client, "/merges/")
    for _ in range(6):
        add_round()
    many = count_queries(client, "/merges/")

    assert few == many, (few, many)
    assert MergeProposal.objects.count() == 7
