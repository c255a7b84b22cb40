from django.conf import settings
from django.core.management.base import BaseCommand
from tqdm import tqdm

from experiences.services.reembed import (
    embedding_column_dimensions,
    embedding_column_resize,
    experiences_reembed,
    experiences_requests_fill,
    experiences_to_reembed,
)


class Command(BaseCommand):
    help = (
        "Re-embed experiences whose vector was made by another model than the configured one "
        "(or all with --all). Resizes the vector column first if HINDSIGHT_EMBEDDING_DIM changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="re-embed every experience")
        parser.add_argument(
            "--requests",
            action="store_true",
            help="first give experiences stored before 2026-12-01 their whole request (from "
            "their source trajectory), then re-embed them from it",
        )
        parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    def handle(self, *args, all: bool, requests: bool, no_progress: bool, **options):
        wanted = settings.HINDSIGHT_EMBEDDING_DIM
        current = embedding_column_dimensions()
        everything = all
        if current != wanted:
            self.stdout.write(
                f"the vector column holds {current} dimensions; settings say {wanted}: resizing"
            )
            embedding_column_resize(wanted)
            everything = True
        if requests:
            with tqdm(unit="exp", disable=no_progress, desc="requests") as bar:
                filled = experiences_requests_fill(on_progress=bar.update)
            self.stdout.write(f"gave {filled} experience(s) their whole request")
        total = experiences_to_reembed(everything=everything).count()
        with tqdm(total=total, unit="exp", disable=no_progress, desc="re-embedding") as bar:
            done = experiences_reembed(everything=everything, on_progress=bar.update)
        self.stdout.write(f"re-embedded {done} experience(s)")
