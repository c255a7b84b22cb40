from django.apps import AppConfig


class OtlpConfig(AppConfig):
    name = "traces.otlp"
    label = "otlp"
    verbose_name = "OpenTelemetry (OTLP) receiver"
