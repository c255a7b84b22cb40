from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from hindsight_site.api import api

urlpatterns = [
    path("", RedirectView.as_view(url="/traces/", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", api.urls),
    path("api/docs", RedirectView.as_view(url="/api/v1/docs", permanent=False)),
    # dashboard pages (traces, inspector, queue, stats, audit, settings)
    path("", include("traces.urls")),
    # curation pages (experience library and detail, merge queue, knowledge base)
    path("", include("experiences.urls")),
]
