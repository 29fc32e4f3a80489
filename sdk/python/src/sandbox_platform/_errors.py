"""Typed exceptions.

Every exception the client raises is a :class:`SandboxError` with a stable ``code``. A non-2xx
answer of the gateway is an :class:`APIError` whose ``code`` is the problem's slug (see the
gateway's problem table), raised as the subclass of its family, so callers can catch a family
(``except NotFoundError``) or compare ``err.code == "session-not-found"``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional


class SandboxError(Exception):
    """Base of every exception of this package."""

    code: str = "error"

    def __init__(self, message: str, *, code: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message


class APIConnectionError(SandboxError):
    """The gateway could not be reached (refused, reset, DNS failure)."""

    code = "connection-failed"


class APITimeoutError(SandboxError):
    """The call did not finish within the client's deadline."""

    code = "timeout"


class ProtocolError(SandboxError):
    """The gateway's answer broke the documented protocol (bad JSON, oversized, truncated stream)."""

    code = "protocol-error"


class CommandError(SandboxError):
    """Raised by :meth:`ExecResult.check_returncode` for a command that exited non-zero."""

    code = "command-failed"

    def __init__(self, command: str, exit_code: int, stderr: str) -> None:
        super().__init__(f"command exited with {exit_code}: {command[:80]}")
        self.command = command
        self.exit_code = exit_code
        self.stderr = stderr


class APIError(SandboxError):
    """A non-2xx answer of the gateway, carrying its RFC 9457 problem."""

    status: int
    """HTTP status."""
    problem: dict[str, Any]
    """The problem body as sent (``type``, ``title``, ``status``, ``detail``, extensions)."""
    title: str
    detail: str
    """The problem's detail, else its title: one human sentence."""
    reason: Optional[str]
    """The problem's ``reason`` member (e.g. ``PodPending`` on 503, ``Deleted`` on 410)."""
    retry_after: Optional[float]
    """Seconds from the Retry-After header, when sent."""

    def __init__(self, status: int, problem: Mapping[str, Any], retry_after: Optional[float]) -> None:
        self.status = status
        self.problem = dict(problem)
        self.title = str(problem.get("title", ""))
        detail = problem.get("detail")
        self.detail = str(detail) if detail is not None else self.title
        reason = problem.get("reason")
        self.reason = reason if isinstance(reason, str) else None
        self.retry_after = retry_after
        super().__init__(f"{self.detail} ({slug_of(problem.get('type'), status)}, HTTP {status})",
                         code=slug_of(problem.get("type"), status))


class InvalidRequestError(APIError):
    """400 invalid-request, signal-not-allowed, 405, 413 payload-too-large, 415 unsupported-media-type."""


class AuthenticationError(APIError):
    """401 unauthorized: missing or wrong API key."""


class PermissionDeniedError(APIError):
    """403 forbidden (namespace not allowed for the key), path-forbidden, quota-exceeded."""


class NotFoundError(APIError):
    """404 session-not-found, process-not-found, or not-found (no such file or route)."""


class ConflictError(APIError):
    """409 conflict (the session exists with another spec, or is being deleted), process-running,
    too-many-processes."""


class SessionGoneError(APIError):
    """410 session-gone: deleted or collected (``reason``: Terminating, Deleted, IdleTimeout, ...)."""


class PolicyViolationError(APIError):
    """422 policy-violation: image, timeout or transport not allowed by the gateway."""


class RateLimitError(APIError):
    """429 rate-limited, concurrency-limited: too many calls of this API key; retry after ``retry_after``."""


class NotSupportedError(APIError):
    """501 not-supported by the session's transport."""


class UnavailableError(APIError):
    """503 session-not-ready, shell-unavailable, gateway-not-ready, kubernetes-unavailable, overloaded: retry after ``retry_after``."""


class UpstreamError(APIError):
    """502 upstream-error, agent-answer-too-large, agent-protocol-error; 504 upstream-timeout."""


class InternalServerError(APIError):
    """500 internal, or another 5xx."""


_BY_CODE: dict[str, type[APIError]] = {
    "invalid-request": InvalidRequestError,
    "method-not-allowed": InvalidRequestError,
    "payload-too-large": InvalidRequestError,
    "unsupported-media-type": InvalidRequestError,
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "path-forbidden": PermissionDeniedError,
    "quota-exceeded": PermissionDeniedError,
    "rate-limited": RateLimitError,
    "concurrency-limited": RateLimitError,
    "session-not-found": NotFoundError,
    "not-found": NotFoundError,
    "conflict": ConflictError,
    "process-not-found": NotFoundError,
    "process-running": ConflictError,
    "too-many-processes": ConflictError,
    "signal-not-allowed": InvalidRequestError,
    "session-gone": SessionGoneError,
    "policy-violation": PolicyViolationError,
    "internal": InternalServerError,
    "not-supported": NotSupportedError,
    "upstream-error": UpstreamError,
    "agent-answer-too-large": UpstreamError,
    "agent-protocol-error": UpstreamError,
    "upstream-timeout": UpstreamError,
    "session-not-ready": UnavailableError,
    "shell-unavailable": UnavailableError,
    "gateway-not-ready": UnavailableError,
    "kubernetes-unavailable": UnavailableError,
    "overloaded": UnavailableError,
}

_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: InvalidRequestError,
    409: ConflictError,
    410: SessionGoneError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    422: PolicyViolationError,
    429: RateLimitError,
    501: NotSupportedError,
    502: UpstreamError,
    503: UnavailableError,
    504: UpstreamError,
}


def slug_of(problem_type: object, status: int) -> str:
    """The last segment of a problem type URI; ``http-<status>`` without one."""
    if not isinstance(problem_type, str) or problem_type in ("", "about:blank"):
        return f"http-{status}"
    return problem_type.rsplit("/", 1)[-1] or f"http-{status}"


def error_from_problem(status: int, problem: Mapping[str, Any], retry_after: Optional[float]) -> APIError:
    """The exception of a problem answer, as the class of its family."""
    code = slug_of(problem.get("type"), status)
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIError)
    return cls(status, problem, retry_after)
