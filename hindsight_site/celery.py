import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")

# The pipeline is not an app's tasks module, so it is listed explicitly.
app = Celery("hindsight", include=["hindsight_site.pipeline"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _prepare_services(sender, **kwargs) -> None:
    """Before the app reads the Django settings (a worker, beat, or a first publish): the data
    dir, its secret key and the services' addresses. Importing this module prepares nothing."""
    from hindsight_site import bootstrap

    bootstrap.prepare()


@worker_ready.connect
def _reclaim_orphaned_reviews(sender, **kwargs) -> None:
    """A (re)started worker takes back what its previous run was reviewing when it died."""
    from traces.services.review_queue import trace_reclaim_orphans

    try:
        trace_reclaim_orphans(worker=sender.hostname)
    except Exception:  # noqa: BLE001 - the database may still be starting: the sweep covers it
        logging.getLogger(__name__).warning("could not reclaim orphaned reviews", exc_info=True)
