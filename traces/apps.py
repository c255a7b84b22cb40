from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    verbose_name = "Trajectories"

    def ready(self) -> None:
        from traces.services import accounts, login_throttle  # noqa: F401  (connect signals)
