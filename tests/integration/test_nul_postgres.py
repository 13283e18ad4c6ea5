"""Issue 18, item 2 on PostgreSQL, where a NUL that got past the middleware was a 500 (text and JSON columns
cannot hold U+0000): every body-validation test again, and the database's own refusal that they guard."""

from __future__ import annotations

import pytest
from django.db import DataError, connection

from sessions_app.models import ConversationSession
from tests.reflection_site.test_body_validation import *  # noqa: F403  (re-run on PostgreSQL)

del test_admin_forms_outside_the_api_are_not_415  # noqa: F821 - the admin's forms store nothing here


def test_the_database_is_postgresql(db):
    assert connection.vendor == "postgresql"


@pytest.mark.django_db
def test_postgresql_itself_cannot_store_nul():
    """What the middleware keeps away: without it, this error surfaced halfway through a request as a 500."""
    with pytest.raises((DataError, ValueError)):
        ConversationSession.objects.create(id="channel:test:nul", channel_id="te\x00st")
