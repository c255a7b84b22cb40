"""/traces/compare/: from two ticked rows or one trajectory's other runs, word diffs inside a
row, long text a click from whole, links to each step, and errors that say what is wrong."""

import re

from traces.models import Step
from traces.presentation import word_diff


def test_the_word_diff_keeps_the_spacing_and_marks_each_sides_words():
    left, right = word_diff("docker logs web --tail 50", "docker logs api --tail 200")

    assert left == [("same", "docker logs "), ("del", "web"), ("same", " --tail "), ("del", "50")]
    assert right == [("same", "docker logs "), ("ins", "api"), ("same", " --tail "), ("ins", "200")]
    assert "".join(t for _, t in left) == "docker logs web --tail 50"


def test_a_replaced_phrase_reads_as_one_change():
    left, right = word_diff("read the last logs first", "restart the container now first")

    assert left == [("del", "read"), ("same", " the "), ("del", "last logs"), ("same", " first")]
    assert right[2] == ("ins", "container now")  # "last logs" → "container now": one change


def test_two_ticked_rows_of_the_list_are_compared(client_for, reviewer, project, make_trace):
    a = make_trace(project, outcome="success")
    b = make_trace(project, outcome="failure")

    response = client_for(reviewer).get(f"/traces/compare/?id={a.pk}&id={b.pk}")

    assert response.status_code == 200
    assert 'class="compare"' in response.content.decode()


def test_the_list_rows_can_be_ticked_for_comparing(client_for, reviewer, project, make_trace):
    trace = make_trace(project)

    body = client_for(reviewer).get("/traces/").content.decode()

    assert '<form method="get" action="/traces/compare/" class="compare-select"' in body
    assert f'<input type="checkbox" name="id" value="{trace.pk}"' in body
    assert "js/compare.js" in body


def test_ticking_one_or_three_says_to_tick_two(client_for, reviewer, project, make_trace):
    a, b, c = (make_trace(project) for _ in range(3))
    client = client_for(reviewer)

    one = client.get(f"/traces/compare/?id={a.pk}")
    three = client.get(f"/traces/compare/?id={a.pk}&id={b.pk}&id={c.pk}")

    assert one.status_code == three.status_code == 400
    assert "Tick exactly two trajectories to compare; 1 were ticked." in one.content.decode()
    assert 'role="alert"' in three.content.decode() and "3 were ticked" in three.content.decode()


def test_the_same_trace_twice_is_explained_with_its_other_runs(
    client_for, reviewer, project, make_trace
):
    a = make_trace(project)
    other = make_trace(project)  # the fixture's task text is the same for both

    response = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={a.pk}")

    assert response.status_code == 400
    body = response.content.decode()
    assert 'class="compare-error" role="alert"' in body
    assert "That is the same trajectory twice: pick another one." in body
    assert f'href="/traces/compare/?a={a.pk}&amp;b={other.pk}"' in body


def test_a_missing_trace_is_a_styled_not_found(client_for, reviewer, project, make_trace):
    a = make_trace(project)

    response = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b=999999")

    assert response.status_code == 404
    body = response.content.decode()
    assert "Trace #999999 is not in your projects." in body and 'role="alert"' in body
    assert "topbar" in body  # the site's page, not a bare error


def test_a_word_for_an_id_is_explained(client_for, reviewer):
    response = client_for(reviewer).get("/traces/compare/?a=12&b=<b>x</b>")

    assert response.status_code == 400
    assert "“&lt;b&gt;x&lt;/b&gt;” is not a trace number." in response.content.decode()


def test_one_trace_alone_suggests_the_other_runs_of_its_task(
    client_for, reviewer, project, other_project, make_trace
):
    a = make_trace(project, task="Rotate the TLS cert of api", external_id="rotate-cert-1")
    same_text_failed = make_trace(project, task="Rotate the TLS cert of api", outcome="failure")
    same_text = make_trace(project, task="Rotate the TLS cert of api")
    scene = make_trace(project, task="Renew the api certificate", external_id="rotate-cert-2")
    other_scene = make_trace(project, task="Count the rows", task_type="query")
    other_env = make_trace(project, task="Rotate the TLS cert of web", environment=["k8s"])
    make_trace(other_project, task="Rotate the TLS cert of api")  # another project's

    response = client_for(reviewer).get(f"/traces/compare/?a={a.pk}")

    assert response.status_code == 200
    body = response.content.decode()
    assert "Other runs of this task" in body
    found = [int(n) for n in re.findall(rf"\?a={a.pk}&amp;b=(\d+)", body)]
    # The same task first, a different outcome first (where they parted), then the same scene.
    assert found == [same_text_failed.pk, same_text.pk, scene.pk]
    assert other_scene.pk not in found and other_env.pk not in found
    assert "same task" in body and "same scene: operation, docker, 100 % of the tools" in body


def test_the_identical_rerun_is_found_whatever_words_its_task_has(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    """WebShop's tasks carry prices ("40.00") and file names ("web.log"), which PostgreSQL
    reads as one word each: a search split on non-letters missed the identical rerun."""
    task = "i need a clip-in hair extension, price lower than 40.00 dollars; see web.log"
    a = make_trace(project, task=task, external_id="ws-7-a")
    rerun = make_trace(project, task=task, external_id="unrelated-name")
    for n in range(25):  # runs whose ids look alike no longer take the slots
        make_trace(project, task=f"another task {n}", external_id=f"ws-7-{n}", task_type="query")

    body = client_for(reviewer).get(f"/traces/compare/?a={a.pk}").content.decode()

    found = [int(n) for n in re.findall(rf"\?a={a.pk}&amp;b=(\d+)", body)]
    assert found == [rerun.pk]


def test_the_search_finds_prices_and_file_names_as_words(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    hit = make_trace(project, task="price lower than 40.00 dollars, O'Brien's web.log")
    make_trace(project, task="price lower than 40 dollars")
    client = client_for(reviewer)

    for words in ("40.00", "40.0", "web.log", "o'brien", "dollars 40.00"):
        body = client.get("/traces/", {"q": words}).content.decode()
        assert "1 trace matches" in body and f'href="/traces/{hit.pk}/"' in body, words


def test_no_other_run_says_so(client_for, reviewer, project, make_trace):
    a = make_trace(project, task="A task done once", external_id="one-off")

    body = client_for(reviewer).get(f"/traces/compare/?a={a.pk}").content.decode()

    assert 'id="no-other-runs"' in body and 'name="b"' in body


def test_words_that_differ_inside_a_row_are_marked_and_escaped(
    client_for, reviewer, project, make_trace
):
    a = make_trace(project, steps=1)
    b = make_trace(project, steps=1)
    Step.objects.filter(trace=a).update(observation="exit code 1 <img src=x onerror=alert(1)>")
    Step.objects.filter(trace=b).update(observation="exit code 137 <img src=x onerror=alert(1)>")

    body = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={b.pk}").content.decode()

    assert "exit code <del>1</del> &lt;img src=x onerror=alert(1)&gt;" in body
    assert "exit code <ins>137</ins> &lt;img" in body
    assert "<img src=x" not in body
    assert '<tr class="differs">' in body  # the text differs though the action is the same


def test_a_long_text_shows_a_preview_and_the_whole_a_click_away(
    client_for, reviewer, project, make_trace
):
    a = make_trace(project, steps=1)
    b = make_trace(project, steps=1)
    long_text = " ".join(f"word{n}" for n in range(200))
    Step.objects.filter(trace__in=[a, b]).update(observation=long_text)

    body = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={b.pk}").content.decode()

    assert body.count('<details class="long observation">') == 2
    assert f"show all {len(long_text)} characters" in body
    assert "word199" in body  # the whole text is there, inside the details
    preview = re.search(r'<span class="preview">([^<]*)</span>', body).group(1)
    assert preview.endswith("…") and len(preview) <= 301 and not preview[:-1].endswith(" ")


def test_each_step_links_to_its_place_in_its_trajectory(client_for, reviewer, project, make_trace):
    a = make_trace(project, steps=2)
    b = make_trace(project, steps=2)

    body = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={b.pk}").content.decode()

    for trace in (a, b):
        for index in (0, 1):
            assert f'href="/traces/{trace.pk}/#step-{index}"' in body
    assert f'href="/traces/compare/?a={a.pk}"' in body  # the other runs of a's task


def test_compare_needs_a_login(client):
    assert client.get("/traces/compare/?a=1&b=2").status_code == 302


def test_the_comparison_says_llm_not_llm_reasoning_in_title_case(client_for, reviewer, project):
    from tests.support.trajectories import trajectory_payload
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest

    def stored():
        body = trajectory_payload(steps=1)
        body["steps"] = [{"index": 0, "kind": "llm_reasoning", "content": "I will read the logs"}]
        return trace_ingest(project=project, payload=TraceIn.model_validate(body)).trace

    a, b = stored(), stored()
    page = client_for(reviewer).get(f"/traces/compare/?a={a.pk}&b={b.pk}").content.decode()

    assert '<span class="kind">LLM</span>' in page and "Llm Reasoning" not in page
