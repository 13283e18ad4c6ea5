from django.contrib import admin
from django.urls import path

from reflection_site.api import mounted_api
from reflection_site.health import healthz
from reflection_site.home import home, home_css

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", mounted_api().urls),
    path("healthz", healthz, name="healthz"),
    path("", home, name="home"),
    path("home.css", home_css, name="home_css"),
]
