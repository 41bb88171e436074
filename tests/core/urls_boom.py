"""A URLconf with a view that fails unexpectedly, to test the 500 path."""

from django.urls import include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class BoomApi(APIView):
    def get(self, request: Request) -> Response:
        raise RuntimeError("secret internal detail: password=hunter2")


urlpatterns = [
    path("api/v1/boom", BoomApi.as_view()),
    path("", include("config.urls")),
]
