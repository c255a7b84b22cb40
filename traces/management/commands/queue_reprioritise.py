from django.conf import settings
from django.core.management.base import BaseCommand

from traces.services.queue_priority import queue_reprioritise


class Command(BaseCommand):
    help = (
        "Recompute every trajectory's review-queue priority with the current "
        "HINDSIGHT_LOW_CONFIDENCE (run it after changing that setting)."
    )

    def handle(self, *args, **options):
        self.stdout.write(f"threshold {settings.HINDSIGHT_LOW_CONFIDENCE}")
        changed = queue_reprioritise(
            progress=lambda done, total: self.stdout.write(f"  {done} / {total} trajectories")
        )
        self.stdout.write(self.style.SUCCESS(f"{changed} trajectories changed place in the queue"))
