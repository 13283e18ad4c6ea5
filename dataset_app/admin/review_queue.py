"""The review queue in the admin: one sample at a time, approve, reject or send back, then the next one."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from dataset_app.annotation import (
    ANNOTATION_CHOICES,
    annotate_sample,
    next_in_queue,
    previous_in_queue,
    queue_position,
    review_queue,
)
from dataset_app.errors import DatasetError
from dataset_app.models import AnnotationStatus, DatasetSample, SampleType
from dataset_app.review import present
from reflection_site.privacy import redact

RAW_PERM = "dataset_app.view_raw_datasetsample"

ACTION_STATUS = {
    "approve": AnnotationStatus.APPROVED,
    "reject": AnnotationStatus.REJECTED,
    "needs_review": AnnotationStatus.NEEDS_REVIEW,
}


class ReviewQueueMixin:
    """The review pages of ``DatasetSampleAdmin``: ``review/`` opens the first sample of the queue,
    ``review/<id>/`` shows one (raw text only to those allowed and asking) and takes the annotation."""

    def get_urls(self) -> list[Any]:
        review = [
            path("review/", self.admin_site.admin_view(self.review_start), name="dataset_app_datasetsample_review"),
            path(
                "review/<str:sample_id>/",
                self.admin_site.admin_view(self.review_sample),
                name="dataset_app_datasetsample_review_sample",
            ),
        ]
        return review + super().get_urls()

    def review_start(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        first = next_in_queue()
        if first is not None:
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[first.id]))
        context = {**self.admin_site.each_context(request), "title": "Review queue", "opts": self.model._meta}
        return TemplateResponse(request, "admin/dataset_app/datasetsample/review_done.html", context)

    def review_sample(self, request: HttpRequest, sample_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        sample = get_object_or_404(DatasetSample.objects.select_related("audit"), id=sample_id)
        if request.method == "POST":
            return self._review_post(request, sample)
        can_raw = request.user.has_perm(RAW_PERM)
        raw = bool(request.GET.get("raw")) and can_raw
        following = next_in_queue(sample, exclude_id=sample.id)
        preceding = previous_in_queue(sample)
        url = reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id])
        context = {
            **self.admin_site.each_context(request),
            "title": f"Review {SampleType(sample.sample_type).label}",
            "opts": self.model._meta,
            "sample": sample,
            "view": present(sample, raw=raw),
            "raw": raw,
            "can_raw": can_raw,
            "can_annotate": self.has_annotate_permission(request),
            "in_queue": sample.annotation_status == AnnotationStatus.NEEDS_REVIEW,
            "position": queue_position(sample),
            "queue_count": review_queue().count(),
            "next_url": reverse("admin:dataset_app_datasetsample_review_sample", args=[following.id])
            if following
            else "",
            "prev_url": reverse("admin:dataset_app_datasetsample_review_sample", args=[preceding.id])
            if preceding
            else "",
            "raw_url": f"{url}?raw=1",
            "redacted_url": url,
            "change_url": reverse("admin:dataset_app_datasetsample_change", args=[sample.id]),
            "notes": (sample.visible_notes() if not raw else sample.annotation_notes) or "",
            "actions": [("approve", "Approve", "a"), ("reject", "Reject", "r"), ("needs_review", "Needs review", "n")],
        }
        return TemplateResponse(request, "admin/dataset_app/datasetsample/review.html", context)

    def _review_post(self, request: HttpRequest, sample: DatasetSample) -> HttpResponse:
        if not self.has_annotate_permission(request):
            raise PermissionDenied
        status = ACTION_STATUS.get(request.POST.get("action", ""))
        if status is None or status not in ANNOTATION_CHOICES:
            messages.error(request, "Choose approve, reject or needs review.")
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id]))
        notes = request.POST.get("notes")
        if notes is not None and not request.user.has_perm(RAW_PERM) and notes == redact(sample.annotation_notes or ""):
            notes = None  # The redacted notes came back unchanged: keep the stored ones.
        try:
            annotate_sample(sample, status=status, annotated_by=request.user.get_username(), notes=notes)
        except DatasetError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id]))
        messages.success(request, f"{AnnotationStatus(status).label.capitalize()}: {sample.id}")
        following = next_in_queue(sample, exclude_id=sample.id)
        if following is None:
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review"))
        return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[following.id]))
