"""One experience: advice, controls, versions, provenance, near neighbours, merges with undo."""

from experiences.models import ExperienceSource
from experiences.services.curation import experience_edit
from experiences.services.merging import experience_merge
from tests.support.pages import count_queries


def test_it_shows_the_advice_scene_evidence_and_scope(
    client_for, reviewer, project, make_experience
):
    experience = make_experience(
        project,
        advice="When you tail logs, add --since.",
        intent="debug restarts",
        support_count=3,
        success_count=2,
        failure_count=1,
        scope_environments=["k8s"],
    )

    response = client_for(reviewer).get(f"/experiences/{experience.pk}/")

    assert response.status_code == 200
    body = response.content.decode()
    assert "When you tail logs, add --since." in body
    assert "debug restarts" in body and "3 (2 succeeded, 1 failed)" in body
    assert "environment: <bdi>k8s</bdi>" in body


def test_provenance_links_to_the_trajectories_and_their_steps(
    client_for, reviewer, project, make_experience, make_trace
):
    trace = make_trace(project, task="Find why web restarts")
    experience = make_experience(
        project,
        trace=trace,
        steps=[0, 2],
        path=[{"trace_id": trace.pk, "index": 2, "tool": "docker", "summary": "read logs"}],
    )

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert f'href="/traces/{trace.pk}/">Trace {trace.pk}</a>' in body
    assert f'href="/traces/{trace.pk}/#step-0">0</a>' in body
    assert f'href="/traces/{trace.pk}/#step-2">2</a>' in body
    assert f'<a href="/traces/{trace.pk}/#step-2">step 2</a>' in body and "read logs" in body


def test_it_shows_which_step_the_lesson_blames_and_why(
    client_for, reviewer, project, make_experience, make_trace
):
    trace = make_trace(project, task="Move my flight")
    blame = {
        "index": 3, "tool": "update_reservation_flights", "kind": "tool_call",
        "evidence": "the user objected", "consequence": 'the user replied "<b>wrong</b> day"',
        "reason": "the user objected right after it (step 4)",
        "effect": "its name starts with a verb that changes state",
    }  # fmt: skip
    experience = make_experience(
        project, trace=trace, polarity="failure", blame=blame,
        replay='The same case ran before (failure): get_user_details "omar_rossi_1241".',
    )  # fmt: skip

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert "Why it says this" in body
    assert f'<a href="/traces/{trace.pk}/#step-3">step 3</a>' in body
    assert "the user objected: the user objected right after it (step 4)" in body
    assert "&lt;b&gt;wrong&lt;/b&gt;" in body  # the user's words, escaped
    assert "verb that changes state" in body and "omar_rossi_1241" in body


def test_it_says_when_an_episode_is_served_only_to_its_own_case(
    client_for, reviewer, project, make_experience
):
    replay = 'The same case ran before (success): transfer_to_human_agents "K1NW8N".'
    only = make_experience(project, replay=replay, same_case_only=True)
    other = make_experience(project, replay=replay)

    served_alone = "Served only when its own case comes again"
    assert served_alone in client_for(reviewer).get(f"/experiences/{only.pk}/").content.decode()
    body = client_for(reviewer).get(f"/experiences/{other.pk}/").content.decode()
    assert "Replay of the same case" in body and served_alone not in body


def test_near_neighbours_are_listed_with_their_similarity(
    client_for, reviewer, project, make_experience
):
    experience = make_experience(project, cosine=1.0)
    close = make_experience(project, cosine=0.9, advice="A close neighbour.")
    make_experience(project, cosine=0.9, advice="Another scope.", scope_agents=["x"])
    make_experience(project, cosine=0.9, advice="Archived one.", status="archived")

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert f'<a href="/experiences/{close.pk}/">#{close.pk}</a>' in body
    assert "90.0 %" in body and "A close neighbour." in body
    assert "Another scope." not in body and "Archived one." not in body


def test_the_version_history_lists_every_wording(client_for, admin_user, project, make_experience):
    experience = make_experience(project, advice="First wording.")
    experience_edit(experience_id=experience.pk, advice="Second wording.", user=admin_user)

    body = client_for(admin_user).get(f"/experiences/{experience.pk}/").content.decode()

    assert "Second wording." in body and "edited by ada" in body
    assert '2 <small class="muted">(current)</small>' in body


def test_admins_get_status_edit_and_scope_controls(
    client_for, admin_user, project, make_experience
):
    experience = make_experience(project)

    body = client_for(admin_user).get(f"/experiences/{experience.pk}/").content.decode()

    assert f'action="/experiences/{experience.pk}/status/"' in body
    assert f'action="/experiences/{experience.pk}/edit/"' in body
    assert f'action="/experiences/{experience.pk}/scope/"' in body
    assert f'<input type="hidden" name="next" value="/experiences/{experience.pk}/">' in body


def test_reviewers_get_votes_only(client_for, reviewer, project, make_experience):
    experience = make_experience(project)

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert f'action="/experiences/{experience.pk}/vote/"' in body
    assert "/status/" not in body and "/scope/" not in body and "/edit/" not in body


def test_merges_it_took_part_in_are_listed_with_undo_for_admins(
    client_for, admin_user, reviewer, project, make_experience
):
    survivor = make_experience(project, advice="Kept wording.", cosine=1.0)
    absorbed = make_experience(project, advice="Absorbed wording.", cosine=0.97)
    merge = experience_merge(
        survivor_id=survivor.pk, absorbed_id=absorbed.pk, similarity=0.97, kind="auto"
    )

    admin_body = client_for(admin_user).get(f"/experiences/{survivor.pk}/").content.decode()
    reviewer_body = client_for(reviewer).get(f"/experiences/{absorbed.pk}/").content.decode()

    assert f'id="merge-{merge.pk}"' in admin_body and "Absorbed wording." in admin_body
    assert f'action="/merges/{merge.pk}/undo/"' in admin_body
    assert f'action="/merges/{merge.pk}/undo/"' not in reviewer_body
    assert (
        f'was merged into <a href="/experiences/{survivor.pk}/">#{survivor.pk}</a>' in reviewer_body
    )


def test_the_page_reads_a_constant_number_of_queries(
    client_for, admin_user, project, make_experience, make_trace
):
    experience = make_experience(project, cosine=1.0)
    client = client_for(admin_user)
    make_experience(project, cosine=0.9)
    ExperienceSource.objects.create(
        experience=experience, trace=make_trace(project), step_indexes=[1]
    )
    few = count_queries(client, f"/experiences/{experience.pk}/")
    for _ in range(4):
        make_experience(project, cosine=0.88)
        ExperienceSource.objects.create(
            experience=experience, trace=make_trace(project), step_indexes=[0, 1]
        )
    other = make_experience(project)
    experience_merge(survivor_id=experience.pk, absorbed_id=other.pk, similarity=0.5, kind="manual")
    many = count_queries(client, f"/experiences/{experience.pk}/")

    assert few == many, (few, many)


def test_untrusted_text_is_escaped(client_for, reviewer, project, make_experience, make_trace):
    trace = make_trace(project, task="<img src=x onerror=alert(1)>")
    experience = make_experience(
        project,
        trace=trace,
        advice="<script>alert('advice')</script>",
        path=[{"trace_id": trace.pk, "index": 1, "summary": "<b>x</b>"}],
    )

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert "<script>alert" not in body and "<img src=x" not in body and "<b>x</b>" not in body


def test_it_shows_the_request_the_experience_is_matched_on_escaped(
    client_for, reviewer, project, make_experience
):
    request = "Cancel reservation ZX12AB for mia_li_3668; <script>alert(1)</script> she is sick."
    experience = make_experience(project, task="Hi!", request=request)

    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()

    assert "Matched on</dt>" in body and "Cancel reservation ZX12AB for mia_li_3668" in body
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body


def test_a_request_that_is_the_task_is_not_shown_twice(
    client_for, reviewer, project, make_experience
):
    experience = make_experience(
        project, task="Find why web restarts", request="Find why web restarts"
    )
    body = client_for(reviewer).get(f"/experiences/{experience.pk}/").content.decode()
    assert "Matched on" not in body and body.count("Find why web restarts") >= 1
