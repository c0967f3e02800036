"""Typed errors: the server's status, errno name and reason."""
from __future__ import annotations

import json
from typing import Optional


class PaddockError(Exception):
    """A request the server refused, or one that could not be made.

    ``status`` is the HTTP status (0 when no answer came), ``errno`` the
    errno name the server gave (``"EINVAL"``...), ``message`` the server's
    own text (the same as the object's ``error`` file)."""

    def __init__(self, message: str, status: int = 0, errno: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.errno = errno
        #: seconds to wait before trying again (429, 503), when the server said
        self.retry_after: Optional[float] = None

    def __str__(self) -> str:
        return self.message


class AuthError(PaddockError):
    """401: no token, a wrong, revoked or expired one."""


class InvalidError(PaddockError):
    """400: the server refused a value (a bad type, name, path...)."""


class NotFoundError(PaddockError):
    """404: no such box, file, job, snapshot..."""


class ConflictError(PaddockError):
    """409: a name taken, or the wrong state for that action."""


class CommandTimeoutError(PaddockError, TimeoutError):
    """A command did not end within its timeout (it was killed)."""


class UnsafeArchiveError(PaddockError):
    """A downloaded archive held entries that would land outside the
    destination (absolute names, '..', links out, devices): they were
    skipped, the rest was extracted."""


_BY_STATUS = {401: AuthError, 400: InvalidError, 404: NotFoundError, 409: ConflictError}


def error_from_response(status: int, body: bytes) -> PaddockError:
    """The error a non-2xx answer stands for, with the server's text."""
    message = ""
    errno_name = None
    try:
        obj = json.loads(body.decode("utf-8", "replace"))
        if isinstance(obj, dict):
            message = str(obj.get("error") or "")
            errno_name = obj.get("errno")
    except ValueError:
        pass
    if not message:
        text = body.decode("utf-8", "replace").strip().splitlines()
        message = text[0][:400] if text else "HTTP status %d" % status
    cls = _BY_STATUS.get(status, PaddockError)
    return cls(message, status=status, errno=errno_name)
