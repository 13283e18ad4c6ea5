"""Posting JSON to an operator's webhook (``REPORT_WEBHOOK_URL``): one attempt, a short timeout, a clear error.

Retries belong to the caller (``guardian_app.tasks.run_report_webhook`` retries with backoff), so a slow or
failing webhook never holds up a request, a command or another job. Only the scheme and host of the URL are
ever logged: its path or query may carry a token.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from guardian_app.errors import GuardianError


class WebhookError(GuardianError):
    code = "webhook_failed"
    status = 502


def webhook_target(url: str) -> str:
    """Scheme, host and port of the URL, for logs and the admin."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def post_json(url: str, payload: dict[str, Any], *, timeout: float) -> int:
    """POST ``payload``; the HTTP status. Raises WebhookError for a non-2xx answer, a timeout, no connection."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError("The webhook URL must be an http(s) URL.")
    body = json.dumps(payload, ensure_ascii=False, default=str).encode()
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": "reflection-report/1"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the scheme is checked above.
            return response.status
    except urllib.error.HTTPError as exc:
        raise WebhookError(f"the webhook at {webhook_target(url)} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise WebhookError(f"the webhook at {webhook_target(url)} could not be reached: {exc}") from exc
