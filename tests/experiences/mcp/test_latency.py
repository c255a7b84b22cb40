"""The proxy latency probe (`python -m experiences.mcp.latency`) runs and reports its figures;
the figures themselves are a measurement, not a test (see BENCHMARKS.md)."""

from experiences.mcp.latency import measure


def test_the_latency_probe_reports_direct_and_proxied_round_trips():
    figures = measure(messages=50, env={"HINDSIGHT_API_KEY": ""})

    assert figures["messages"] == 50 and figures["recording"] is False
    assert figures["direct_rtt_p50_ms"] > 0 and figures["proxied_rtt_p50_ms"] > 0
    assert "added_per_message_p50_ms" in figures
