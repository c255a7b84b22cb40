import logging
import os
import signal
import threading
import time

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


# After its parent (the launcher) died: the time Celery's own shutdown gets before the worker
# and its pool are killed. That shutdown waits on the broker, which was the launcher's Redis.
ORPHANED_GRACE_SECONDS = 10


@worker_init.connect
def _exit_when_orphaned(sender=None, **kwargs) -> None:
    """A worker whose launcher dies (SIGKILLed) gets SIGQUIT (its parent-death signal), and its
    cold shutdown can still hang on the broker that went with the launcher, or come before its
    signal handlers: once the launcher (HINDSIGHT_LAUNCHER_PID) is no longer its parent, it
    has ORPHANED_GRACE_SECONDS, then its process group (its own session, where the launcher
    started it) is killed. A worker not started by `hindsight run` (Compose, systemd, a
    terminal) is never touched."""
    launcher = os.environ.get("HINDSIGHT_LAUNCHER_PID", "")
    if not launcher.isdigit():
        return  # not started by `hindsight run`

    def watch() -> None:
        while os.getppid() == int(launcher):  # it may have died before this thread started
            time.sleep(1)
        time.sleep(ORPHANED_GRACE_SECONDS)
        if os.getpgid(0) == os.getpid():  # a group of its own: the worker and its pool
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


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
