"""Every family is due for an induction again: the workflow and insight rules changed (no
workflow when the successes made its changes in opposite orders; "successful runs call <the
family's change>" is no insight), and a family keeps what it last induced until it is induced
again. Beat's sweep (`families_induce_due`) sends them; an item the rules no longer find is
archived there."""

from django.db import migrations

DUE = "UPDATE experiences_taskfamily SET induced_size = 0 WHERE induced_size > 0"


class Migration(migrations.Migration):
    dependencies = [
        ("experiences", "0017_same_case_only"),
    ]

    operations = [migrations.RunSQL(DUE, reverse_sql=migrations.RunSQL.noop)]
