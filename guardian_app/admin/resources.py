"""django-import-export resources of the guardian's admin: audits out (CSV/JSON/XLSX), corrections in.

Audits are exported as the list selects them (their facts as recorded: a refused value is already redacted,
guardian_app/write/refusals.py). Corrections are imported the way annotators keep them in a spreadsheet, one row a
correction of an audit; each row goes through ``correct_audit`` (the same checks as the admin form and the
API: status, reason, a pattern RE2 accepts, a memory file), so a bad row is shown as invalid in the dry run
and nothing is saved until the operator confirms. Import only adds corrections, it never edits one.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from import_export import fields, resources, widgets

from guardian_app.models import BehaviorCorrection, WriteGuardianAudit


class WriteGuardianAuditResource(resources.ModelResource):
    class Meta:
        model = WriteGuardianAudit
        fields = (
            "id",
            "created_at",
            "session",
            "decision",
            "source",
            "requested_by",
            "retry_of",
            "target_file",
            "candidate_fact",
            "status",
            "reason",
            "held_for_review",
            "lines_added",
            "lines_removed",
            "lines_modified",
            "llm_model",
            "llm_latency_ms",
        )
        export_order = fields


class BehaviorCorrectionResource(resources.ModelResource):
    """Columns: audit (its id), corrected_status (written/refused), correction_reason, and optionally
    corrected_candidate_fact, corrected_target_file, apply_to_future, correction_pattern, corrected_by (default:
    the importing user)."""

    audit = fields.Field(
        attribute="audit", column_name="audit", widget=widgets.ForeignKeyWidget(WriteGuardianAudit, "id")
    )

    class Meta:
        model = BehaviorCorrection
        fields = (
            "id", "audit", "corrected_status", "corrected_candidate_fact", "corrected_target_file",
            "correction_reason", "apply_to_future", "correction_pattern", "corrected_by", "corrected_at",
        )  # fmt: skip
        export_order = fields
        import_id_fields = ()  # no id column: every row is a new correction
        force_init_instance = True
        skip_unchanged = False

    IMPORTED = tuple(name for name in Meta.fields if name not in ("id", "corrected_at"))  # set by the import

    def __init__(self, *args: Any, corrected_by: str = "import", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.corrected_by = corrected_by

    def get_import_fields(self) -> list[fields.Field]:
        return [f for f in super().get_import_fields() if f.column_name in self.IMPORTED]

    def validate_instance(self, instance: Any, import_validation_errors: Any = None, validate_unique: bool = True):
        """``correct_audit`` is the validation (and fills the original_* fields): nothing to check before it."""

    def do_instance_save(self, instance: BehaviorCorrection, is_create: bool) -> None:
        from guardian_app.errors import GuardianError
        from guardian_app.write.corrections import correct_audit

        if instance.audit_id is None:
            raise ValidationError({"audit": "Give the id of the audit this corrects."})
        try:
            saved = correct_audit(
                instance.audit,
                status=instance.corrected_status,
                reason=instance.correction_reason,
                corrected_by=(instance.corrected_by or "").strip() or self.corrected_by,
                candidate_fact=instance.corrected_candidate_fact,
                target_file=instance.corrected_target_file,
                apply_to_future=bool(instance.apply_to_future),
                pattern=instance.correction_pattern,
            )
        except GuardianError as exc:
            raise ValidationError(exc.message) from exc
        instance.pk = saved.pk
        instance.__dict__.update({k: v for k, v in saved.__dict__.items() if not k.startswith("_")})
