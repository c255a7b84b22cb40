"""Stats (label distribution, machine-human agreement with Cohen's kappa) and compare."""

import json

from traces.models import Step
from traces.selectors.stats import cohen_kappa


def test_cohen_kappa_matches_the_textbook():
    # 20 items: both yes 10, both no 5, rater A only 2, rater B only 3 -> kappa 0.468
    pairs = [("y", "y")] * 10 + [("n", "n")] * 5 + [("y", "n")] * 2 + [("n", "y")] * 3
    assert cohen_kappa(pairs, ["y", "n"]) == 0.468
    assert cohen_kappa([("a", "a"), ("b", "b")], ["a", "b"]) == 1.0
    assert cohen_kappa([("a", "a")] * 4, ["a", "b"]) is None  # one category: undefined
    assert cohen_kappa([], ["a"]) is None


def _stats(response) -> dict:
    return json.loads(response.content.decode().split('id="stats-data" type="application/json">')[1]
                      .split("</script>")[0])  # fmt: skip


def test_stats_show_labels_by_source_and_agreement(client_for, reviewer, project, make_trace):
    trace = make_trace(project, steps=4, review=True)
    Step.objects.filter(trace=trace, index__in=[0, 1]).update(label_source="human")
    Step.objects.filter(trace=trace, index=1).update(label="redundant")
    make_trace(project, steps=2, labelled="heuristic")

    response = client_for(reviewer).get("/stats/")

    assert response.status_code == 200
    stats = _stats(response)
    assert stats["by_source"] == {
        "llm": {"necessary": 2},
        "human": {"necessary": 1, "redundant": 1},
        "heuristic": {"necessary": 2},
    }
    assert stats["agreement"]["pairs"] == 2
    necessary = stats["agreement"]["rows"][0]
    assert (necessary["both"], necessary["machine_only"], necessary["human_only"]) == (1, 1, 0)
    assert dict(stats["statuses"])["reviewed"] == 2
    assert '<th scope="col">human (judged)</th><th scope="col">accepted as is</th>' in (
        response.content.decode()
    )
    assert sum(n for _, n in stats["per_day"]) == 2
    assert b"chart.umd.min.js" in response.content


def test_stats_of_an_empty_project(client_for, reviewer):
    response = client_for(reviewer).get("/stats/")

    assert response.status_code == 200
    assert "No step has both a machine and a human label yet" in response.content.decode()


def test_compare_aligns_two_trajectories(client_for, reviewer, project, make_trace):
    a = make_trace(project, steps=3, outcome="success")
    b = make_trace(project, steps=4, outcome="failure")

    response = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={b.pk}")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("<tr") == 5  # header + 4 aligned rows (one step only in b)
    assert 'class="gap"' in body


def test_compare_without_ids_asks_for_them(client_for, reviewer):
    response = client_for(reviewer).get("/traces/compare/")

    assert response.status_code == 200
    assert "Compare two trajectories" in response.content.decode()
    # One id of no trace of the user's: the same form, with the reason (no bare 404 page).
    missing = client_for(reviewer).get("/traces/compare/?a=3")
    assert missing.status_code == 404
    assert "Compare two trajectories" in missing.content.decode()
    assert "Trace #3 is not in your projects." in missing.content.decode()


def test_compare_with_another_projects_trace_is_not_found(
    client_for, outsider, project, make_trace, other_project
):
    mine = make_trace(other_project)
    theirs = make_trace(project)

    response = client_for(outsider).get(f"/traces/compare/?a={mine.pk}&b={theirs.pk}")

    assert response.status_code == 404


def test_labels_accepted_as_is_are_counted_apart_from_human_judgements(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    """Ctrl+Enter's "Finish" and "Accept all" confirm machine labels wholesale: 9 such against
    3 judged read "human 12" before."""
    accepted, judged = make_trace(project, steps=9), make_trace(project, steps=3)
    Step.objects.filter(trace=accepted).update(label_source="human", is_accepted_as_is=True)
    Step.objects.filter(trace=judged).update(label_source="human", label="redundant")

    response = client_for(reviewer).get("/stats/")

    by_source = _stats(response)["by_source"]
    assert by_source == {"accepted": {"necessary": 9}, "human": {"redundant": 3}}
    body = response.content.decode()
    row = body.split('<span class="chip lbl-necessary">necessary</span></th>')[1].split("</tr>")[0]
    assert row == "<td>0</td><td>0</td><td>0</td><td>9</td><td>9</td>"
