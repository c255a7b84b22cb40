"""Recall's copy of PostgreSQL's keyword statistics: taken after each analyze, whoever ran it."""

import pytest
from django.db import connection

from experiences.models import KeywordFrequency
from experiences.services.keyword_stats import keyword_stats_refresh
from experiences.tasks import refresh_keyword_stats
from tests.experiences.test_api_recall import make_experience

pytestmark = pytest.mark.django_db


def library(project, count: int, summary: str) -> None:
    for n in range(count):
        make_experience(project, summary=summary.format(n=n))


def pg_stats_frequencies() -> dict[str, float]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.lexeme, e.frequency FROM pg_stats s, unnest(s.most_common_elems::text::"
            "text[], s.most_common_elem_freqs) AS e(lexeme, frequency) WHERE s.tablename = "
            "'experiences_experience' AND s.attname = 'search' AND e.lexeme IS NOT NULL"
        )
        return dict(cursor.fetchall())


def copied() -> dict[str, float]:
    return dict(KeywordFrequency.objects.values_list("lexeme", "frequency"))


def test_a_forced_refresh_analyzes_and_copies_postgresqls_frequencies(project):
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    assert copied() == {}

    assert keyword_stats_refresh(force=True) is True

    frequencies = copied()
    assert frequencies == pytest.approx(pg_stats_frequencies())
    assert frequencies["refund"] == pytest.approx(1.0)  # in every experience
    assert frequencies["qx07rb"] == pytest.approx(1 / 30)  # in one


def test_an_analyze_run_by_someone_else_is_copied_at_the_next_refresh(project):
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    keyword_stats_refresh(force=True)
    library(project, 30, "rebook the passenger {n} on the next train")
    with connection.cursor() as cursor:  # as autovacuum would
        cursor.execute("ANALYZE experiences_experience")

    # After a review the worker copies only what it analyzed itself; beat follows the others.
    assert keyword_stats_refresh(follow=False) is False
    assert "rebook" not in copied()
    assert refresh_keyword_stats() is False  # nothing to analyze: the statistics are fresh

    assert copied() == pytest.approx(pg_stats_frequencies())
    assert copied()["rebook"] == pytest.approx(0.5)


def test_a_refresh_with_nothing_new_leaves_the_copy_alone(project):
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    keyword_stats_refresh(force=True)
    taken = KeywordFrequency.objects.get(lexeme="refund").copied_at
    make_experience(project, summary="rebook the passenger on the next train")  # 1 of 31

    assert keyword_stats_refresh() is False

    assert KeywordFrequency.objects.get(lexeme="refund").copied_at == taken
    assert "rebook" not in copied()


@pytest.mark.django_db(transaction=True)  # the change counts PostgreSQL keeps need commits
def test_enough_new_experiences_are_analyzed_and_copied(project):
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    keyword_stats_refresh(force=True)
    library(project, 30, "rebook the passenger {n} on the next train")  # half the library
    with connection.cursor() as cursor:  # report the counts now, not within the second
        cursor.execute("SELECT pg_stat_force_next_flush()")

    assert keyword_stats_refresh() is True

    assert copied()["rebook"] == pytest.approx(0.5)


def test_beat_refreshes_the_copy_every_minute(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["refresh-keyword-stats"]
    assert entry["task"] == refresh_keyword_stats.name and entry["schedule"] == 60


def flush_change_counts() -> None:
    with connection.cursor() as cursor:  # report the counts now, not within the second
        cursor.execute("SELECT pg_stat_force_next_flush()")


@pytest.mark.django_db(transaction=True)
def test_a_refresh_that_analyzed_does_not_analyze_again_for_one_more_experience(project):
    # An ANALYZE of the search column alone left the change count as it was: past the
    # threshold, every review after it analyzed the table again.
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    flush_change_counts()
    assert keyword_stats_refresh() is True

    make_experience(project, summary="rebook the passenger on the next train")
    flush_change_counts()

    assert keyword_stats_refresh() is False


def test_the_check_after_a_review_with_nothing_due_is_one_statement(
    project, django_assert_num_queries
):
    library(project, 30, "refund the cancelled flight of reservation QX{n:02d}RB")
    keyword_stats_refresh(force=True)
    make_experience(project, summary="rebook the passenger on the next train")  # 1 of 31

    # Inside the test's transaction the statistics snapshot is cleared first: two statements.
    with django_assert_num_queries(2):
        assert keyword_stats_refresh(follow=False) is False
