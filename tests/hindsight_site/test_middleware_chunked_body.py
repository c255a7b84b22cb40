"""A chunked request body (`Transfer-Encoding: chunked`, no `Content-Length`) is read too.

gunicorn decodes the chunks and passes them as `wsgi.input` with `wsgi.input_terminated`; Django
reads only `CONTENT_LENGTH` bytes and without one saw an empty body ("Field required"). The API's
edge middleware reads it up to the body limit (413 beyond). One test runs a real gunicorn.
"""

import http.client
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.support.api import trajectory
from tests.support.worker import worker_database_url
from traces.models import Trace

ROOT = Path(__file__).resolve().parents[2]


def post_chunked(key: str, body: bytes, *, terminated: bool = True):
    """What gunicorn hands Django for a chunked request: the decoded body, no length."""
    environ = {
        "CONTENT_TYPE": "application/json",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": terminated,
    }
    return Client().generic("POST", "/api/v1/traces", **environ)


@pytest.mark.django_db
def test_a_chunked_body_is_read(all_scopes_key):
    response = post_chunked(all_scopes_key, json.dumps(trajectory("chunked")).encode())

    assert response.status_code == 201, response.content
    assert Trace.objects.get().external_id == "chunked"


@pytest.mark.django_db
def test_a_chunked_body_over_the_limit_is_413(all_scopes_key, settings):
    settings.HINDSIGHT_MAX_BODY_BYTES = 2048
    body = trajectory("big")
    body["task"] = "x" * 5000
    response = post_chunked(all_scopes_key, json.dumps(body).encode())

    assert response.status_code == 413
    assert "2048" in response.json()["detail"]
    assert not Trace.objects.exists()


@pytest.mark.django_db
def test_a_chunked_body_exactly_at_the_limit_is_read(all_scopes_key, settings):
    raw = json.dumps(trajectory("at-limit")).encode()
    settings.HINDSIGHT_MAX_BODY_BYTES = len(raw)

    assert post_chunked(all_scopes_key, raw).status_code == 201


@pytest.mark.django_db
def test_without_the_servers_promise_of_an_end_an_unsized_body_is_left_unread(all_scopes_key):
    # Reading a socket with no length and no end in sight could block the worker for good.
    response = post_chunked(all_scopes_key, b"{}", terminated=False)

    assert response.status_code == 422  # the body was not read: "Field required"
    assert not Trace.objects.exists()


# ---------------------------------------------------------------------------- real gunicorn


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def gunicorn(transactional_db, tmp_path) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "HINDSIGHT_MAX_BODY_BYTES": "4096",
    }
    log = tmp_path / "gunicorn.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "hindsight_site.wsgi:application"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "30"],
        env=env,
        cwd=ROOT,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("gunicorn did not start:\n" + log.read_text()[-3000:]) from None
            time.sleep(0.1)
    yield port
    process.terminate()
    process.wait(15)


def chunked_post(port: int, key: str, body: bytes) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    pieces = (body[i : i + 1000] for i in range(0, len(body), 1000))
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    connection.request("POST", "/api/v1/traces", body=pieces, headers=headers, encode_chunked=True)
    response = connection.getresponse()
    answer = response.status, json.loads(response.read())
    connection.close()
    return answer


def test_gunicorn_passes_a_chunked_body_that_is_then_stored(gunicorn, all_scopes_key):
    status, body = chunked_post(gunicorn, all_scopes_key, json.dumps(trajectory("e2e")).encode())

    assert status == 201, body
    assert Trace.objects.get().external_id == "e2e"


def test_gunicorn_chunked_body_over_the_limit_is_413(gunicorn, all_scopes_key):
    big = trajectory("too-big")
    big["task"] = "x" * 10_000
    status, body = chunked_post(gunicorn, all_scopes_key, json.dumps(big).encode())

    assert status == 413 and "4096" in body["detail"]
    assert not Trace.objects.exists()
