from django.urls import path

from core import apis

urlpatterns = [
    path("me", apis.MeApi.as_view(), name="me"),
]
