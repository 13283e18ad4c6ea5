from django.contrib import admin
from django.urls import path

from reflection_site.api import api
from reflection_site.health import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("healthz", healthz, name="healthz"),
]
