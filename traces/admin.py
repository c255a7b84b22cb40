from django.contrib import admin

from traces.models import ApiKey, AuditEvent, Membership, Project, Step, Trace


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


class StepInline(admin.TabularInline):
    model = Step
    fields = readonly_fields = ("index", "kind", "tool", "is_error", "label", "label_source")
    extra = 0
    show_change_link = True


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "agent", "outcome", "review_status", "step_count"]
    list_filter = ["project", "outcome", "review_status", "task_type"]
    search_fields = ["external_id", "task", "agent"]
    inlines = [StepInline]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "project", "action", "object_type", "object_id", "actor_user"]
    list_filter = ["action", "project"]
