"""Celery tasks of the OTLP receiver: thin shells around one service call each."""

from celery import shared_task

from traces.otlp import services


@shared_task(name="otlp.complete_idle_traces", acks_late=True, ignore_result=True)
def complete_idle_traces() -> int:
    """Beat: store OpenTelemetry traces whose root span never arrived, once they went idle."""
    return services.otel_traces_sweep()
