"""Folding the tally deltas the triggers append (see traces/models/tallies.py) into one row per
project and name, so reading a count stays a handful of rows however much was written."""

from django.db import connection

# One statement: rows appended while it runs are not in its snapshot, so they are neither
# deleted nor counted twice; a second compaction running at once waits for the first's row
# locks and then skips the rows it deleted. Rows of deleted projects go.
COMPACT = """
WITH gone AS (DELETE FROM traces_tally RETURNING project_id, name, n)
INSERT INTO traces_tally (project_id, name, n)
SELECT gone.project_id, gone.name, sum(gone.n) FROM gone
JOIN traces_project project ON project.id = gone.project_id
GROUP BY 1, 2 HAVING sum(gone.n) <> 0
"""


def tallies_compact() -> dict[str, int]:
    """Fold every project's deltas; returns how many rows there were and are."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM traces_tally")
        (before,) = cursor.fetchone()
        cursor.execute(COMPACT)
        after = cursor.rowcount
    return {"rows_before": before, "rows_after": after}
