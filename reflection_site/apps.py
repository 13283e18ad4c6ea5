from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReflectionSiteConfig(AppConfig):
    name = "reflection_site"
    verbose_name = "Reflection"

    def ready(self) -> None:
        from reflection_site import checks  # noqa: F401 - registers the system checks
        from reflection_site.celery import ensure_schedules

        post_migrate.connect(ensure_schedules, dispatch_uid="reflection_site.ensure_schedules")
