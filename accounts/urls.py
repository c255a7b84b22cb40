from django.urls import path

from accounts.views import audit, project_settings, projects, session

app_name = "accounts"

urlpatterns = [
    path("projects/switch/", projects.project_switch, name="project_switch"),
    path("accounts/session/", session.session_sign_in, name="session_sign_in"),
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
]
