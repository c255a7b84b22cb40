import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from hindsight_site import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")
bootstrap.prepare()
application = get_wsgi_application()

# Import every view and API module now (in gunicorn's master with --preload) rather than on the
# first request of each worker.
get_resolver().url_patterns  # noqa: B018
