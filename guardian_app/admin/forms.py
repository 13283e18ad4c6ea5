"""The console's forms: rollback (one audit or several), retry, a correction from an audit's page, and the
correction admin's own form."""

from __future__ import annotations

from django import forms

from guardian_app.admin.rendering import file_choices, file_choices_or_same
from guardian_app.models import (
    BehaviorCorrection,
)


class RollbackForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)
    force = forms.BooleanField(required=False, label="Force: overwrite the later changes shown above")
    seen_hash = forms.CharField(required=False, widget=forms.HiddenInput)


class BulkRollbackForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)


class RetryForm(forms.Form):
    candidate_fact = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=10_000)
    target_file = forms.ChoiceField(choices=file_choices)


class CorrectionForm(forms.Form):
    status = forms.ChoiceField(
        choices=[("refused", "refused: should not have been written"), ("written", "written: should have been written")]
    )
    candidate_fact = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), help_text="The right fact, if it differs."
    )
    target_file = forms.ChoiceField(required=False, choices=file_choices_or_same)
    about = forms.CharField(
        required=False,
        max_length=255,
        label="Whose fact",
        help_text="Re-attribute it: a person's name (MEMORY.md, the person named) or 'owner' (USER.md).",
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)
    apply_to_future = forms.BooleanField(
        required=False, help_text="Steer the gate and guardian with the pattern from now on."
    )
    correction_pattern = forms.CharField(
        required=False,
        max_length=500,
        help_text="Words that must all occur in a later fact, or /regex/. Empty: derived from the fact.",
    )


class BehaviorCorrectionForm(forms.ModelForm):
    corrected_status = forms.ChoiceField(choices=[("refused", "refused"), ("written", "written")])

    class Meta:
        model = BehaviorCorrection
        fields = [
            "audit", "corrected_status", "corrected_candidate_fact", "corrected_target_file", "correction_reason",
            "apply_to_future", "correction_pattern", "active",
        ]  # fmt: skip
