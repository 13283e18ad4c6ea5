"""The recall index in the admin: the chunks (read-only), and a search page over them with file and line."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from guardian_app.models import MemoryChunk, RecallKind
from guardian_app.recall.index import index_status, index_workspace
from guardian_app.recall.query import InvalidRecallQuery
from guardian_app.recall.recall import MAX_K, MODES, recall
from reflection_site.admin import ReadOnlyAdmin


@admin.register(MemoryChunk)
class MemoryChunkAdmin(ReadOnlyAdmin):
    list_display = ["source_link", "kind", "heading", "short_content", "hits", "timestamp"]
    list_filter = ["kind", "source"]
    search_fields = ["=path", "content"]
    ordering = ["path", "start_line"]
    show_full_result_count = False
    change_list_template = "admin/guardian_app/memorychunk/change_list.html"
    fields = [
        "path",
        "start_line",
        "end_line",
        "heading",
        "kind",
        "entities",
        "confidence",
        "content",
        "text",
        "timestamp",
        "hits",
        "last_hit_at",
        "model",
        "hash",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryChunk]:
        return super().get_queryset(request).defer("embedding", "search_text")

    @admin.display(description="source", ordering="path")
    def source_link(self, obj: MemoryChunk) -> str:
        return obj.source_ref

    @admin.display(description="content")
    def short_content(self, obj: MemoryChunk) -> str:
        text = " ".join(obj.content.split())
        return text if len(text) <= 120 else text[:119] + "…"

    def get_urls(self) -> list[URLPattern]:
        return [
            path("recall/", self.admin_site.admin_view(self.recall_view), name="guardian_app_memorychunk_recall"),
            *super().get_urls(),
        ]

    def recall_view(self, request: HttpRequest) -> HttpResponse:
        """A search box over the index: hits with their score, file and lines; POST re-indexes."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        url = reverse("admin:guardian_app_memorychunk_recall")
        if request.method == "POST":
            report = index_workspace()
            messages.success(request, f"Indexed {report.summary()}")
            query = request.POST.get("q", "")
            return HttpResponseRedirect(f"{url}?{urlencode({'q': query})}" if query else url)
        params = {
            name: request.GET.get(name, "").strip()
            for name in ("q", "k", "since", "until", "kind", "entity", "file", "mode")
        }
        answer = None
        error = None
        if params["q"]:
            try:
                k = int(params["k"]) if params["k"] else None
                answer = recall(
                    params["q"],
                    k=k,
                    since=params["since"] or None,
                    until=params["until"] or None,
                    kind=params["kind"] or None,
                    entity=params["entity"] or None,
                    file=params["file"] or None,
                    mode=params["mode"] or "auto",
                )
            except ValueError:
                error = f"k must be a number from 1 to {MAX_K}."
            except InvalidRecallQuery as exc:
                error = exc.message
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Recall",
            "params": params,
            "answer": answer,
            "error": error,
            "status": index_status(),
            "kinds": RecallKind.values,
            "modes": MODES,
            "max_k": MAX_K,
            "results": [
                {
                    "result": result,
                    "change_url": reverse("admin:guardian_app_memorychunk_change", args=[result.id]),
                    "parts": format_html(
                        "keyword {} · vector {} · decay {}",
                        f"{result.keyword:.3f}",
                        "-" if result.vector is None else f"{result.vector:.3f}",
                        f"{result.decay:.3f}",
                    ),
                }
                for result in (answer.results if answer else [])
            ],
        }
        return TemplateResponse(request, "admin/guardian_app/memorychunk/recall.html", context)
