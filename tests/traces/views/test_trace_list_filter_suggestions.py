"""/traces/: the agent, environment and tool filters suggest known values and accept a part of
one, in any case; GET /api/v1/traces keeps matching exact values."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services.api_keys import api_key_create
from tests.support.api import ApiClient

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def traces(project, make_trace):
    make_trace(project, task="Summarise the incident", agent="gpt-4o-mini", environment=["aws"])
    make_trace(
        project, task="Rotate the TLS certificate", agent="Claude-Ops", environment=["K8s-Prod"]
    )
    make_trace(project, task="Restart the web container", agent="ops-bot", environment=["docker"])


def _tasks(client, query: str) -> set[str]:
    body = client.get("/traces/?" + query, headers=HTMX).content.decode()
    return {t for t in ("Summarise the", "Rotate the TLS", "Restart the web") if t in body}


def test_a_part_of_the_agent_finds_it_in_any_case(client_for, reviewer, traces):
    client = client_for(reviewer)

    assert _tasks(client, "agent=gpt") == {"Summarise the"}
    assert _tasks(client, "agent=GPT-4O") == {"Summarise the"}
    assert _tasks(client, "agent=ops") == {"Rotate the TLS", "Restart the web"}
    assert _tasks(client, "agent=gpt-4o-mini") == {"Summarise the"}  # an exact value still works


def test_a_part_of_an_environment_or_a_tool_finds_it(client_for, reviewer, traces):
    client = client_for(reviewer)

    assert _tasks(client, "environment=k8s") == {"Rotate the TLS"}
    assert _tasks(client, "environment=PROD") == {"Rotate the TLS"}
    assert _tasks(client, "environment=dock") == {"Restart the web"}
    assert _tasks(client, "tool=dock") == {"Summarise the", "Rotate the TLS", "Restart the web"}
    assert _tasks(client, "tool=nothing-like-it") == set()
    assert _tasks(client, "agent=ops&environment=dock") == {"Restart the web"}


def test_the_api_still_matches_exact_values_only(project, traces):
    api = ApiClient(api_key_create(project=project, scopes=["ingest", "read"]).raw)

    def agents(params: dict[str, str]) -> set[str]:
        return {item["agent"] for item in api.get("traces", params).json()["items"]}

    assert agents({"agent": "gpt"}) == set()
    assert agents({"agent": "gpt-4o-mini"}) == {"gpt-4o-mini"}
    assert agents({"environment": "dock"}) == set()
    assert agents({"environment": "docker"}) == {"ops-bot"}
    assert agents({"tool": "dock"}) == set()
    assert len(agents({"tool": "docker"})) == 3


def test_the_filters_suggest_the_projects_agents_environments_and_tools(
    client_for, reviewer, project, other_project, make_trace, traces
):
    make_trace(other_project, agent="their-bot", environment=["their-env"])

    body = client_for(reviewer).get("/traces/").content.decode()

    agents = body.split('<datalist id="known-agents">')[1].split("</datalist>")[0]
    assert '<option value="gpt-4o-mini">' in agents and '<option value="Claude-Ops">' in agents
    environments = body.split('<datalist id="known-environments">')[1].split("</datalist>")[0]
    assert '<option value="k8s-prod">' in environments
    tools = body.split('<datalist id="known-tools">')[1].split("</datalist>")[0]
    assert '<option value="docker">' in tools and '<option value="shell">' in tools
    assert "their-bot" not in body and "their-env" not in body
    assert 'name="agent" list="known-agents"' in body


def test_the_suggestions_are_escaped(client_for, reviewer, project, make_trace):
    make_trace(project, agent='"><script>alert(1)</script>')

    body = client_for(reviewer).get("/traces/").content.decode()

    assert "<script>alert(1)" not in body
    assert '<option value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">' in body


def test_the_suggestions_cost_one_query_whatever_the_number_of_traces(
    client_for, reviewer, project, make_trace
):
    client = client_for(reviewer)
    make_trace(project, agent="a-bot")
    client.get("/traces/")  # warm up the session and the content types

    with CaptureQueriesContext(connection) as few:
        client.get("/traces/")
    for i in range(5):
        make_trace(project, agent=f"bot-{i}", environment=[f"env-{i}"])
    with CaptureQueriesContext(connection) as many:
        client.get("/traces/")

    assert len(many) == len(few)
    assert sum("unnest" in q["sql"] for q in many.captured_queries) == 1
