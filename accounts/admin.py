from django.contrib import admin

from accounts.models import ApiKey, AuditEvent, Membership, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "project", "name", "scopes", "last_used_at", "revoked_at"]
    list_filter = ["project"]
    readonly_fields = ["prefix", "key_hash", "last_used_at", "created_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "project", "action", "object_type", "object_id", "actor_user"]
    list_filter = ["action", "project"]
