"""What the embedded servers share: private directories and files (0700 / 0600), generated
secrets, a file lock, whether a process is alive, and the error they raise."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

_SUN_PATH_MAX = 100
PRIVATE_DIR_MODE = 0o700
SECRET_FILE_MODE = 0o600


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started, attached to or stopped."""


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise start/stop between processes (xdist workers, launcher, manage.py)."""
    make_private_dir(path.parent)
    with path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) closed to other users; never loosen an existing one."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable and writable by its owner only (0600) from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fd, SECRET_FILE_MODE)  # the file may have existed with a looser mode
        fh.write(text)


def read_or_create_secret(path: Path, *, nbytes: int = 32) -> str:
    """The secret kept in ``path``, generated on first use into a 0600 file.

    Processes race here (xdist workers import settings at once): the secret is written to a
    private temporary file and linked into place, so a reader never sees a half-written file and
    exactly one generated value wins.
    """
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        make_private_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        write_private_file(tmp, secrets.token_urlsafe(nbytes) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process generated it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
        value = path.read_text().strip()
    if not value:
        raise EmbeddedServiceError(f"{path} is empty; restore it or remove the data directory")
    if stat.S_IMODE(path.stat().st_mode) != SECRET_FILE_MODE:
        with contextlib.suppress(PermissionError):
            path.chmod(SECRET_FILE_MODE)
    return value


def _pid_alive(pid: int) -> bool:
    """True for a running process; a zombie (killed, not yet reaped by its parent) is dead."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill(pid: int) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
