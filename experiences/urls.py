from django.urls import path

from experiences.views import detail, kb, library, merges, stats

app_name = "experiences"

urlpatterns = [
    path("experiences/", library.library, name="library"),
    path("experiences/bulk/", library.experience_bulk, name="bulk"),
    path("experiences/<int:experience_id>/", detail.experience_detail, name="detail"),
    path("experiences/<int:experience_id>/row/", library.experience_row, name="row"),
    path("experiences/<int:experience_id>/edit/", library.experience_edit, name="edit"),
    path("experiences/<int:experience_id>/scope/", library.experience_scope, name="scope"),
    path("experiences/<int:experience_id>/status/", library.experience_status, name="status"),
    path("experiences/<int:experience_id>/vote/", library.experience_vote, name="vote"),
    path("merges/", merges.merges, name="merges"),
    path("merges/proposals/<int:proposal_id>/", merges.proposal_decide, name="proposal_decide"),
    path("merges/<int:merge_id>/undo/", merges.merge_undo, name="merge_undo"),
    path("experiences/stats/", stats.experience_stats, name="stats"),
    path("kb/", kb.kb_page, name="kb"),
    path("kb/rebuild/", kb.kb_rebuild, name="kb_rebuild"),
    path("kb/rebuild/status/", kb.kb_rebuild_status, name="kb_rebuild_status"),
    path("kb/export/", kb.kb_export, name="kb_export"),
    path("kb/articles/<int:article_id>/edit/", kb.kb_article_edit, name="kb_article_edit"),
]
