"""Fresh statistics for recall's keyword ranking.

Recall weighs its keywords by how common each word is in the library and leaves out the words
most experiences hold. The frequencies are PostgreSQL's own statistics of
`experiences_experience.search` (`pg_stats.most_common_elems`), copied into `KeywordFrequency`
(reading the `pg_stats` view in every recall cost ~1 ms of planning and array parsing).

Autovacuum refreshes the statistics only after 10 % of the table changed and its next nap; a new
library would be ranked without them for minutes. So the worker refreshes them itself after
distilling, when a tenth of the rows (at least 20) changed since the last analyze (an ANALYZE of
the table in autovacuum's stead, sampled, ~100 ms at 2,000 experiences), and beat calls the same
refresh every minute, so the copy also follows autovacuum's analyses and libraries changed by
imports or merges: two catalog reads each time (up to a thousand words), the copy rewritten only
when the statistics changed. One worker at a time. (Checking only every few seconds saved 3 ms a
review under load, but left the last reviews of a burst unanalyzed until beat's minute, and
recall ranked unseen τ-bench tasks differently in the meantime: not kept.)
"""

import logging

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from experiences.models import KeywordFrequency

logger = logging.getLogger(__name__)

_LOCK = 0x68736B77  # pg_try_advisory_lock key: one refresh at a time across workers

# The table's change count and size, as of the last statistics PostgreSQL's backends reported.
_STATE_SQL = """
SELECT n_mod_since_analyze, n_live_tup
FROM pg_stat_user_tables WHERE relid = 'experiences_experience'::regclass
"""

_STATISTICS = """
SELECT e.lexeme, e.frequency FROM pg_stats s,
    unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, frequency)
WHERE s.schemaname = current_schema() AND s.tablename = 'experiences_experience'
  AND s.attname = 'search' AND e.lexeme IS NOT NULL
"""


def keyword_frequencies_sync() -> bool:
    """Make the copy equal PostgreSQL's current statistics; True when it changed."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_STATISTICS)
        current = dict(cursor.fetchall())
        if current == dict(KeywordFrequency.objects.values_list("lexeme", "frequency")):
            return False
        KeywordFrequency.objects.all().delete()
        now = timezone.now()
        KeywordFrequency.objects.bulk_create(
            KeywordFrequency(lexeme=lexeme, frequency=frequency, copied_at=now)
            for lexeme, frequency in current.items()
        )
    return True


def _analyze_due(cursor) -> bool:
    """Whether a tenth of the rows (at least 20) changed since the last analyze."""
    if connection.in_atomic_block:
        # Inside a transaction PostgreSQL answers statistics from the snapshot it took at the
        # first read: without this an analyze since then goes unseen. (Outside one each
        # statement reads afresh.)
        cursor.execute("SELECT pg_stat_clear_snapshot()")
    cursor.execute(_STATE_SQL)
    changed, live = cursor.fetchone() or (0, 0)
    return changed >= max(20, live // 10)


def keyword_stats_refresh(*, force: bool = False, follow: bool = True) -> bool:
    """ANALYZE the table when enough rows changed (or `force`), then bring the copy in
    step with the statistics: whoever took them (`follow`, beat's minute), or only after its own
    analyze (the worker after each review: comparing a thousand words cost 13 ms a review, and
    beat follows the others within the minute); True when it analyzed."""
    try:
        with connection.cursor() as cursor:
            # After most reviews nothing is due: one statement, no lock (four statements were
            # 3 ms of a review under load). Once due, the check is made again under the lock:
            # another worker may have analyzed meanwhile.
            if not (force or follow or _analyze_due(cursor)):
                return False
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
            if not cursor.fetchone()[0]:
                return False
            try:
                analyze = force or _analyze_due(cursor)
                if analyze:
                    # The whole table: an ANALYZE of some columns leaves the change count as it
                    # was, so once past the threshold every review analyzed again (a fifth of a
                    # worker's time under load) until autovacuum's own analyze reset it. This
                    # one stands in for autovacuum's (it resets the count autovacuum reads too).
                    cursor.execute("ANALYZE experiences_experience")
                if analyze or follow:
                    keyword_frequencies_sync()
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    except DatabaseError:
        logger.warning("keyword statistics not refreshed", exc_info=True)
        return False
    return analyze
