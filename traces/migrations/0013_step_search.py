"""Full-text search over the steps (the trace list's search box: tool, error type, content,
observation), as an expression GIN index, not a stored column: the steps table is the largest
one, a stored tsvector would rewrite it and grow every row, and the searches that read this are
people's. Built CONCURRENTLY, so a large table stays writable while it builds."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("traces", "0012_queue_rank")]

    operations = [
        AddIndexConcurrently(
            model_name="step",
            index=django.contrib.postgres.indexes.GinIndex(
                django.contrib.postgres.search.SearchVector(
                    "tool", "error_type", "content", "observation", config="simple"
                ),
                name="traces_step_search",
            ),
        ),
    ]
