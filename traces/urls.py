from django.urls import path

from traces.views import (
    audit,
    compare,
    inspector,
    project_settings,
    projects,
    queue,
    session,
    stats,
    trace_list,
)

app_name = "traces"

urlpatterns = [
    path("projects/switch/", projects.project_switch, name="project_switch"),
    path("accounts/session/", session.session_sign_in, name="session_sign_in"),
    path("traces/", trace_list.trace_list, name="list"),
    path("traces/compare/", compare.trace_compare, name="compare"),
    path("traces/<int:trace_id>/", inspector.trace_detail, name="detail"),
    path("traces/<int:trace_id>/accept/", inspector.trace_accept, name="accept"),
    path(
        "traces/<int:trace_id>/claims/<int:claim_id>/override/",
        inspector.claim_override,
        name="claim_override",
    ),
    path("traces/<int:trace_id>/steps/<int:index>/label/", inspector.step_label, name="step_label"),
    path("traces/<int:trace_id>/steps/<int:index>/raw/", inspector.step_raw, name="step_raw"),
    path("queue/", queue.queue, name="queue"),
    path("queue/claim/", queue.queue_claim, name="queue_claim"),
    path("queue/guidelines/", queue.queue_guidelines, name="queue_guidelines"),
    path("queue/<int:claim_id>/finish/", queue.queue_finish, name="queue_finish"),
    path("queue/<int:claim_id>/release/", queue.queue_release, name="queue_release"),
    path("queue/undo-finish/", queue.queue_finish_undo, name="queue_finish_undo"),
    path("audit/", audit.audit, name="audit"),
    path("settings/", project_settings.project_settings, name="settings"),
    path("settings/keys/", project_settings.api_key_create, name="key_create"),
    path("settings/keys/<int:key_id>/revoke/", project_settings.api_key_revoke, name="key_revoke"),
    path("settings/members/", project_settings.member_add, name="member_add"),
    path("settings/members/new/", project_settings.member_create, name="member_create"),
    path(
        "settings/members/<int:membership_id>/",
        project_settings.member_update,
        name="member_update",
    ),
    path(
        "settings/members/<int:membership_id>/password/",
        project_settings.member_password_reset,
        name="member_password_reset",
    ),
    path("settings/projects/", project_settings.project_create, name="project_create"),
    path(
        "settings/members/<int:membership_id>/remove/",
        project_settings.member_remove,
        name="member_remove",
    ),
    path("stats/", stats.stats, name="stats"),
]
