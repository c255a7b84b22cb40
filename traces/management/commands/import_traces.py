import json
from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.management.commands.create_api_key import checked_project_name
from accounts.services.api_keys import project_get_or_create
from traces.services.imports import trace_import_batch
from traces.services.ingest_batch import trace_ingest_batch
from traces.transcripts import CONVERTERS

CHUNK = 100


class Command(BaseCommand):
    help = (
        "Bulk-load trajectories from a JSONL file: one trajectory per line, as POST /traces; "
        "with --format, one transcript per line, as POST /traces/import (without 'format')."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--project", required=True, help="project name (created if needed)")
        parser.add_argument(
            "--format",
            choices=sorted(CONVERTERS),
            help="the lines are transcripts of this format (a line's own 'format' wins)",
        )
        parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    def handle(
        self,
        *args,
        file: Path,
        project: str,
        format: str | None,
        no_progress: bool,
        **options,
    ):
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        target = project_get_or_create(name=checked_project_name(project))
        counts: Counter[str] = Counter()
        rejected: list[str] = []
        total = file.stat().st_size
        with (
            file.open("rb") as handle,
            tqdm(
                total=total, unit="B", unit_scale=True, disable=no_progress, desc="importing"
            ) as bar,
        ):
            chunk: list[tuple[int, dict]] = []
            for line_no, line in enumerate(handle, start=1):
                bar.update(len(line))
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError as error:
                    counts["rejected"] += 1
                    rejected.append(f"line {line_no}: not JSON ({error})")
                    continue
                if not isinstance(item, dict):
                    counts["rejected"] += 1
                    rejected.append(f"line {line_no}: not a JSON object")
                    continue
                if format is not None:
                    item.setdefault("format", format)
                chunk.append((line_no, item))
                if len(chunk) >= CHUNK:
                    self._flush(target, chunk, counts, rejected, imported=format is not None)
                    chunk = []
            self._flush(target, chunk, counts, rejected, imported=format is not None)
        self.stdout.write(
            f"imported {counts['created']}, duplicates {counts['duplicate']}, "
            f"rejected {counts['rejected'] + counts['invalid'] + counts['conflict']}"
        )
        for reason in rejected[:50]:
            self.stdout.write(f"  rejected {reason}")
        if len(rejected) > 50:
            self.stdout.write(f"  … and {len(rejected) - 50} more")

    def _flush(self, project, chunk, counts, rejected, *, imported: bool) -> None:
        if not chunk:
            return
        store = trace_import_batch if imported else trace_ingest_batch
        results = store(project=project, items=[item for _, item in chunk])
        for (line_no, _), result in zip(chunk, results, strict=True):
            counts[result["status"]] += 1
            if result["status"] in ("invalid", "conflict"):
                named = f" ({result['external_id']})" if result.get("external_id") else ""
                rejected.append(f"line {line_no}{named}: {_reason(result)}")


def _reason(result: dict) -> str:
    detail = result.get("detail")
    if isinstance(detail, list):
        return "; ".join(_located(d) for d in detail)
    return str(detail)


def _located(error: dict) -> str:
    # A transcript's errors already start with where they are: "messages[3].tool_call_id: …".
    if error["loc"][:1] == ["messages"] and str(error["msg"]).startswith("messages"):
        return error["msg"]
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
