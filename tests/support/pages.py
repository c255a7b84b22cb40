"""Page requests: htmx's header, and counting the queries of a page."""

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

HTMX = {"HX-Request": "true"}


def count_queries(client, path: str, **kwargs: Any) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, **kwargs)
        assert response.status_code == 200, response.content[:500]
    return len(captured)
