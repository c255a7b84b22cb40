"""The merge queue: proposals side by side with a word diff, decisions, history, undo."""

import re

import pytest

from accounts.models import AuditEvent
from experiences.models import Experience, ExperienceMerge, MergeProposal
from experiences.selectors import advice_diff
from experiences.services.merging import experience_merge
from tests.support.pages import HTMX, count_queries


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


# ---------------------------------------------------------------- after a merge, paging, undo


@pytest.fixture
def chain(project, make_experience, make_proposal):
    """A ~ B and B ~ C proposed: merging B into A leaves B's pair with C to follow it."""
    a, b, c = (make_experience(project, advice=f"When {n} restarts, read the logs.") for n in "abc")
    return a, b, c, make_proposal(a, b, similarity=0.93), make_proposal(b, c, similarity=0.91)


def test_a_merge_repoints_the_absorbed_ones_open_proposals_in_its_transaction(admin_user, chain):
    from django.db import transaction

    from experiences.services.curation import proposal_decide

    a, b, c, ab, bc = chain
    with pytest.raises(RuntimeError), transaction.atomic():
        proposal_decide(proposal_id=ab.pk, user=admin_user, merge=True)
        raise RuntimeError("the merge rolls back")
    assert MergeProposal.objects.get(pk=bc.pk).status == "open"  # nothing half done

    proposal_decide(proposal_id=ab.pk, user=admin_user, merge=True)

    bc.refresh_from_db()
    assert bc.status != "open"
    ac = MergeProposal.objects.get(first=a, second=c)
    assert (ac.status, ac.similarity) == ("open", 0.91)
    assert not MergeProposal.objects.filter(status="open").filter(first=b).exists()
    assert not MergeProposal.objects.filter(status="open").filter(second=b).exists()


def test_after_a_merge_the_page_shows_the_queue_as_it_is_now(client_for, admin_user, chain):
    a, b, c, ab, bc = chain

    response = client_for(admin_user).post(
        f"/merges/proposals/{ab.pk}/", {"decision": "merge", "keep": "first"}, headers=HTMX
    )

    assert response.status_code == 200
    assert response.headers["HX-Retarget"] == "#merge-queue"
    assert response.headers["HX-Reswap"] == "outerHTML"
    assert response.headers["HX-Trigger"] == "merges-changed"
    body = response.content.decode()
    assert body.lstrip().startswith(
        '<section aria-labelledby="queue-h" class="queue" id="merge-queue"'
    )
    assert f"Merged #{b.pk} into #{a.pk}." in body  # the decided card, on top, with undo
    ac = MergeProposal.objects.get(first=a, second=c)
    assert f'id="proposal-{ac.pk}"' in body and f'id="proposal-{bc.pk}"' not in body
    assert '<small class="muted" id="queue-count">(1)</small>' in body


def test_a_card_a_merge_closed_explains_itself_and_refreshes_the_queue(
    client_for, admin_user, chain
):
    a, b, c, ab, bc = chain
    client = client_for(admin_user)
    client.post(f"/merges/proposals/{ab.pk}/", {"decision": "merge", "keep": "first"})

    # A second tab still shows B ~ C.
    response = client.post(
        f"/merges/proposals/{bc.pk}/", {"decision": "merge", "keep": "first"}, headers=HTMX
    )

    assert response.status_code == 409
    body = response.content.decode()
    assert "already merged" not in body
    assert (
        f"#{b.pk} was merged into #{a.pk} meanwhile, so this pair is closed; "
        f"#{a.pk} and #{c.pk} are proposed instead"
    ) in body
    assert response.headers["HX-Retarget"] == "#merge-queue"
    ac = MergeProposal.objects.get(first=a, second=c)
    assert f'id="proposal-{ac.pk}"' in body and ac.status == "open"


def test_open_proposals_come_in_pages(
    client_for, admin_user, project, make_experience, make_proposal, monkeypatch
):
    made = []
    for n in range(7):
        one, two = make_experience(project), make_experience(project)
        made.append(make_proposal(one, two, similarity=round(0.95 - n * 0.01, 4)))
    make_proposal(make_experience(project), make_experience(project), similarity=0.95)  # a tie
    monkeypatch.setattr("experiences.views.merges.QUEUE_PAGE_SIZE", 3)
    client = client_for(admin_user)

    first = client.get("/merges/")
    body = first.content.decode()
    assert "1–3 of 8, most similar first" in body and "reload" not in body
    seen = [int(n) for n in re.findall(r'<article class="proposal" id="proposal-(\d+)"', body)]
    cursor = first.context["queue"].next_cursor
    while cursor:
        page = client.get(f"/merges/?section=queue&after={cursor}", headers=HTMX)
        assert page.content.lstrip().startswith(b"<section") and b"<html" not in page.content
        part = page.content.decode()
        seen += [int(n) for n in re.findall(r'<article class="proposal" id="proposal-(\d+)"', part)]
        cursor = page.context["queue"].next_cursor

    assert "7–8 of 8" in part and "← Most similar" in part
    by_rank = MergeProposal.objects.order_by("-similarity", "pk").values_list("pk", flat=True)
    assert seen == list(by_rank)  # each once, most similar first


def test_a_decision_on_a_later_page_keeps_that_page(
    client_for, admin_user, project, make_experience, make_proposal, monkeypatch
):
    for n in range(5):
        make_proposal(make_experience(project), make_experience(project), similarity=0.9 - n / 100)
    monkeypatch.setattr("experiences.views.merges.QUEUE_PAGE_SIZE", 2)
    client = client_for(admin_user)
    cursor = client.get("/merges/").context["queue"].next_cursor
    third = MergeProposal.objects.order_by("-similarity")[2]

    response = client.post(
        f"/merges/proposals/{third.pk}/", {"decision": "dismiss", "after": cursor}, headers=HTMX
    )

    assert "3–4 of 4" in response.content.decode()  # the second page, one fewer in all


def test_undo_from_the_history_says_so_and_reloads_the_queue(client_for, admin_user, pair):
    first, second, proposal = pair
    client = client_for(admin_user)
    client.post(f"/merges/proposals/{proposal.pk}/", {"decision": "merge", "keep": "first"})
    merge = ExperienceMerge.objects.get()

    response = client.post(f"/merges/{merge.pk}/undo/", headers=HTMX)

    assert response.status_code == 200
    assert f"Merge undone: #{second.pk} is back on its own." in response.content.decode()
    assert response.headers["HX-Trigger"] == "proposals-changed"
    proposal.refresh_from_db()
    assert proposal.status == "open"
    queue = client.get("/merges/?section=queue", headers=HTMX).content.decode()
    assert f'id="proposal-{proposal.pk}"' in queue
