"""One pure function per gateway call, shared by :class:`Client` and :class:`AsyncClient` (no I/O).

A builder checks its arguments (before anything is sent) and returns what to send: a
:class:`Request` (method, path, query, body, timeout and whether the retry rule may send it again),
wrapped in a :class:`Call` with the pure function that decodes the answer when the answer is read
whole. The clients only send it (sync or async), read the body within ``MAX_RESPONSE_BYTES`` and
hand it to ``decode``; for a stream or a delete they get the bare :class:`Request`.

Retry-ability per call (see ``_core``): exec, exec stream, start_process and signal_process are
never retried; create only with a name; everything else is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar, Union

import httpx

from . import _core as core
from ._models import ExecResult, ProcessInfo, ProcessOutput, Session, WrittenFile

T = TypeVar("T")


@dataclass(frozen=True)
class Request:
    """What one call sends; ``idempotent`` says whether the retry rule may send it again."""

    method: str
    path: str
    params: Mapping[str, str]
    idempotent: bool
    timeout: Union[httpx.Timeout, float]
    json: Any = None
    content: Optional[bytes] = None
    headers: Optional[Mapping[str, str]] = None

    def build_args(self) -> dict[str, Any]:
        """The keyword arguments of httpx's ``build_request`` (None: not sent, as httpx's defaults)."""
        return {
            "method": self.method,
            "url": self.path,
            "params": dict(self.params),
            "json": self.json,
            "content": self.content,
            "headers": None if self.headers is None else dict(self.headers),
            "timeout": self.timeout,
        }


@dataclass(frozen=True)
class Answer:
    """A 2xx answer read whole: its status and body."""

    status: int
    body: bytes

    def json(self) -> Any:
        """The body as JSON (ProtocolError when it is not)."""
        return core.parse_json(self.body)


@dataclass(frozen=True)
class Call(Generic[T]):
    """A request whose answer is read whole and decoded by ``decode`` (pure)."""

    request: Request
    decode: Callable[[Answer], T]


def _request(
    settings: core.Settings,
    method: str,
    path: str,
    namespace: Optional[str],
    *,
    idempotent: bool,
    query: Optional[Mapping[str, str]] = None,
    timeout: Optional[httpx.Timeout] = None,
    json: Any = None,
    content: Optional[bytes] = None,
    headers: Optional[Mapping[str, str]] = None,
) -> Request:
    """A request with the namespace query (then ``query``) and the client's default timeout."""
    return Request(
        method=method,
        path=path,
        params={**core.params(settings, namespace), **(query or {})},
        idempotent=idempotent,
        timeout=settings.timeout if timeout is None else timeout,
        json=json,
        content=content,
        headers=headers,
    )


# -- decoders ---------------------------------------------------------------------------------


def _session(answer: Answer) -> Session:
    return Session.from_json(answer.json())


def _created_session(answer: Answer) -> Session:
    return Session.from_json(answer.json(), created=answer.status == 201)


def _sessions(answer: Answer) -> list[Session]:
    return [Session.from_json(item) for item in answer.json().get("items", [])]


def _written_file(answer: Answer) -> WrittenFile:
    result = answer.json()
    return WrittenFile(path=result["path"], size=int(result["size"]))


def _body(answer: Answer) -> bytes:
    return answer.body


def _process(answer: Answer) -> ProcessInfo:
    return ProcessInfo.from_json(answer.json())


def _processes(answer: Answer) -> list[ProcessInfo]:
    return [ProcessInfo.from_json(item) for item in core.process_list(answer.json())]


def _process_output(answer: Answer) -> ProcessOutput:
    return ProcessOutput.from_json(answer.json())


# -- sessions ---------------------------------------------------------------------------------


def create_session(
    settings: core.Settings,
    name: Optional[str],
    *,
    image: Optional[str],
    env: Optional[Mapping[str, str]],
    idle_timeout: Optional[int],
    max_lifetime: Optional[int],
    shutdown_policy: Optional[str],
    exec_transport: Optional[str],
    persistent_workspace: Optional[bool],
    pool: Optional[str],
    namespace: Optional[str],
) -> Call[Session]:
    """POST /v1/sessions; idempotent (retried) only with a name: without one the gateway makes one."""
    body = core.create_body(
        None if name is None else core.check_name(name),
        image=image,
        env=dict(env) if env is not None else None,
        idle_timeout=idle_timeout,
        max_lifetime=max_lifetime,
        shutdown_policy=shutdown_policy,
        exec_transport=exec_transport,
        persistent_workspace=persistent_workspace,
        pool=pool,
    )
    request = _request(settings, "POST", "/v1/sessions", namespace, json=body, idempotent=name is not None)
    return Call(request, _created_session)


def get_session(settings: core.Settings, name: str, namespace: Optional[str]) -> Call[Session]:
    return Call(_request(settings, "GET", core.session_path(core.check_name(name)), namespace, idempotent=True),
                _session)


def list_sessions(settings: core.Settings, namespace: Optional[str]) -> Call[list[Session]]:
    return Call(_request(settings, "GET", "/v1/sessions", namespace, idempotent=True), _sessions)


def delete_session(settings: core.Settings, name: str, namespace: Optional[str]) -> Request:
    """DELETE; its answer's body is not read (a 404 after a retried attempt counts as done)."""
    return _request(settings, "DELETE", core.session_path(core.check_name(name)), namespace, idempotent=True)


def suspend_session(settings: core.Settings, name: str, namespace: Optional[str]) -> Call[Session]:
    path = f"{core.session_path(core.check_name(name))}/suspend"
    return Call(_request(settings, "POST", path, namespace, json={}, idempotent=True), _session)


def resume_session(
    settings: core.Settings, name: str, wait: Optional[int], namespace: Optional[str]
) -> Call[Session]:
    path = f"{core.session_path(core.check_name(name))}/resume"
    request = _request(settings, "POST", path, namespace, json=core.resume_body(wait), idempotent=True,
                       timeout=core.resume_timeout(settings, wait))
    return Call(request, _session)


# -- exec -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecOptions:
    """The options of an exec and of an exec stream (see :meth:`Client.exec`)."""

    timeout: Optional[int]
    cwd: Optional[str]
    env: Optional[Mapping[str, str]]
    wait: Optional[int]


def _exec_request(
    settings: core.Settings, route: str, name: str, command: str, options: ExecOptions, namespace: Optional[str]
) -> Request:
    """POST .../exec or .../exec/stream: never retried (a command must never run twice)."""
    timeout, wait = options.timeout, options.wait
    body = core.exec_body(command, timeout, options.cwd, options.env, wait)
    return _request(settings, "POST", f"{core.session_path(core.check_name(name))}/{route}", namespace, json=body,
                    idempotent=False, timeout=core.exec_timeout(settings, timeout, wait))


def exec(
    settings: core.Settings, name: str, command: str, options: ExecOptions, namespace: Optional[str]
) -> Call[ExecResult]:
    request = _exec_request(settings, "exec", name, command, options, namespace)
    return Call(request, lambda answer: ExecResult.from_json(command, answer.json()))


def exec_stream(
    settings: core.Settings, name: str, command: str, options: ExecOptions, namespace: Optional[str]
) -> Request:
    return _exec_request(settings, "exec/stream", name, command, options, namespace)


# -- files ------------------------------------------------------------------------------------


def write_file(
    settings: core.Settings, name: str, path: str, data: core.Body, namespace: Optional[str]
) -> Call[WrittenFile]:
    """PUT the bytes (atomic replace on the gateway's side: retried)."""
    url = core.file_path(core.check_name(name), path)
    request = _request(settings, "PUT", url, namespace, content=core.to_bytes(data),
                       headers={"content-type": "application/octet-stream"}, idempotent=True)
    return Call(request, _written_file)


def read_file(settings: core.Settings, name: str, path: str, namespace: Optional[str]) -> Call[bytes]:
    """GET the file; the answer is its bytes."""
    return Call(_request(settings, "GET", core.file_path(core.check_name(name), path), namespace, idempotent=True),
                _body)


# -- background processes ---------------------------------------------------------------------


def start_process(
    settings: core.Settings, name: str, command: str, *, cwd: Optional[str], env: Optional[Mapping[str, str]],
    wait: Optional[int], namespace: Optional[str],
) -> Call[ProcessInfo]:
    """POST .../processes: never retried (a command must never start twice)."""
    body = core.process_start_body(command, cwd, env, wait)
    request = _request(settings, "POST", core.process_path(core.check_name(name)), namespace, json=body,
                       idempotent=False, timeout=core.start_process_timeout(settings, wait))
    return Call(request, _process)


def list_processes(settings: core.Settings, name: str, namespace: Optional[str]) -> Call[list[ProcessInfo]]:
    return Call(_request(settings, "GET", core.process_path(core.check_name(name)), namespace, idempotent=True),
                _processes)


def get_process(settings: core.Settings, name: str, process_id: str, namespace: Optional[str]) -> Call[ProcessInfo]:
    path = core.process_path(core.check_name(name), process_id)
    return Call(_request(settings, "GET", path, namespace, idempotent=True), _process)


def process_output(
    settings: core.Settings, name: str, process_id: str, *, stdout_offset: Optional[int],
    stderr_offset: Optional[int], max_bytes: Optional[int], namespace: Optional[str],
) -> Call[ProcessOutput]:
    query = core.process_query(stdout_offset=stdout_offset, stderr_offset=stderr_offset, max_bytes=max_bytes)
    path = core.process_path(core.check_name(name), process_id, "output")
    return Call(_request(settings, "GET", path, namespace, idempotent=True, query=query), _process_output)


def follow_process(
    settings: core.Settings, name: str, process_id: str, *, stdout_offset: Optional[int],
    stderr_offset: Optional[int], timeout: Optional[int], namespace: Optional[str],
) -> Request:
    """GET .../output/stream: a read, retried until it answers."""
    query = core.process_query(stdout_offset=stdout_offset, stderr_offset=stderr_offset, timeout=timeout)
    path = core.process_path(core.check_name(name), process_id, "output/stream")
    return _request(settings, "GET", path, namespace, idempotent=True, query=query,
                    timeout=core.process_wait_timeout(settings, timeout))


def signal_process(
    settings: core.Settings, name: str, process_id: str, signal: str, namespace: Optional[str]
) -> Call[ProcessInfo]:
    """POST .../signal: never retried."""
    path = core.process_path(core.check_name(name), process_id, "signal")
    return Call(_request(settings, "POST", path, namespace, json={"signal": signal}, idempotent=False), _process)


def wait_process(
    settings: core.Settings, name: str, process_id: str, timeout: int, namespace: Optional[str]
) -> Call[ProcessInfo]:
    path = core.process_path(core.check_name(name), process_id, "wait")
    request = _request(settings, "GET", path, namespace, idempotent=True, query=core.process_query(timeout=timeout),
                       timeout=core.process_wait_timeout(settings, timeout))
    return Call(request, _process)


def remove_process(settings: core.Settings, name: str, process_id: str, namespace: Optional[str]) -> Request:
    """DELETE; like a session's delete, a 404 after a retried attempt counts as done."""
    return _request(settings, "DELETE", core.process_path(core.check_name(name), process_id), namespace,
                    idempotent=True)
