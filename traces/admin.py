from django.contrib import admin

from traces.models import Step, Trace


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
