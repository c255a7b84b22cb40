"""Lifecycle, scope, edits, votes and merge proposals, each audited."""

import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model

from accounts.models import AuditEvent
from core.errors import Conflict, InvalidInput
from experiences.models import Experience, KbArticle, MergeProposal
from experiences.services import curation
from experiences.services.kb_articles import kb_article_edit, kb_rebuild
from tests.experiences.services.test_dedup import make

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user():
    return get_user_model().objects.create_user("ada", password="pw-123456789")


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        (["approved", "promoted", "archived"], True),
        (["rejected", "candidate", "approved"], True),
        (["promoted"], False),
        (["approved", "promoted", "rejected"], False),
    ],
)
def test_lifecycle_transitions(project, admin_user, path, allowed):
    experience = make(project)
    if allowed:
        for status in path:
            curation.experience_set_status(
                experience_id=experience.pk, status=status, user=admin_user
            )
        experience.refresh_from_db()
        assert experience.status == path[-1]
        assert AuditEvent.objects.filter(action="experience.status").count() == len(path)
    else:
        with pytest.raises(Conflict, match="can become"):
            for status in path:
                curation.experience_set_status(
                    experience_id=experience.pk, status=status, user=admin_user
                )


def test_scope_is_normalised_and_audited(project, admin_user):
    experience = make(project)
    curation.experience_set_scope(
        experience_id=experience.pk,
        environments=[" K8S ", "k8s"],
        agents=["ops-bot"],
        users=[],
        user=admin_user,
    )
    experience.refresh_from_db()
    assert (experience.scope_environments, experience.scope_agents) == (["k8s"], ["ops-bot"])
    assert not experience.is_global
    event = AuditEvent.objects.get(action="experience.scope")
    assert event.before == {"environments": [], "agents": [], "users": []}


def test_an_edit_makes_a_human_version_and_keeps_the_scene_vector(project, admin_user):
    experience = make(project)
    curation.experience_edit(
        experience_id=experience.pk,
        advice="When you debug restarts, read docker_logs --tail 200.",
        scene={"tools": ["docker_logs", "grep"]},
        user=admin_user,
    )
    experience.refresh_from_db()
    assert experience.source == "human" and experience.version == 2
    assert experience.tools == ["docker_logs", "grep"]
    # The vector is the scene's (summary and intent), and rewording the advice keeps the scene.
    assert experience.embedding[0] == pytest.approx(1.0)
    assert experience.versions.first().reason == "edited by ada"


def test_an_edit_of_the_intent_re_embeds_the_scene(project, admin_user):
    experience = make(project)
    curation.experience_edit(
        experience_id=experience.pk,
        advice=experience.advice,
        scene={"intent": "find why a container restarts"},
        user=admin_user,
    )
    experience.refresh_from_db()
    assert experience.intent == "find why a container restarts"
    assert experience.embedding[0] != pytest.approx(1.0)  # the real embedding of the new scene


def test_empty_advice_is_refused(project, admin_user):
    with pytest.raises(InvalidInput):
        curation.experience_edit(experience_id=make(project).pk, advice="  ", user=admin_user)


def test_votes_count_once_per_person_and_can_change(project, admin_user):
    experience = make(project)
    curation.experience_vote(experience_id=experience.pk, user=admin_user, value=1)
    curation.experience_vote(experience_id=experience.pk, user=admin_user, value=1)
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (1, 0)
    curation.experience_vote(experience_id=experience.pk, user=admin_user, value=-1)
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (0, 1)
    curation.experience_vote(experience_id=experience.pk, user=admin_user, value=0)
    experience.refresh_from_db()
    assert (experience.upvotes, experience.downvotes) == (0, 0)


def test_a_proposal_merged_with_a_chosen_wording(project, admin_user):
    first, second = (
        make(project, advice="first wording"),
        make(project, cosine=0.9, advice="second wording"),
    )
    proposal = MergeProposal.objects.create(
        project=project, first=first, second=second, similarity=0.9
    )
    curation.proposal_decide(proposal_id=proposal.pk, user=admin_user, merge=True, keep="second")

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.advice == "second wording" and second.merged_into == first
    proposal.refresh_from_db()
    assert proposal.status == "merged" and proposal.decided_by == admin_user
    assert AuditEvent.objects.filter(action="experience.merge.manual").exists()
    with pytest.raises(Conflict):
        curation.proposal_decide(proposal_id=proposal.pk, user=admin_user, merge=False)


def test_a_proposal_dismissed_leaves_both(project, admin_user):
    first, second = make(project), make(project, cosine=0.9)
    proposal = MergeProposal.objects.create(
        project=project, first=first, second=second, similarity=0.9
    )
    curation.proposal_decide(proposal_id=proposal.pk, user=admin_user, merge=False)
    assert Experience.objects.filter(merged_into__isnull=True).count() == 2
    assert AuditEvent.objects.filter(action="experience.proposal.dismiss").exists()


# ---------------------------------------------------------------------------- knowledge base


def promoted(project, **fields) -> Experience:
    return make(project, status="promoted", **fields)


def test_kb_groups_promoted_experiences_by_tool(project):
    promoted(project, tools=["docker_logs"], advice="When you debug restarts, read docker_logs.")
    promoted(
        project,
        tools=["docker_logs"],
        polarity="failure",
        advice="Do not tail docker_logs without --since.",
    )
    promoted(project, tools=["kubectl"], advice="When you roll out, use kubectl rollout status.")
    make(project, tools=["terraform"], status="approved")
    articles = {a.key: a for a in kb_rebuild(project=project)}

    assert set(articles) == {"tool:docker_logs", "tool:kubectl"}
    body = articles["tool:docker_logs"].body
    assert body.startswith("# Best practices: docker_logs")
    assert "## What works" in body and "## What to avoid" in body
    assert articles["tool:docker_logs"].generated_by == "template"


def test_an_edited_article_survives_a_rebuild(project, admin_user):
    promoted(project)
    (article,) = kb_rebuild(project=project)
    kb_article_edit(
        project=project,
        article_id=article.pk,
        title="Restarts",
        body="Read the logs.",
        user=admin_user,
    )
    kb_rebuild(project=project)
    article.refresh_from_db()
    assert (article.title, article.body, article.is_edited) == (
        "Restarts",
        "Read the logs.\n",
        True,
    )


def test_the_llm_writes_articles_when_configured(project, llm_settings):
    promoted(project)
    (article,) = kb_rebuild(project=project)
    assert article.generated_by == "llm" and article.body.startswith("MERGED:")


def test_exports_are_reproducible_and_complete(project, api_for, make_key):
    promoted(project, tools=["docker_logs"])
    promoted(project, tools=["kubectl"], advice="Use kubectl rollout status.")
    kb_rebuild(project=project)
    client = api_for(make_key(project, ("read",)))

    first = client.get("kb/export", {"format": "markdown"})
    second = client.get("kb/export", {"format": "markdown"})
    assert first.status_code == 200 and first["Content-Type"] == "application/zip"
    assert first.content == second.content
    names = zipfile.ZipFile(io.BytesIO(first.content)).namelist()
    assert names == ["README.md", "tool-docker-logs.md", "tool-kubectl.md"]

    jsonl = client.get("kb/export", {"format": "jsonl"})
    rows = [json.loads(line) for line in jsonl.content.decode().splitlines()]
    assert [r["key"] for r in rows] == ["tool:docker_logs", "tool:kubectl"]
    assert rows[1]["experiences"][0]["advice"] == "Use kubectl rollout status."
    assert KbArticle.objects.count() == 2


def test_export_format_is_validated(project, api_for, make_key):
    client = api_for(make_key(project, ("read",)))
    assert client.get("kb/export", {"format": "pdf"}).status_code == 422
