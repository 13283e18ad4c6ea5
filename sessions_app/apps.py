from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Conversations and the memory gate"

    def ready(self) -> None:
        from reflection_site.health import register_probe
        from sessions_app.health import check_pending_turns, pending_turns_problem

        register_probe("pending_turns", check_pending_turns, pending_turns_problem)
