# The scene vectors as halfvec (16-bit floats) with the HNSW index on them: half the pages of a
# library, for 1M experiences on one box (bench/recall.py --experiences 1000000).

import pgvector.django.halfvec
import pgvector.django.indexes
from django.conf import settings
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('experiences', '0010_recall_stats_apart'),
    ]

    operations = [
        # The graph is rebuilt in one pass with enough memory (the default 64 MB is ~4x slower).
        migrations.RunSQL("SET LOCAL maintenance_work_mem = '1GB'", migrations.RunSQL.noop),
        migrations.RemoveIndex(
            model_name='experience',
            name='experiences_exp_embed_hnsw',
        ),
        migrations.AlterField(
            model_name='experience',
            name='embedding',
            field=pgvector.django.halfvec.HalfVectorField(blank=True, dimensions=settings.HINDSIGHT_EMBEDDING_DIM, null=True),
        ),
        migrations.AddIndex(
            model_name='experience',
            index=pgvector.django.indexes.HnswIndex(ef_construction=128, fields=['embedding'], m=32, name='experiences_exp_embed_hnsw', opclasses=['halfvec_cosine_ops']),
        ),
    ]
