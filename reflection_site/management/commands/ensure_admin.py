"""Create the `admin` superuser when there is none (used by `make run`)."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create the superuser `admin` if no superuser exists. The password comes from ADMIN_PASSWORD; "
        "without it one is generated and printed once."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            self.stdout.write("A superuser exists; nothing to do.")
            return
        password = os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        users.objects.create_superuser("admin", email="", password=password)
        if os.environ.get("ADMIN_PASSWORD"):
            self.stdout.write(self.style.SUCCESS("Created superuser 'admin' with the password from ADMIN_PASSWORD."))
        else:
            self.stdout.write(self.style.SUCCESS(f"Created superuser 'admin' with password: {password}"))
