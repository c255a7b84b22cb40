"""Projects, members, API keys, account settings and the audit log are accounts' now (the
same tables): traces' foreign keys name them there."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("otlp", "0002_tenancy_in_accounts"),
        ("experiences", "0019_tenancy_in_accounts"),
        ("accounts", "0001_tenancy_from_traces"),
        ("traces", "0018_claim_finish_undo"),
    ]

    operations = [
        # The tables stay where they are (their names kept): only Django's idea of them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="toolprofile",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tool_profiles",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="tally",
                    name="project",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="trace",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="traces",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="reviewclaim",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_claims",
                        to="accounts.project",
                    ),
                ),
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Membership"),
                migrations.DeleteModel(name="PasswordChangeDue"),
                migrations.DeleteModel(name="AccountSettings"),
                migrations.DeleteModel(name="Project"),
            ],
            database_operations=[],
        ),
    ]
