from django.apps import AppConfig


class GuardianAppConfig(AppConfig):
    name = "guardian_app"
    verbose_name = "Memory files and the write guardian"
