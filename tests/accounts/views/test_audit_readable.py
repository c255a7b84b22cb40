"""/audit/: before/after as indented JSON (escaped), links to what an event changed, pickers of
the project's actions and object types, paging."""

import pytest

from accounts.models import AuditEvent
from accounts.selectors.audit import audit_list
from accounts.services.audit import audit_event
from experiences.services import curation

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def test_before_and_after_are_indented_json(client_for, admin_user, project):
    audit_event(
        action="experience.scope", object_type="experience", object_id=7, project=project,
        before={"environments": [], "agents": []}, after={"environments": ["docker"], "agents": []},
    )  # fmt: skip

    body = client_for(admin_user).get("/audit/", headers=HTMX).content.decode()

    assert (
        '<pre class="audit-json">{\n  &quot;agents&quot;: [],\n  &quot;environments&quot;: [\n'
        in body
    )
    assert "&quot;docker&quot;" in body
    assert "{&#x27;" not in body  # no Python repr any more


def test_untrusted_text_in_the_json_is_escaped(client_for, admin_user, project):
    audit_event(
        action="experience.edit", object_type="experience", object_id=1, project=project,
        after={"advice": "<script>alert(1)</script> é"},
    )  # fmt: skip

    body = client_for(admin_user).get("/audit/", headers=HTMX).content.decode()

    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; é" in body  # readable, not \\u00e9


def test_events_link_to_their_experience_trace_and_step(
    client_for,
    admin_user,
    project,
    make_trace,
    make_experience,
):
    trace = make_trace(project)
    experience = make_experience(project)
    curation.experience_set_status(experience_id=experience.pk, status="approved", user=admin_user)
    client_for(admin_user).post(
        f"/traces/{trace.pk}/steps/1/label/", {"label": "failed", "version": 1}
    )

    body = client_for(admin_user).get("/audit/", headers=HTMX).content.decode()

    assert f'<a href="/experiences/{experience.pk}/">experience {experience.pk}</a>' in body
    assert f'<a href="/traces/{trace.pk}/">trace {trace.pk}</a>' in body  # trace.ingest
    assert f'<a href="/traces/{trace.pk}/#step-1">trace {trace.pk}, step 1</a>' in body


def test_merge_and_settings_events_link_to_what_they_touched(client_for, admin_user, project):
    audit_event(
        action="experience.merge.manual", object_type="experience", object_id=3, project=project,
        before={"absorbed_id": 4, "survivor": "a", "absorbed": "b"}, after={"merge_id": 1},
    )  # fmt: skip
    audit_event(action="api_key.create", object_type="api_key", object_id=9, project=project)
    audit_event(action="kb.edit", object_type="kb_article", object_id=5, project=project)

    body = client_for(admin_user).get("/audit/", headers=HTMX).content.decode()

    assert '<a href="/experiences/3/">experience 3</a>' in body
    assert '<a href="/experiences/4/">experience 4</a>' in body
    assert '<a href="/settings/#keys">api_key 9</a>' in body
    assert '<a href="/kb/#article-5">kb_article 5</a>' in body


def test_a_non_numeric_object_id_gets_no_link(client_for, admin_user, project):
    audit_event(action="experience.edit", object_type="experience", object_id="x1", project=project)

    body = client_for(admin_user).get("/audit/", headers=HTMX).content.decode()

    assert "experience x1" in body and "/experiences/x1/" not in body


def test_the_pickers_list_the_projects_actions_and_object_types(
    client_for, admin_user, project, other_project
):
    audit_event(action="member.add", object_type="membership", object_id=1, project=project)
    audit_event(action="trace.ingest", object_type="trace", object_id=2, project=project)
    audit_event(
        action="secret.action", object_type="secret_type", object_id=3, project=other_project
    )

    body = client_for(admin_user).get("/audit/").content.decode()

    action = body.split('name="action"')[1].split("</select>")[0]
    assert '<option value="" selected>any action</option>' in action
    assert '<option value="member.add">member.add</option>' in action
    assert '<option value="trace.ingest">trace.ingest</option>' in action
    kinds = body.split('name="object_type"')[1].split("</select>")[0]
    assert '<option value="membership">membership</option>' in kinds
    assert "secret" not in body


def test_picking_an_action_filters_and_keeps_it_selected(client_for, admin_user, project):
    audit_event(action="member.add", object_type="membership", object_id=1, project=project)
    audit_event(action="trace.ingest", object_type="trace", object_id=2, project=project)
    client = client_for(admin_user)

    body = client.get("/audit/?action=member.add&object_type=membership").content.decode()

    results = body.split('<section id="results"')[1]
    assert "member.add" in results and "trace.ingest" not in results
    assert '<option value="member.add" selected>member.add</option>' in body
    assert '<option value="membership" selected>membership</option>' in body


def test_an_action_prefix_from_an_older_link_still_filters(client_for, admin_user, project):
    audit_event(action="member.add", object_type="membership", object_id=1, project=project)
    audit_event(action="member.role", object_type="membership", object_id=1, project=project)
    audit_event(action="trace.ingest", object_type="trace", object_id=2, project=project)

    body = client_for(admin_user).get("/audit/?action=member").content.decode()

    results = body.split('<section id="results"')[1]
    assert "member.add" in results and "member.role" in results and "trace.ingest" not in results
    assert '<option value="member" selected>member</option>' in body


def test_paging_keeps_the_filters(client_for, admin_user, project, monkeypatch):

    for i in range(3):
        audit_event(action="member.add", object_type="membership", object_id=i, project=project)
    audit_event(action="trace.ingest", object_type="trace", object_id=9, project=project)
    original = audit_list
    monkeypatch.setattr(
        "accounts.views.audit.audit_list", lambda **kw: original(**{**kw, "limit": 2})
    )
    client = client_for(admin_user)

    first = client.get("/audit/?action=member.add").content.decode()
    older = first.split('href="?action=member.add&amp;cursor=')[1].split('"')[0]
    second = client.get(f"/audit/?action=member.add&cursor={older}").content.decode()

    rows = second.split('<section id="results"')[1].count('class="audit-row"')
    assert rows == 1 and "trace.ingest" not in second.split('<section id="results"')[1]
    assert AuditEvent.objects.filter(action="member.add").count() == 3


def test_the_audit_log_is_for_admins_only(client_for, reviewer):
    assert client_for(reviewer).get("/audit/").status_code == 403
