"""No admin URL tells a staff user which ids exist where they may not look. Every object URL of
every registered admin (change, delete, history, a user's password form, a page's rename, ...)
answers an id that exists but is out of the user's reach exactly as it answers an id that does
not exist. The history pages of users and groups used to answer 403 for an existing id and 302
(a redirect with "doesn't exist") for a missing one."""

from __future__ import annotations

import re
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from core.actors import INSTALLATION_OPERATORS_GROUP
from core.models import EmbeddingGeneration, JobRun
from tests.factories import UserFactory
from tests.support.world import Side, build_side

pytestmark = pytest.mark.django_db

MISSING_ID = 987654321
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')


def _installation_objects(foreign: Side) -> dict[str, models.Model]:
    """An object of each model no account owns (or the foreign side's user)."""
    interval = IntervalSchedule.objects.create(every=10, period=IntervalSchedule.SECONDS)
    access = {"user_agent": "probe", "ip_address": "192.0.2.1", "username": "probe"}
    access |= {"http_accept": "*/*", "path_info": "/admin/login/"}
    return {
        "auth.user": foreign.users["owner"],
        "auth.group": Group.objects.create(name="BRAVOQX readers"),
        "core.jobrun": JobRun.objects.create(job="test.job"),
        "core.embeddinggeneration": EmbeddingGeneration.objects.create(
            role="dropped", provider="openai", model="m", dimensions=8, model_id="openai:m"
        ),
        "django_celery_beat.intervalschedule": interval,
        "django_celery_beat.crontabschedule": CrontabSchedule.objects.create(minute="7"),
        "django_celery_beat.solarschedule": SolarSchedule.objects.create(
            event="sunrise", latitude=10, longitude=10
        ),
        "django_celery_beat.clockedschedule": ClockedSchedule.objects.create(
            clocked_time=timezone.now()
        ),
        "django_celery_beat.periodictask": PeriodicTask.objects.create(
            name="probe", task="core.probe", interval=interval
        ),
        "axes.accessattempt": AccessAttempt.objects.create(
            **access, get_data="", post_data="", failures_since_start=1
        ),
        "axes.accesslog": AccessLog.objects.create(**access),
        "axes.accessfailurelog": AccessFailureLog.objects.create(**access),
    }


def _object_urls(model_admin: admin.ModelAdmin) -> list[tuple[str, dict[str, Any]]]:
    """The admin's named URLs that take an object id, with their other arguments."""
    found = []
    for pattern in model_admin.get_urls():
        if not isinstance(pattern, URLPattern) or not pattern.name:
            continue
        names = set(pattern.pattern.converters)
        if "object_id" in names or "id" in names:
            others = {name: MISSING_ID for name in names - {"object_id", "id"}}
            found.append((pattern.name, others))
    return found


def _url(name: str, others: dict[str, Any], object_id: Any) -> str:
    try:
        return reverse(f"admin:{name}", kwargs={"object_id": object_id, **others})
    except Exception:  # UserAdmin's password form names its argument "id"
        return reverse(f"admin:{name}", kwargs={"id": object_id, **others})


def _page(response: Any) -> tuple[int, str, bytes]:
    return response.status_code, response.get("Location", ""), CSRF.sub(b"", response.content)


def test_object_urls_answer_an_unreachable_id_like_a_missing_one(
    django_capture_on_commit_callbacks: Any,
) -> None:
    own = build_side("ALPHAQX", django_capture_on_commit_callbacks)
    foreign = build_side("BRAVOQX", django_capture_on_commit_callbacks)
    # An owner (every role in its account, none in the other), an installation operator (no
    # account) and a staff user with no rights anywhere; the roles' own rights are walked in
    # test_admin_roles.
    own_users = [own.users["owner"], own.users["reviewer"]]
    operator = UserFactory.create(username="installation-operator", is_staff=True)
    operator.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])
    nobody = UserFactory.create(username="staff-without-accounts", is_staff=True)
    objects = {**foreign.objects, **_installation_objects(foreign)}

    walked: set[str] = set()
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        assert label in objects, f"{label}: give the walk an object of this model"
        existing = objects[label].pk
        for user in [*own_users, operator, nobody]:
            client = Client()
            client.force_login(user)
            for name, others in _object_urls(model_admin):
                there = client.get(_url(name, others, existing))
                if there.status_code == 200:
                    continue  # the user may see this object: no secret to keep
                missing = client.get(_url(name, others, MISSING_ID))
                assert _page(there) == _page(missing), (label, name, user.username)
                if name.endswith(("_change", "_delete", "_history")):
                    posted = client.post(_url(name, others, existing), {"post": "yes"})
                    posted_missing = client.post(_url(name, others, MISSING_ID), {"post": "yes"})
                    assert _page(posted) == _page(posted_missing), (label, name, "POST")
                walked.add(name)
    # The admin's "view on site" shortcut names any object by content type and id.
    client = Client()
    client.force_login(nobody)
    for label, obj in objects.items():
        content_type = ContentType.objects.get_for_model(type(obj)).pk
        there = client.get(reverse("admin:view_on_site", args=[content_type, obj.pk]))
        missing = client.get(reverse("admin:view_on_site", args=[content_type, MISSING_ID]))
        assert _page(there) == _page(missing), (label, "view_on_site")
    # The reported pages are among those walked.
    assert {"auth_user_history", "auth_group_history", "auth_user_password_change"} <= walked
    for label, obj in objects.items():
        assert type(obj).objects.filter(pk=obj.pk).exists(), f"{label} was deleted"


def test_history_of_users_and_groups_for_staff_without_rights() -> None:
    """The probe's case: a staff user who is no superuser, existing and missing ids."""
    client = Client()
    client.force_login(UserFactory.create(is_staff=True))
    group = Group.objects.create(name="readers")
    target = UserFactory.create()
    for model, pk in (("user", target.pk), ("group", group.pk)):
        there = client.get(reverse(f"admin:auth_{model}_history", args=[pk]))
        missing = client.get(reverse(f"admin:auth_{model}_history", args=[MISSING_ID]))
        assert there.status_code == missing.status_code == 403, model


def test_superusers_get_a_plain_404_for_a_missing_user() -> None:
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    for view in ("change", "history", "delete"):
        response = client.get(reverse(f"admin:auth_user_{view}", args=[MISSING_ID]))
        assert response.status_code == 404, view
