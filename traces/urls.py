from django.urls import path

from traces.views import compare, inspector, queue, stats, trace_list

app_name = "traces"

urlpatterns = [
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
    path("stats/", stats.stats, name="stats"),
]
