from django.urls import path

from experiences import views

app_name = "experiences"

urlpatterns = [
    path("experiences/", views.library, name="library"),
    path("experiences/bulk/", views.experience_bulk, name="bulk"),
    path("experiences/<int:experience_id>/", views.experience_detail, name="detail"),
    path("experiences/<int:experience_id>/row/", views.experience_row, name="row"),
    path("experiences/<int:experience_id>/edit/", views.experience_edit, name="edit"),
    path("experiences/<int:experience_id>/scope/", views.experience_scope, name="scope"),
    path("experiences/<int:experience_id>/status/", views.experience_status, name="status"),
    path("experiences/<int:experience_id>/vote/", views.experience_vote, name="vote"),
    path("merges/", views.merges, name="merges"),
    path("merges/proposals/<int:proposal_id>/", views.proposal_decide, name="proposal_decide"),
    path("merges/<int:merge_id>/undo/", views.merge_undo, name="merge_undo"),
    path("experiences/stats/", views.experience_stats, name="stats"),
    path("kb/", views.kb_page, name="kb"),
    path("kb/rebuild/", views.kb_rebuild, name="kb_rebuild"),
    path("kb/rebuild/status/", views.kb_rebuild_status, name="kb_rebuild_status"),
    path("kb/export/", views.kb_export, name="kb_export"),
    path("kb/articles/<int:article_id>/edit/", views.kb_article_edit, name="kb_article_edit"),
]
