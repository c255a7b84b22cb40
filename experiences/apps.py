from django.apps import AppConfig


class ExperiencesConfig(AppConfig):
    name = "experiences"
    verbose_name = "Experiences"
