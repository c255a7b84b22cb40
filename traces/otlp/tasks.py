"""Celery tasks of the OTLP receiver: thin shells around one service call each."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from traces.otlp import completion, services


@shared_task(name="otlp.complete_idle_traces", acks_late=True, ignore_result=True)
def complete_idle_traces() -> int:
    """Beat: store OpenTelemetry traces whose root span never arrived, once they went idle."""
    return completion.otel_traces_sweep()


@shared_task(
    name=services.COMPLETE_TASK,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=8,
)
def complete_traces(pks: list[int], api_key_id: int | None) -> int:
    """Store the traces of a big export whose root came (the rest of otlp_export's work)."""
    return completion.otel_traces_complete(pks, api_key_id=api_key_id)
