"""The transport-independent half of both clients (no I/O here): settings, request building
(the calls themselves: ``_calls``), problem+json decoding, the retry rule, bounded bodies and the
NDJSON stream decoders.

Retry rule: only idempotent calls are retried (reads, create-or-get *by name*, delete, upload: sent
twice they have the effect of once), only when the gateway could not be reached or answered 429 or
503 with Retry-After, at most ``max_retries`` times. An exec is never retried: a command must never
run twice.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Generic, Iterator, Mapping, Optional, TypeVar, Union
from urllib.parse import quote

import httpx

from ._errors import APIConnectionError, APIError, APITimeoutError, ProtocolError, error_from_problem
from ._models import ExitStatus, OutputChunk, ProcessEvent, ProcessExitEvent, Session, decode_output, process_event
from ._version import __version__

#: Largest JSON or file answer read into memory (the gateway's file limit is 16 MiB by default).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: Longest NDJSON line of an exec stream: a 1 MiB output chunk as base64 plus framing.
MAX_STREAM_LINE_BYTES = 4 * 1024 * 1024
#: Most of an error answer's body read for its problem+json (the rest is dropped).
ERROR_BODY_BYTES = 64 * 1024
#: The gateway's own maxima, for the client deadline of an exec when the caller sets none.
_MAX_EXEC_TIMEOUT = 300
_MAX_WAIT = 120
_EXEC_MARGIN = 30
_MAX_RETRY_DELAY = 10.0

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

Body = Union[bytes, bytearray, memoryview, str]
E = TypeVar("E")


@dataclass(frozen=True)
class Settings:
    base_url: str
    api_key: str
    namespace: Optional[str]
    timeout: float
    max_retries: int


def resolve_settings(
    base_url: Optional[str],
    api_key: Optional[str],
    namespace: Optional[str],
    timeout: float,
    max_retries: int,
) -> Settings:
    """Arguments, else ``SANDBOX_URL`` / ``SANDBOX_KEY`` / ``SANDBOX_NAMESPACE``; refuses what cannot work."""
    url = base_url or os.environ.get("SANDBOX_URL")
    key = api_key or os.environ.get("SANDBOX_KEY")
    if not url:
        raise ValueError("no gateway URL: pass base_url or set SANDBOX_URL")
    if not re.match(r"^https?://", url, re.IGNORECASE):
        raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
    if not key:
        raise ValueError("no API key: pass api_key or set SANDBOX_KEY")
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    return Settings(
        base_url=url.rstrip("/"),
        api_key=key,
        namespace=namespace or os.environ.get("SANDBOX_NAMESPACE") or None,
        timeout=timeout,
        max_retries=max_retries,
    )


def default_headers(settings: Settings) -> dict[str, str]:
    return {
        "authorization": f"Bearer {settings.api_key}",
        "user-agent": f"sandbox-platform-python/{__version__}",
    }


def http_client_args(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of the clients' ``httpx.Client`` / ``httpx.AsyncClient`` but the transport."""
    return {"base_url": settings.base_url, "headers": default_headers(settings), "timeout": settings.timeout}


def session_path(name: str) -> str:
    return f"/v1/sessions/{quote(name, safe='')}"


def file_path(name: str, path: str) -> str:
    """``/v1/sessions/NAME/files/PATH`` with each path segment encoded.

    ``.`` and ``..`` segments are refused here with the gateway's own answer (403 path-forbidden):
    URL normalization would otherwise resolve them before sending, calling another route.
    """
    segments = path.split("/")
    if any(s in (".", "..") for s in segments):
        problem = {
            "type": "https://sandbox.dev/problems/path-forbidden",
            "title": "The path leaves the sandbox workspace",
            "status": 403,
            "detail": f'path {path} has a "." or ".." segment',
        }
        raise error_from_problem(403, problem, None)
    return f"{session_path(name)}/files/{'/'.join(quote(s, safe='') for s in segments)}"


def params(settings: Settings, namespace: Optional[str]) -> dict[str, str]:
    ns = namespace or settings.namespace
    return {"namespace": ns} if ns else {}


def create_body(name: Optional[str], **fields: Any) -> dict[str, Any]:
    """POST /v1/sessions body with the wire's field names; None fields are left out."""
    wire = {
        "image": "image",
        "env": "env",
        "idle_timeout": "idleTimeoutSeconds",
        "max_lifetime": "maxLifetimeSeconds",
        "shutdown_policy": "shutdownPolicy",
        "exec_transport": "execTransport",
        "persistent_workspace": "persistentWorkspace",
        "pool": "pool",
    }
    body: dict[str, Any] = {} if name is None else {"name": name}
    for key, value in fields.items():
        if value is not None:
            body[wire[key]] = value
    return body


def exec_body(
    command: str,
    timeout: Optional[int],
    cwd: Optional[str],
    env: Optional[Mapping[str, str]],
    wait: Optional[int],
) -> dict[str, Any]:
    env_copy = None if env is None else dict(env)
    return _command_body(command, timeoutSeconds=timeout, cwd=cwd, env=env_copy, waitSeconds=wait)


def _command_body(command: str, **fields: Any) -> dict[str, Any]:
    """An exec's or a process start's body: the command, then the given wire fields but None ones."""
    return {"command": command, **{key: value for key, value in fields.items() if value is not None}}


def exec_timeout(settings: Settings, timeout: Optional[int], wait: Optional[int]) -> httpx.Timeout:
    """The client deadline of an exec: the command's timeout plus its readiness wait plus a margin."""
    total = (timeout or _MAX_EXEC_TIMEOUT) + (_MAX_WAIT if wait is None else wait) + _EXEC_MARGIN
    return httpx.Timeout(total, connect=min(10.0, settings.timeout))


def resume_body(wait: Optional[int]) -> dict[str, Any]:
    """POST /v1/sessions/{name}/resume body."""
    return {} if wait is None else {"waitSeconds": wait}


def resume_timeout(settings: Settings, wait: Optional[int]) -> httpx.Timeout:
    """The client deadline of a resume: the gateway's readiness wait plus a margin."""
    return httpx.Timeout((wait or 0) + _EXEC_MARGIN, connect=min(10.0, settings.timeout))


def to_bytes(data: Body) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import datetime as _dt

        when = parsedate_to_datetime(value)
        return max(0.0, (when - _dt.datetime.now(when.tzinfo)).total_seconds())
    except (TypeError, ValueError):
        return None


def problem_error(status: int, headers: httpx.Headers, body: bytes) -> APIError:
    """The typed exception of a non-2xx answer (a synthetic problem when the body is not one)."""
    problem: Mapping[str, Any]
    try:
        parsed = json.loads(body.decode("utf-8"))
        if not (isinstance(parsed, dict) and isinstance(parsed.get("type"), str)):
            raise ValueError("not a problem")
        problem = parsed
    except ValueError:
        title = body.decode("utf-8", errors="replace").strip()[:200] or f"HTTP {status}"
        problem = {"type": "about:blank", "title": title, "status": status}
    return error_from_problem(status, problem, parse_retry_after(headers.get("retry-after")))


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except ValueError as exc:
        raise ProtocolError("the gateway answered with invalid JSON") from exc


def retry_delay(attempt: int, max_retries: int, error: Exception, idempotent: bool) -> Optional[float]:
    """Seconds to wait before retrying after ``error`` on attempt ``attempt`` (1-based), or None."""
    if not idempotent or attempt > max_retries:
        return None
    if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.RemoteProtocolError)):
        return min(_MAX_RETRY_DELAY, 0.25 * 2.0 ** (attempt - 1))
    if isinstance(error, APIError) and error.status in (429, 503) and error.retry_after is not None:
        return error.retry_after if error.retry_after <= _MAX_RETRY_DELAY else None
    return None


class Retry:
    """The retry rule applied to one call, attempt by attempt (the client sends and sleeps)."""

    def __init__(self, settings: Settings, idempotent: bool) -> None:
        self._settings = settings
        self._idempotent = idempotent
        self.attempts = 1

    @property
    def retried(self) -> bool:
        """Whether the call was sent more than once (a 404 to a delete then means an earlier attempt arrived)."""
        return self.attempts > 1

    def after(self, error: Exception) -> float:
        """Seconds to wait before sending again after ``error``; raises the caller's error when the call is
        not to be sent again (see :func:`client_error`)."""
        delay = retry_delay(self.attempts, self._settings.max_retries, error, self._idempotent)
        if delay is None:
            raise client_error(self._settings.base_url, error) from (
                error if isinstance(error, httpx.TransportError) else None
            )
        self.attempts += 1
        return delay


def client_error(base_url: str, error: Exception) -> Exception:
    """The exception a caller gets for a failed call: httpx's errors as the SDK's, API errors as they are."""
    if isinstance(error, httpx.TimeoutException) and not isinstance(error, httpx.ConnectTimeout):
        return APITimeoutError(f"no answer from the gateway in time: {error}")
    if isinstance(error, httpx.TransportError):
        return APIConnectionError(describe_transport_error(base_url, error))
    return error


class BoundedBody:
    """Collects an answer's body up to ``limit`` bytes (hostile input): past it a ProtocolError, or
    with ``strict=False`` the first ``limit`` bytes."""

    def __init__(self, limit: int, *, strict: bool = True) -> None:
        self._out = bytearray()
        self._limit = limit
        self._strict = strict

    def add(self, chunk: bytes) -> bool:
        """Adds a chunk; True when the body is complete at the limit (stop reading)."""
        self._out += chunk
        if len(self._out) <= self._limit:
            return False
        if self._strict:
            raise ProtocolError(f"answer is larger than the limit of {self._limit} bytes")
        del self._out[self._limit:]
        return True

    def value(self) -> bytes:
        return bytes(self._out)


class ReadyPoll:
    """The deadline of ``wait_until_ready``: polls every ``interval`` s for ``timeout`` s."""

    def __init__(self, name: str, timeout: float, interval: float) -> None:
        self._name = name
        self._timeout = timeout
        self._interval = interval
        self._end = time.monotonic() + timeout

    def is_ready(self, session: Session) -> bool:
        """True when ``session`` is Ready; APITimeoutError (with the last reason) when the next poll
        would come after the deadline; else False (poll again after ``interval``)."""
        if session.ready:
            return True
        if time.monotonic() + self._interval > self._end:
            raise APITimeoutError(
                f"session {self._name} is not ready after {self._timeout:g} s: {session.reason}"
                + (f": {session.message}" if session.message else "")
            )
        return False


def check_name(name: str) -> str:
    """Session names are DNS labels; refusing others here gives a clear error before any call."""
    if not isinstance(name, str) or not _DNS_LABEL.match(name) or len(name) > 63:
        raise ValueError(f"invalid session name {name!r}: lowercase letters, digits and '-', at most 63")
    return name


class NdjsonDecoder:
    """Splits a byte stream into JSON lines, refusing a line longer than ``max_line``."""

    def __init__(self, max_line: Optional[int] = None, *, label: str = "exec stream") -> None:
        self._buffer = bytearray()
        self._max_line = MAX_STREAM_LINE_BYTES if max_line is None else max_line
        self._label = label

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer += chunk
        events: list[dict[str, Any]] = []
        while True:
            nl = self._buffer.find(b"\n")
            if nl < 0:
                break
            line = bytes(self._buffer[:nl])
            del self._buffer[: nl + 1]
            if line.strip():
                events.append(self._parse(line))
        if len(self._buffer) > self._max_line:
            raise ProtocolError(f"a stream line is longer than {self._max_line} bytes")
        return events

    def close(self) -> list[dict[str, Any]]:
        rest, self._buffer = bytes(self._buffer), bytearray()
        return [self._parse(rest)] if rest.strip() else []

    def _parse(self, line: bytes) -> dict[str, Any]:
        try:
            value = json.loads(line.decode("utf-8"))
        except ValueError as exc:
            raise ProtocolError(f"invalid NDJSON line in the {self._label}: {line[:80]!r}") from exc
        if not isinstance(value, dict) or value.get("type") not in ("stdout", "stderr", "exit"):
            raise ProtocolError(f"unexpected {self._label} event: {line[:80]!r}")
        return value


# -- background processes (docs/adr/0018) ---------------------------------------------------

#: Signals the gateway lets a process be sent (others: 400 signal-not-allowed).
PROCESS_SIGNALS = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT")


def process_path(name: str, process_id: Optional[str] = None, action: Optional[str] = None) -> str:
    """``/v1/sessions/NAME/processes[/ID[/ACTION]]``, the name and id encoded."""
    base = f"{session_path(name)}/processes"
    if process_id is None:
        return base
    if not isinstance(process_id, str) or not process_id:
        raise ValueError(f"invalid process id {process_id!r}")
    path = f"{base}/{quote(process_id, safe='')}"
    return path if action is None else f"{path}/{action}"


def process_start_body(
    command: str, cwd: Optional[str], env: Optional[Mapping[str, str]], wait: Optional[int]
) -> dict[str, Any]:
    """POST /v1/sessions/{name}/processes body; None fields are left out."""
    return _command_body(command, cwd=cwd, env=None if env is None else dict(env), waitSeconds=wait)


def process_query(**fields: Optional[int]) -> dict[str, str]:
    """Query parameters of the wire's names for the given (snake_case) fields; None left out."""
    wire = {
        "stdout_offset": "stdoutOffset",
        "stderr_offset": "stderrOffset",
        "max_bytes": "maxBytes",
        "timeout": "timeoutSeconds",
    }
    return {wire[k]: str(int(v)) for k, v in fields.items() if v is not None}


def start_process_timeout(settings: Settings, wait: Optional[int]) -> httpx.Timeout:
    """The client deadline of a start: the readiness wait plus a margin."""
    return httpx.Timeout((_MAX_WAIT if wait is None else wait) + _EXEC_MARGIN, connect=min(10.0, settings.timeout))


def process_wait_timeout(settings: Settings, seconds: Optional[int]) -> httpx.Timeout:
    """The client deadline of a wait or follow: the gateway's own deadline plus a margin."""
    total = (_MAX_EXEC_TIMEOUT if seconds is None else seconds) + _EXEC_MARGIN
    return httpx.Timeout(total, connect=min(10.0, settings.timeout))


def process_list(data: Any) -> list[Any]:
    """The ``processes`` member of a list answer."""
    items = data.get("processes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ProtocolError("unexpected process list in the gateway's answer")
    return items


class StreamState(Generic[E]):
    """The decoding half of a streamed NDJSON answer: fed the body's pieces as they come, it gives
    their events one at a time (each handled only when taken, so what the state says matches what
    the caller saw when it stops early). The clients' stream classes only read and close."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.decoder = NdjsonDecoder(label=label)

    @property
    def ended(self) -> bool:
        """True once the end event came: stop reading."""
        raise NotImplementedError

    def take(self, raw: bytes) -> Iterator[E]:
        """The events of the complete lines so far, with ``raw`` added."""
        return self._events(self.decoder.feed(raw))

    def take_rest(self) -> Iterator[E]:
        """The events of a last line without a newline, once the body ended."""
        return self._events(self.decoder.close())

    def _events(self, events: list[dict[str, Any]]) -> Iterator[E]:
        raise NotImplementedError


class ExecStreamState(StreamState[OutputChunk]):
    """What an exec stream saw: its output chunks, then :attr:`exit`."""

    def __init__(self) -> None:
        super().__init__("exec stream")
        self.exit: Optional[ExitStatus] = None

    @property
    def ended(self) -> bool:
        return self.exit is not None

    def take_rest(self) -> Iterator[OutputChunk]:
        """As :meth:`StreamState.take_rest`; a stream that ends without its exit event is a ProtocolError."""
        yield from super().take_rest()
        if self.exit is None:
            raise ProtocolError("the exec stream ended without an exit event (connection lost?)")

    def _events(self, events: list[dict[str, Any]]) -> Iterator[OutputChunk]:
        for event in events:
            if event["type"] == "exit":
                self.exit = ExitStatus.from_json(event)
            else:
                yield OutputChunk(event["type"], decode_output(event["data"], event.get("encoding", "utf-8")))


class FollowState(StreamState[ProcessEvent]):
    """What a follow saw so far: each stream's next offset (to follow again) and the exit event."""

    def __init__(self, stdout_offset: Optional[int], stderr_offset: Optional[int]) -> None:
        super().__init__("process follow stream")
        self.stdout_offset = stdout_offset or 0
        self.stderr_offset = stderr_offset or 0
        self.exit: Optional[ProcessExitEvent] = None

    @property
    def ended(self) -> bool:
        return self.exit is not None

    def handle(self, raw: Mapping[str, Any]) -> ProcessEvent:
        event = process_event(raw)
        if isinstance(event, ProcessExitEvent):
            self.exit = event
        elif event.stream == "stdout":
            self.stdout_offset = event.next_offset
        else:
            self.stderr_offset = event.next_offset
        return event

    def _events(self, events: list[dict[str, Any]]) -> Iterator[ProcessEvent]:
        """Events up to the exit event (the process ended: nothing after it counts)."""
        for event in events:
            yield self.handle(event)
            if self.exit is not None:
                return


class ExecStreamView:
    """``exit`` and ``exit_code`` of ExecStream and AsyncExecStream, read from their state."""

    _exec: ExecStreamState

    @property
    def exit(self) -> Optional[ExitStatus]:
        return self._exec.exit

    @property
    def exit_code(self) -> Optional[int]:
        return None if self.exit is None else self.exit.exit_code


class FollowView:
    """The offsets of ProcessFollow and AsyncProcessFollow, read from their state."""

    _follow: FollowState

    @property
    def stdout_offset(self) -> int:
        """Offset after the last stdout byte seen: where to follow again from."""
        return self._follow.stdout_offset

    @property
    def stderr_offset(self) -> int:
        """Offset after the last stderr byte seen."""
        return self._follow.stderr_offset


def describe_transport_error(base_url: str, exc: httpx.TransportError) -> str:
    """One line for an unreachable gateway, naming the address and the cause."""
    cause = str(exc) or type(exc).__name__
    if "Connection refused" in cause or "Errno 111" in cause:
        cause = "connection refused (ECONNREFUSED)"
    return f"cannot reach the gateway at {base_url}: {cause}"
