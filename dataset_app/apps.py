from django.apps import AppConfig


class DatasetAppConfig(AppConfig):
    name = "dataset_app"
    verbose_name = "Dataset"
