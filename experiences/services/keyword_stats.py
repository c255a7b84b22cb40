"""Fresh statistics for recall's keyword ranking.

Recall leaves out of its keyword query the words PostgreSQL's statistics find in most of the
library (`pg_stats.most_common_elems` of `experiences_experience.search`). Autovacuum refreshes
them only after 10 % of the table changed and its next nap; a new library would be ranked
without them for minutes. So the worker refreshes them itself after distilling, when a tenth of
the rows (at least 20) changed since the last analyze: a catalog read per review, an ANALYZE of
one column (sampled, tens of milliseconds) once in a while, one worker at a time.
"""

import logging

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

_LOCK = 0x68736B77  # pg_try_advisory_lock key: one refresh at a time across workers


def keyword_stats_refresh(*, force: bool = False) -> bool:
    """ANALYZE the search column when enough rows changed; True when it ran."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n_mod_since_analyze, n_live_tup FROM pg_stat_user_tables "
                "WHERE relname = 'experiences_experience'"
            )
            row = cursor.fetchone()
            changed, live = row if row else (0, 0)
            if not force and changed < max(20, live // 10):
                return False
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
            if not cursor.fetchone()[0]:
                return False
            try:
                cursor.execute("ANALYZE experiences_experience (search)")
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    except DatabaseError:
        logger.warning("keyword statistics not refreshed", exc_info=True)
        return False
    return True
