"""The offline reviewer's documented rules, each on a hand-built trajectory."""

from tests.traces.review_builders import request_for, sv, tv
from traces.review.heuristic import HeuristicReviewer, key_values, label_steps


def labels_of(trace, steps) -> dict[int, str]:
    return {i: j.label for i, j in label_steps(request_for(trace, steps)).items()}


def seed_000_trajectory():
    """Seed 000's example: blind restarts were redundant; the policy found in the logs was key."""
    trace = tv(
        task="Service svc-a cannot reach svc-b in the prod namespace",
        final_answer="The NetworkPolicy deny-all-egress blocked egress from svc-a; "
        "patched it to allow traffic to app=svc-b.",
    )
    steps = [
        sv(0, "user_input", content="svc-a gets timeouts calling svc-b since this morning"),
        sv(
            1,
            tool="kubectl_get_pods",
            arguments={"namespace": "prod"},
            observation="svc-a-7d9f   Running\nsvc-b-5c2a   Running",
        ),
        sv(2, tool="docker_restart", arguments={"container": "svc-b"}, observation="restarted"),
        sv(3, tool="docker_restart", arguments={"container": "svc-a"}, observation="restarted"),
        sv(
            4,
            tool="kubectl_logs",
            arguments={"pod": "svc-a-7d9f"},
            observation="dial tcp 10.0.3.17:8080: i/o timeout\n"
            "blocked by NetworkPolicy deny-all-egress",
        ),
        sv(
            5,
            tool="kubectl_get_networkpolicy",
            arguments={"name": "deny-all-egress"},
            observation="spec: podSelector app=svc-a egress: [] resourceVersion=48213",
        ),
        sv(
            6,
            tool="kubectl_patch_networkpolicy",
            arguments={"name": "deny-all-egress", "resourceVersion": "48213", "allow": "app=svc-b"},
            observation="networkpolicy.networking.k8s.io/deny-all-egress patched",
        ),
    ]
    return trace, steps


def test_seed_000_restarts_are_redundant_and_the_logs_are_necessary():
    labels = labels_of(*seed_000_trajectory())

    assert labels[2] == labels[3] == "redundant"
    assert labels[4] == "necessary"  # the logs that revealed the NetworkPolicy
    assert labels[1] == labels[5] == labels[6] == "necessary"
    assert labels[0] == "necessary"  # the request


def test_seed_000_advice_is_second_person_tool_advice():
    trace, steps = seed_000_trajectory()
    outcome = HeuristicReviewer().review(request_for(trace, steps))
    template = outcome.template

    assert template.experience.startswith(
        'When you handle a task like "Service svc-a cannot reach svc-b in the prod namespace" '
        "on k8s,"
    )
    assert "first use kubectl_get_pods, then kubectl_logs" in template.experience
    assert "Skip docker_restart" in template.experience
    assert template.worth_reference
    assert template.effective_steps == [0, 1, 4, 5, 6]
    assert outcome.reviewer == "heuristic" and outcome.prompt_version == "heuristic-1"


def test_an_errored_step_is_failed():
    labels = labels_of(
        tv(), [sv(0, tool="curl", is_error=True, error_type="Timeout"), sv(1, tool="ok")]
    )
    assert labels[0] == "failed"


def test_an_identical_repeated_call_is_redundant():
    steps = [
        sv(0, tool="get", arguments={"id": 1}, observation="x"),
        sv(1, tool="get", arguments={"id": 1}, observation="x"),
    ]
    assert labels_of(tv(outcome="unknown"), steps)[1] == "redundant"


def test_a_retry_after_a_failure_is_not_a_repeat():
    steps = [
        sv(0, tool="get", arguments={"id": 1}, is_error=True),
        sv(1, tool="get", arguments={"id": 1}, observation="order-7781"),
    ]
    labels = labels_of(tv(final_answer="order-7781 shipped"), steps)
    assert labels == {0: "failed", 1: "necessary"}


def test_a_path_abandoned_after_an_error_is_misleading():
    steps = [
        sv(0, tool="ssh_exec", arguments={"cmd": "ls /var/log"}, observation="app.log"),
        sv(
            1,
            tool="ssh_exec",
            arguments={"cmd": "cat /var/log/app.log"},
            is_error=True,
            error_type="PermissionDenied",
        ),
        sv(
            2,
            tool="log_api_query",
            arguments={"service": "app"},
            observation="OOM at 03:12 pid=4411",
        ),
    ]
    labels = labels_of(tv(final_answer="killed by OOM, pid=4411"), steps)
    assert labels == {0: "misleading", 1: "failed", 2: "necessary"}


def test_a_value_used_by_a_later_necessary_step_makes_a_step_necessary():
    steps = [
        sv(0, tool="find_user", arguments={"email": "a@b.c"}, observation="user_id=u-93817"),
        sv(1, tool="weather", arguments={"city": "Paris"}, observation="sunny"),
        sv(2, tool="list_orders", arguments={"user_id": "u-93817"}, observation="order-55120"),
    ]
    labels = labels_of(tv(final_answer="Your last order is order-55120."), steps)
    assert labels == {0: "necessary", 1: "redundant", 2: "necessary"}


def test_without_a_final_answer_the_last_successful_call_is_necessary():
    steps = [
        sv(0, tool="a", observation="fine"),
        sv(1, tool="deploy", observation="done"),
        sv(2, tool="notify", is_error=True),
    ]
    labels = labels_of(tv(outcome="success"), steps)
    assert labels == {0: "redundant", 1: "necessary", 2: "failed"}


def test_a_failed_trajectory_yields_a_lesson_with_what_to_do_instead():
    steps = [
        sv(
            0,
            tool="apt_install",
            arguments={"pkg": "libssl1.1"},
            is_error=True,
            error_type="PackageNotFound",
            observation="E: Unable to locate package libssl1.1",
        ),
        sv(1, tool="apt_install", arguments={"pkg": "libssl3"}, observation="installed libssl3"),
    ]
    outcome = HeuristicReviewer().review(
        request_for(
            tv(outcome="failure", final_answer="libssl3 installed but the build still fails"), steps
        )
    )

    assert outcome.template.worth_reference
    assert "do not rely on apt_install" in outcome.template.experience
    assert "PackageNotFound" in outcome.template.experience
    assert "Instead, use" not in outcome.template.experience  # same tool: not a switch


def test_a_trajectory_with_nothing_to_learn_is_not_worth_referencing():
    steps = [sv(0, "llm_reasoning", content="thinking"), sv(1, "llm_reasoning", content="done")]
    outcome = HeuristicReviewer().review(request_for(tv(outcome="unknown"), steps))
    assert not outcome.template.worth_reference


def test_key_values_are_identifiers_numbers_and_names():
    values = key_values("pod svc-a-7d9f at 10.0.3.17:8080 hit NetworkPolicy; error true the")
    assert {"svc-a-7d9f", "10.0.3.17", "8080", "networkpolicy"} <= values
    assert not {"error", "true", "the", "pod"} & values


def test_a_tool_that_also_worked_is_not_avoided_wholesale():
    steps = [
        sv(
            0,
            tool="read_file",
            arguments={"path": "/etc/app.yml"},
            is_error=True,
            error_type="FileNotFoundError",
            observation="FileNotFoundError: /etc/app.yml",
        ),
        sv(
            1, tool="read_file", arguments={"path": "/etc/app/config.yml"}, observation="port: 8443"
        ),
    ]
    template = HeuristicReviewer().review(request_for(tv(final_answer="port 8443"), steps)).template

    assert "Avoid read_file" not in template.experience
    assert any(
        "read_file" in line and "FileNotFoundError" in line for line in template.improvements
    )


def test_a_successful_run_whose_answer_names_no_value_still_has_an_effective_call():
    steps = [sv(0, tool="check", observation="fine"), sv(1, tool="restart_pool", observation="ok")]
    labels = labels_of(
        tv(outcome="success", final_answer="Raised the pool size; errors stopped."), steps
    )
    assert labels == {0: "redundant", 1: "necessary"}
