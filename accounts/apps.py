from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Projects and accounts"

    def ready(self) -> None:
        from accounts.services import login_throttle, users  # noqa: F401  (connect signals)
