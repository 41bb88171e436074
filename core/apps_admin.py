"""Django's admin app with Engram's site (``core.admin_base.site``): the home page by role and
the model list grouped by task. ``INSTALLED_APPS`` names it in place of
``django.contrib.admin``."""

from django.contrib.admin.apps import AdminConfig


class EngramAdminConfig(AdminConfig):
    default_site = "core.admin_base.site.EngramAdminSite"
