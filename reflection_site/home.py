"""The landing page at ``/`` (the admin's "View site"): where the admin, the API docs and the health check are."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

STYLE = (
    "body{font:16px/1.5 system-ui,-apple-system,'Segoe UI','Noto Sans CJK SC',sans-serif;margin:0;color:#1f2328}"
    "main{max-width:42rem;margin:4rem auto;padding:0 1.5rem}h1{margin-bottom:.25rem}"
    "a{color:#0969da}li{margin:.5rem 0}code{background:#f6f8fa;padding:0 .25rem;border-radius:4px}"
)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "reflection_site/home.html")


@require_safe
@cache_control(max_age=3600, public=True)
def home_css(request: HttpRequest) -> HttpResponse:
    """The page's style as a file of our own origin (the Content-Security-Policy allows no inline style)."""
    return HttpResponse(STYLE, content_type="text/css; charset=utf-8")
