"""The GIN indexes of experiences without a pending list (see the model's Meta): altered in place
and their pending entries merged now, not rebuilt."""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

INDEXES = {
    "experiences_exp_tools_gin": "tools",
    "experiences_exp_env_gin": "environment",
    "experiences_exp_search_gin": "search",
}


def _state() -> list:
    operations: list = []
    for name, field in INDEXES.items():
        operations.append(migrations.RemoveIndex(model_name="experience", name=name))
        index = GinIndex(fields=[field], name=name, fastupdate=False)
        operations.append(migrations.AddIndex(model_name="experience", index=index))
    return operations


class Migration(migrations.Migration):
    dependencies = [("experiences", "0011_embedding_halfvec")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "".join(
                        f"ALTER INDEX {name} SET (fastupdate = off); "
                        f"SELECT gin_clean_pending_list('{name}'::regclass); "
                        for name in INDEXES
                    ),
                    "".join(f"ALTER INDEX {name} RESET (fastupdate); " for name in INDEXES),
                )
            ],
            state_operations=_state(),
        )
    ]
