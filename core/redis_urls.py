"""The Redis URLs Engram accepts (``REDIS_URL``, ``CELERY_BROKER_URL``), Sentinel's included.

A plain server is ``redis://``, ``rediss://`` (TLS) or ``unix://``, as redis-py reads them. A
Sentinel-managed master is one URL naming the sentinels and the master's name::

    sentinel://[[username]:password@]host[:port][,host[:port]...][/db]?master_name=NAME
        [&sentinel_password=...&sentinel_username=...]

The credentials before ``@`` are the master's; ``sentinel_password`` (and ``sentinel_username``)
are the sentinels' own when they require one. A port left out is 26379. Kombu's own spelling,
``sentinel://h1:26379;sentinel://h2:26379``, is read the same way. Redis Cluster is refused:
Celery's Redis transport (kombu) cannot use one, and Engram's Lua scripts and MULTI pipelines
touch several keys at once (docs/operations.md, "Redis Sentinel").

Pure Python on purpose: ``config.env`` validates with it before Django starts, and
``core.redis_client`` builds clients from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote

DEFAULT_SENTINEL_PORT = 26379
# How long a client waits on a sentinel (connect, answer): a dead one costs a moment, then the next
# is asked.
SENTINEL_TIMEOUT_SECONDS = 2.0
MAX_SENTINELS = 16
PLAIN_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster", "cluster", "redis-cluster")
_MASTER_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_SENTINEL_OPTIONS = frozenset({"master_name", "sentinel_password", "sentinel_username"})


class RedisUrlError(ValueError):
    """A Redis URL Engram cannot use; the message says why and what to write instead (after
    the setting's name, when one is given)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}" if name else message)


@dataclass(frozen=True)
class SentinelUrl:
    """A ``sentinel://`` URL, read: where the sentinels are and which master to ask them for."""

    sentinels: tuple[tuple[str, int], ...]
    master_name: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None

    def broker_url(self) -> str:
        """Kombu's spelling: one ``sentinel://`` URL per sentinel, ``;``-separated, each with
        the master's credentials and database (kombu reads them from the first)."""
        credentials = ""
        if self.password is not None or self.username is not None:
            credentials = f"{_quote(self.username or '')}:{_quote(self.password or '')}@"
        return ";".join(
            f"sentinel://{credentials}{_host(host)}:{port}/{self.db}"
            for host, port in self.sentinels
        )

    def sentinel_kwargs(self) -> dict[str, object]:
        """How to connect to the sentinels themselves: short timeouts, their own credentials."""
        kwargs: dict[str, object] = {
            "socket_timeout": SENTINEL_TIMEOUT_SECONDS,
            "socket_connect_timeout": SENTINEL_TIMEOUT_SECONDS,
        }
        if self.sentinel_password is not None:
            kwargs["password"] = self.sentinel_password
        if self.sentinel_username:
            kwargs["username"] = self.sentinel_username
        return kwargs

    def broker_transport_options(self) -> dict[str, object]:
        """What kombu's sentinel transport needs beside the URL: ``master_name`` and how to
        reach the sentinels."""
        return {"master_name": self.master_name, "sentinel_kwargs": self.sentinel_kwargs()}


def _quote(value: str) -> str:
    return quote(value, safe="")


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def is_sentinel(url: str) -> bool:
    return url.strip().lower().startswith("sentinel://")


def redis_url_check(url: str, *, name: str = "REDIS_URL") -> str:
    """``url`` as given when Engram can use it; else ``RedisUrlError`` naming ``name``."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in CLUSTER_SCHEMES:
        raise RedisUrlError(
            name,
            "Redis Cluster is not supported (Celery's Redis transport cannot use a "
            "cluster, and Engram runs multi-key scripts); use one server, or Sentinel: "
            "sentinel://host:26379[,host:26379]/0?master_name=NAME",
        )
    if scheme == "sentinel":
        sentinel_url_parse(url, name=name)
    elif scheme not in PLAIN_SCHEMES:
        raise RedisUrlError(
            name,
            f"unsupported scheme {scheme or '(none)'!r}; use redis://, rediss://, "
            "unix:// or sentinel://",
        )
    return url


def sentinel_url_parse(url: str, *, name: str = "REDIS_URL") -> SentinelUrl:
    """Read a ``sentinel://`` URL (the module's docstring gives its form)."""
    if not is_sentinel(url):
        raise RedisUrlError(name, "a Sentinel URL starts with sentinel://")
    # Kombu's spelling repeats the scheme (and the credentials, the database) for each sentinel:
    # read it as a comma list, with the first URL's credentials and the last one's database.
    body = re.sub(
        r"(?:/\d*)?;\s*sentinel://(?:[^@/,;?]*@)?",
        ",",
        url.strip()[len("sentinel://") :],
        flags=re.I,
    )
    if "#" in body:
        raise RedisUrlError(name, "a Sentinel URL has no #fragment")
    body, _, query_text = body.partition("?")
    # The credentials may hold a "/" (percent-encoded or not): the path starts after the hosts.
    credentials_end = body.rfind("@") + 1
    netloc, slash, path = body[credentials_end:].partition("/")
    netloc = body[:credentials_end] + netloc
    username = password = None
    if "@" in netloc:
        credentials, netloc = netloc.rsplit("@", 1)
        user, colon, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    sentinels = tuple(_sentinel_address(item, name) for item in netloc.split(","))
    if len(sentinels) > MAX_SENTINELS:
        raise RedisUrlError(name, f"at most {MAX_SENTINELS} sentinels")
    db = _database(slash + path, name)
    query = parse_qsl(query_text, keep_blank_values=True)
    options: dict[str, str] = {}
    for key, value in query:
        if key not in _SENTINEL_OPTIONS:
            allowed = ", ".join(sorted(_SENTINEL_OPTIONS))
            raise RedisUrlError(name, f"unknown Sentinel option {key!r} (known: {allowed})")
        if key in options:
            raise RedisUrlError(name, f"{key} is given twice")
        options[key] = value
    master_name = options.get("master_name", "")
    if not master_name:
        raise RedisUrlError(
            name, "a Sentinel URL needs ?master_name=NAME (the name the sentinels monitor)"
        )
    if not _MASTER_NAME.match(master_name):
        raise RedisUrlError(name, "master_name must be 1-100 letters, digits, '.', '_', '-'")
    return SentinelUrl(
        sentinels=sentinels,
        master_name=master_name,
        db=db,
        username=username,
        password=password,
        sentinel_username=options.get("sentinel_username") or None,
        sentinel_password=options.get("sentinel_password"),
    )


def _sentinel_address(item: str, name: str) -> tuple[str, int]:
    item = item.strip()
    if not item:
        raise RedisUrlError(name, "a Sentinel URL names at least one host, none empty")
    if item.startswith("["):
        host, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise RedisUrlError(name, f"bad IPv6 sentinel address {item!r}")
        port_text = rest[1:]
    else:
        host, _, port_text = item.partition(":")
    if not host or not re.match(r"^[A-Za-z0-9.:_-]{1,253}$", host):
        raise RedisUrlError(name, f"bad sentinel host {host!r}")
    if not port_text:
        return host, DEFAULT_SENTINEL_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise RedisUrlError(name, f"bad sentinel port {port_text!r} (1-65535)")
    return host, int(port_text)


def _database(path: str, name: str) -> int:
    db = path.strip("/")
    if not db:
        return 0
    if not db.isdigit() or int(db) > 9999:
        raise RedisUrlError(name, f"the database after the hosts is a number (/0), not {db!r}")
    return int(db)
