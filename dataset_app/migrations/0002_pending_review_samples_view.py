"""The seed's ``pending_review_samples`` view: samples needing review with their turn, decision and audit.

Plain SQL that SQLite and PostgreSQL both accept. PostgreSQL sorts NULLs first in DESC order, so the
view says NULLS LAST (SQLite >= 3.30 understands it) to put unscored samples last on both.
A later migration that alters ``dataset_samples`` must drop the view first and create it again after:
PostgreSQL fixes the columns of ``s.*`` when the view is created.
"""

from django.db import migrations

CREATE_VIEW = """
CREATE VIEW pending_review_samples AS
SELECT
    s.*,
    t.user_message_content,
    t.agent_message_content,
    d.decision AS memory_gate_decision,
    a.status AS write_guardian_status
FROM dataset_samples s
LEFT JOIN conversation_turns t ON s.turn_id = t.id
LEFT JOIN memory_gate_decisions d ON s.decision_id = d.id
LEFT JOIN write_guardian_audit a ON s.audit_id = a.id
WHERE s.annotation_status = 'needs_review'
ORDER BY s.quality_score DESC NULLS LAST, s.id
"""

DROP_VIEW = "DROP VIEW IF EXISTS pending_review_samples"


class Migration(migrations.Migration):
    dependencies = [("dataset_app", "0001_initial")]

    operations = [migrations.RunSQL(sql=CREATE_VIEW, reverse_sql=DROP_VIEW)]
