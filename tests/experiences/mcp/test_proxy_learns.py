"""What a captured MCP session teaches: the proxy's trajectory is reviewed like any other and
leaves an experience (or, for its failed calls, failure patterns) in the library."""

from __future__ import annotations

from experiences.models import Experience, FailurePattern
from hindsight_site.review_tasks import review_trace
from tests.experiences.mcp.test_proxy import completed_trace, three_calls
from tests.support.mcp import proxy_command, session


def test_a_captured_session_is_reviewed_and_leaves_what_it_taught(site):
    command = proxy_command(
        "--agent", "ide-agent", "--task", "set up the web service", "--environment", "docker",
        via_manage_py=True,
    )  # fmt: skip
    session(command, site.env(), three_calls)
    trace = completed_trace()

    assert review_trace(trace.pk) == "reviewed"
    trace.refresh_from_db()
    assert trace.review_status == "reviewed", trace.review_status_reason
    labels = dict(trace.steps.values_list("tool", "label"))
    assert labels["read_config"] == "failed" and labels["deploy"] == "failed"
    (experience,) = Experience.objects.filter(sources__trace=trace)
    assert experience.polarity == "failure" and experience.tools == ["add", "read_config", "deploy"]
    # A look-up that failed itself: what to do when it fails so, the error in words.
    assert experience.advice.startswith('When you use read_config: read_config "/etc/app')
    assert "can fail" in experience.advice and "permission denied" in experience.advice
    assert set(FailurePattern.objects.values_list("tool", flat=True)) == {"read_config", "deploy"}
