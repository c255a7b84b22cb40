"""The reviewer's view: cut arguments and observations, keep error lines, measure the size."""

from tests.support.review_builders import request_for, sv, tv
from traces.review.compression import compress_step, estimate_tokens


def test_arguments_and_observation_are_cut_to_the_settings(settings):
    settings.HINDSIGHT_COMPRESS_ARGUMENT_CHARS = 50
    settings.HINDSIGHT_COMPRESS_OBSERVATION_CHARS = 100
    step = sv(3, tool="query", arguments={"sql": "SELECT " + "x, " * 100}, observation="row " * 200)
    line = compress_step(step)

    args = line.split("args=")[1].split(" → ")[0]
    assert len(args) <= 51  # 50 + the ellipsis
    assert len(line.split(" → ")[1]) <= 101


def test_error_lines_and_status_codes_past_the_cut_are_kept(settings):
    settings.HINDSIGHT_COMPRESS_OBSERVATION_CHARS = 100
    observation = "\n".join(
        ["starting up, all fine"] * 20
        + ["HTTP/1.1 503 Service Unavailable", "ERROR: upstream connect error"]
    )
    line = compress_step(
        sv(0, tool="curl", observation=observation, is_error=True, error_type="HTTPError")
    )

    assert "✗ HTTPError" in line
    assert "503 Service Unavailable" in line and "upstream connect error" in line


def test_a_ten_step_trajectory_is_a_few_hundred_tokens():
    steps = [
        sv(
            i,
            tool=f"tool_{i % 4}",
            arguments={"target": f"svc-{i}", "namespace": "prod", "verbose": True},
            observation=("status ok; " * 60) + ("\nERROR timeout after 30s" if i % 3 == 0 else ""),
        )
        for i in range(10)
    ]
    request = request_for(tv(final_answer="the NetworkPolicy deny-egress blocked it"), steps)

    tokens = estimate_tokens(request.prompt)
    assert 300 <= tokens <= 1000, tokens
    assert "status ok; " * 60 not in request.prompt


def test_the_tools_line_says_which_tool_reads_and_which_hands_the_case_to_a_person():
    steps = [
        sv(0, "user_input", content="cancel K1NW8N"),
        sv(1, tool="get_reservation_details", arguments={"reservation_id": "K1NW8N"}),
        sv(2, tool="transfer_to_human_agents", arguments={"summary": "cancel K1NW8N"}),
    ]
    prompt = request_for(tv(task="cancel K1NW8N", outcome="success"), steps).prompt
    tools = next(line for line in prompt.splitlines() if line.startswith("Tools: "))
    assert "get_reservation_details (read-only:" in tools
    assert "transfer_to_human_agents (hands the case to a person:" in tools
