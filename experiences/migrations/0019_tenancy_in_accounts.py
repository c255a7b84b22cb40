"""Its foreign keys now name accounts.Project (and accounts.ApiKey): the same tables."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_tenancy_from_traces"),
        ("experiences", "0018_families_induced_again"),
    ]

    operations = [
        # The tables stay where they are (their names kept): only Django's idea of them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="experience",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="experiences",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="experiencemerge",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="merges",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="failurepattern",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="failure_patterns",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="kbarticle",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="kb_articles",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="mergeproposal",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="merge_proposals",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="recalllog",
                    name="api_key",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="accounts.apikey",
                    ),
                ),
                migrations.AlterField(
                    model_name="recalllog",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="recalls",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="taskfamily",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="task_families",
                        to="accounts.project",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
