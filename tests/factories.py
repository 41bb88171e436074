from __future__ import annotations

import factory
from django.contrib.auth.models import User

from core.models import Account, Agent, Team
from core.services.accounts import account_setup


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.com")
    password = factory.django.Password("correct horse battery staple")


class AccountFactory(factory.django.DjangoModelFactory[Account]):
    class Meta:
        model = Account
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Account {n}")
    slug = factory.Sequence(lambda n: f"account-{n}")

    @factory.post_generation
    def set_up(account: Account, create: bool, extracted: object, **kwargs: object) -> None:
        """What account_create makes for every new account (the default pool, ...)."""
        if create:
            account_setup(account_id=account.pk)


class TeamFactory(factory.django.DjangoModelFactory[Team]):
    class Meta:
        model = Team

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"team-{n}")


class AgentFactory(factory.django.DjangoModelFactory[Agent]):
    class Meta:
        model = Agent

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    description = "A test agent."
