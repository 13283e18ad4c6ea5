"""The dataset in the admin: samples with their charts, import-export and the review queue; exports; evaluation
runs. Importing registers each."""

from dataset_app.admin import evaluations, exports, samples
from dataset_app.admin.samples import DASHBOARD

__all__ = ["DASHBOARD", "evaluations", "exports", "samples"]
