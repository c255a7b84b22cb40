from django.urls import path

from traces import views

app_name = "traces"

urlpatterns = [
    path("projects/switch/", views.project_switch, name="project_switch"),
    path("traces/", views.trace_list, name="list"),
    path("traces/compare/", views.trace_compare, name="compare"),
    path("traces/<int:trace_id>/", views.trace_detail, name="detail"),
    path("traces/<int:trace_id>/accept/", views.trace_accept, name="accept"),
    path("traces/<int:trace_id>/steps/<int:index>/label/", views.step_label, name="step_label"),
    path("traces/<int:trace_id>/steps/<int:index>/raw/", views.step_raw, name="step_raw"),
    path("queue/", views.queue, name="queue"),
    path("queue/claim/", views.queue_claim, name="queue_claim"),
    path("queue/<int:claim_id>/finish/", views.queue_finish, name="queue_finish"),
    path("queue/<int:claim_id>/release/", views.queue_release, name="queue_release"),
    path("audit/", views.audit, name="audit"),
    path("settings/", views.project_settings, name="settings"),
    path("settings/keys/", views.api_key_create, name="key_create"),
    path("settings/keys/<int:key_id>/revoke/", views.api_key_revoke, name="key_revoke"),
    path("settings/members/", views.member_add, name="member_add"),
    path("settings/members/<int:membership_id>/", views.member_update, name="member_update"),
    path("stats/", views.stats, name="stats"),
]
