"""Wrong admin passwords are throttled by django-axes (issue 18): a user name is paused from one client address
after ADMIN_LOGIN_FAILURE_LIMIT failures, with a 429 page that says what to do and Retry-After; other addresses
and other names are not; `axes_reset_username` lifts it; tests' force_login and right passwords are untouched."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.reflection_site.test_content_security_policy import assert_page_runs_under_its_policy

pytestmark = pytest.mark.django_db

PASSWORD = "olga-pass-123"


@pytest.fixture
def olga(settings: Any) -> User:
    settings.AXES_FAILURE_LIMIT = 3
    return User.objects.create_superuser("olga", "olga@example.com", PASSWORD)


def sign_in(password: str, *, username: str = "olga", address: str = "203.0.113.7") -> Any:
    return Client(REMOTE_ADDR=address).post(
        reverse("admin:login"), {"username": username, "password": password, "next": "/admin/"}
    )


def test_the_right_password_signs_in(olga):
    assert sign_in(PASSWORD).status_code == HTTPStatus.FOUND


def test_wrong_passwords_pause_sign_in_with_a_page_that_says_what_to_do(olga):
    assert [sign_in(f"wrong-{i}").status_code for i in range(2)] == [HTTPStatus.OK] * 2  # the form again

    locked = sign_in("wrong-3")
    assert locked.status_code == HTTPStatus.TOO_MANY_REQUESTS
    page = locked.content.decode()
    assert "Sign-in paused" in page and "olga" in page and "15 minutes" in page
    assert "python manage.py axes_reset_username olga" in page and "changepassword olga" in page
    assert locked["Retry-After"] == str(15 * 60)
    assert_page_runs_under_its_policy(locked)

    # The right password waits too: a guesser cannot tell it apart.
    assert sign_in(PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS


def test_the_pause_is_per_name_and_address(olga):
    User.objects.create_superuser("ivan", "ivan@example.com", "ivan-pass-123")
    for i in range(3):
        sign_in(f"wrong-{i}")
    assert sign_in(PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS
    # From elsewhere the real operator still signs in, and another name from the same address is not paused.
    assert sign_in(PASSWORD, address="198.51.100.9").status_code == HTTPStatus.FOUND
    assert sign_in("ivan-pass-123", username="ivan").status_code == HTTPStatus.FOUND


def test_an_operator_lifts_the_pause(olga):
    for i in range(3):
        sign_in(f"wrong-{i}")
    assert sign_in(PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS
    call_command("axes_reset_username", "olga")
    assert sign_in(PASSWORD).status_code == HTTPStatus.FOUND


def test_a_success_forgets_earlier_failures(olga):
    for i in range(2):
        sign_in(f"wrong-{i}")
    assert sign_in(PASSWORD).status_code == HTTPStatus.FOUND
    assert [sign_in(f"again-{i}").status_code for i in range(2)] == [HTTPStatus.OK] * 2


def test_the_pause_ends_after_the_cool_off(olga, settings):
    import datetime as dt

    from axes.models import AccessAttempt

    for i in range(3):
        sign_in(f"wrong-{i}")
    assert sign_in(PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - dt.timedelta(minutes=16))
    assert sign_in(PASSWORD).status_code == HTTPStatus.FOUND


def test_tests_force_login_is_untouched(admin_client):
    assert admin_client.get(reverse("admin:index")).status_code == HTTPStatus.OK
