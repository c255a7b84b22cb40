import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")

# The pipeline is not an app's tasks module, so it is listed explicitly.
app = Celery("hindsight", include=["hindsight_site.pipeline"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
