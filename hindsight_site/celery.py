import logging
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")

# The review tasks are not an app's tasks module, so they are listed explicitly.
app = Celery("hindsight", include=["hindsight_site.review_tasks"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _prepare_services(sender, **kwargs) -> None:
    """Before the app reads the Django settings (a worker, beat, or a first publish): the data
    dir, its secret key and the services' addresses. Importing this module prepares nothing."""
    from hindsight_site import bootstrap

    bootstrap.prepare()


@worker_init.connect
def _die_with_the_launcher(sender=None, **kwargs) -> None:
    """A worker started by `hindsight run` is killed, with its pool, when the launcher is gone
    and its own shutdown hangs (hindsight_site.orphan_watch)."""
    from hindsight_site import orphan_watch

    launcher = orphan_watch.launcher_pid(getattr(sender, "hostname", "") or "")
    if launcher is not None:
        orphan_watch.watch(launcher)


@worker_ready.connect
def _reclaim_orphaned_reviews(sender, **kwargs) -> None:
    """A (re)started worker takes back what its previous run was reviewing when it died."""
    from traces.services.review_queue import trace_reclaim_orphans

    try:
        trace_reclaim_orphans(worker=sender.hostname)
    except Exception:  # noqa: BLE001 - the database may still be starting: the sweep covers it
        logging.getLogger(__name__).warning("could not reclaim orphaned reviews", exc_info=True)


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(sender=None, **kwargs) -> None:
    """Each task in a worker as a request: a connection past CONN_MAX_AGE or left unusable (the
    database restarted, an error) is closed, the others kept (CELERY_DB_REUSE_MAX stops the
    fixup from closing them all around every task). A task applied in this process (`apply()`,
    inside the caller's transaction) leaves the caller's connection alone, as the fixup does."""
    from django.db import close_old_connections

    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    close_old_connections()
