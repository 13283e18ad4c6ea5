"""``python manage.py apikey create NAME --scope ingest --scope read`` prints the key once, last."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError
from django.utils import timezone

from reflection_site.models import ApiKey


class Command(BaseCommand):
    help = (
        "Manage API keys. `create` prints the new key once, as the last line of its output, and stores only "
        "its hash; `list` shows names, scopes and state; `revoke` disables a key by name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a key and print it once.")
        create.add_argument("name")
        create.add_argument(
            "--scope",
            action="append",
            choices=ApiKey.Scope.values,
            dest="scopes",
            help="Repeat for each scope (default: ingest and read).",
        )
        sub.add_parser("list", help="List keys (never their secret).")
        revoke = sub.add_parser("revoke", help="Revoke a key by name.")
        revoke.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"handle_{options['action']}")(options)

    def handle_create(self, options: dict[str, Any]) -> None:
        scopes = options["scopes"] or [ApiKey.Scope.INGEST, ApiKey.Scope.READ]
        try:
            key, raw = ApiKey.generate(options["name"], scopes)
        except IntegrityError as exc:
            raise CommandError(
                f"A key named {options['name']!r} already exists; revoke it or pick another name."
            ) from exc
        self.stdout.write(self.style.SUCCESS(f"Created API key {key.name!r} with scopes {', '.join(key.scopes)}."))
        self.stdout.write("Store it now; it is not shown again:")
        self.stdout.write(raw)

    def handle_list(self, options: dict[str, Any]) -> None:
        rows = ApiKey.objects.order_by("name")
        if not rows:
            self.stdout.write("No API keys. Create one with: python manage.py apikey create NAME --scope read")
            return
        self.stdout.write(f"{'NAME':<24} {'PREFIX':<10} {'SCOPES':<32} {'STATE':<8} LAST USED (to the minute)")
        for key in rows:
            state = "active" if key.is_active else "revoked"
            used = timezone.localtime(key.last_used_at).strftime("%Y-%m-%d %H:%M") if key.last_used_at else "never"
            self.stdout.write(f"{key.name:<24} {key.prefix:<10} {','.join(key.scopes):<32} {state:<8} {used}")

    def handle_revoke(self, options: dict[str, Any]) -> None:
        updated = ApiKey.objects.filter(name=options["name"], revoked_at__isnull=True).update(revoked_at=timezone.now())
        if not updated:
            raise CommandError(f"No active key named {options['name']!r}.")
        self.stdout.write(self.style.SUCCESS(f"Revoked {options['name']!r}."))
