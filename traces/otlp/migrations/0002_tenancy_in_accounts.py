"""Its foreign keys now name accounts.Project (and accounts.ApiKey): the same tables."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_tenancy_from_traces"),
        ("otlp", "0001_initial"),
    ]

    operations = [
        # The tables stay where they are (their names kept): only Django's idea of them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="oteltrace",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="otel_traces",
                        to="accounts.project",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
