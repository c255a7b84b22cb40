"""Counts that /stats/ reads instead of scanning every step and trace: maintained by triggers.

A statement that writes steps or traces appends one row per name it changes (a delta, possibly
negative) to `traces_tally`; nothing is ever updated in place, so concurrent ingests never wait
on each other for a counter row. A count is the sum of its rows; the beat task
`traces.compact_tallies` folds each project's rows into one per name. The triggers and their
backfill are in migration 0010_tallies; the names they write are built by `tally_name`.
"""

from django.db import models

from accounts.models.tenancy import Project


class Tally(models.Model):
    """One delta of a named count of a project (see the module docstring)."""

    # No database constraint: the triggers of a project's last steps and traces, deleted with
    # it, still append deltas; the compaction drops the rows of a project that is gone.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    # label:<source>:<label>[:accepted] (steps), status:<review status>, hour:<UTC hour> (traces)
    name = models.CharField(max_length=120)
    n = models.BigIntegerField()

    class Meta:
        # the reader's SUM(n) GROUP BY name for one project, and the compaction's DELETE
        indexes = [models.Index(fields=["project", "name"], name="traces_tally_project_name")]

    def __str__(self) -> str:
        return f"{self.name} {self.n:+d}"
