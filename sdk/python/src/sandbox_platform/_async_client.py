"""The asyncio client: the same calls as :class:`~sandbox_platform.Client`, awaited."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any, AsyncIterator, Mapping, Optional, Union

import httpx

from . import _core as core
from ._errors import APIConnectionError, APIError, APITimeoutError, NotFoundError, ProtocolError
from ._models import (
    ExecResult,
    ExitStatus,
    OutputChunk,
    ProcessEvent,
    ProcessExitEvent,
    ProcessInfo,
    ProcessOutput,
    Session,
    WrittenFile,
    decode_output,
)

_ERROR_BODY_BYTES = 64 * 1024


class AsyncClient:
    """Asyncio client of the sandbox-platform gateway (arguments as for :class:`Client`)::

        async with AsyncClient() as client:
            await client.create_session("demo")
            result = await client.exec("demo", "echo hi")
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        namespace: Optional[str] = None,
        timeout: float = 150.0,
        max_retries: int = 2,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self._settings = core.resolve_settings(base_url, api_key, namespace, timeout, max_retries)
        self._http = httpx.AsyncClient(
            base_url=self._settings.base_url,
            headers=core.default_headers(self._settings),
            timeout=timeout,
            transport=transport,
        )

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def create_session(
        self,
        name: Optional[str] = None,
        *,
        image: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        idle_timeout: Optional[int] = None,
        max_lifetime: Optional[int] = None,
        shutdown_policy: Optional[str] = None,
        exec_transport: Optional[str] = None,
        persistent_workspace: Optional[bool] = None,
        pool: Optional[str] = None,
        namespace: Optional[str] = None,
    ) -> Session:
        """Creates the session, or returns the one of that name (``created`` tells which)."""
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
        response, data = await self._json("POST", "/v1/sessions", namespace, json=body, idempotent=name is not None)
        return Session.from_json(data, created=response.status_code == 201)

    async def get_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        _, data = await self._json("GET", core.session_path(core.check_name(name)), namespace, idempotent=True)
        return Session.from_json(data)

    async def list_sessions(self, *, namespace: Optional[str] = None) -> list[Session]:
        _, data = await self._json("GET", "/v1/sessions", namespace, idempotent=True)
        return [Session.from_json(item) for item in data.get("items", [])]

    async def delete_session(self, name: str, *, namespace: Optional[str] = None) -> None:
        attempts: list[int] = []
        try:
            response = await self._send("DELETE", core.session_path(core.check_name(name)), namespace,
                                        idempotent=True, attempts=attempts)
        except NotFoundError:
            if len(attempts) > 1:
                return
            raise
        await response.aclose()

    async def suspend_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        """Suspends a session: its Pod goes; its workspace, Secret and token stay. Idempotent (retried)."""
        _, data = await self._json("POST", f"{core.session_path(core.check_name(name))}/suspend", namespace,
                                   json={}, idempotent=True)
        return Session.from_json(data)

    async def resume_session(
        self, name: str, *, wait: Optional[int] = None, namespace: Optional[str] = None
    ) -> Session:
        """Resumes a suspended session; ``wait``: seconds the gateway waits for Ready. Idempotent."""
        _, data = await self._json("POST", f"{core.session_path(core.check_name(name))}/resume", namespace,
                                   json=core.resume_body(wait), idempotent=True,
                                   timeout=core.resume_timeout(self._settings, wait))
        return Session.from_json(data)

    async def wait_until_ready(
        self, name: str, *, timeout: float = 120.0, interval: float = 1.0, namespace: Optional[str] = None
    ) -> Session:
        end = time.monotonic() + timeout
        while True:
            session = await self.get_session(name, namespace=namespace)
            if session.ready:
                return session
            if time.monotonic() + interval > end:
                raise APITimeoutError(
                    f"session {name} is not ready after {timeout:g} s: {session.reason}"
                    + (f": {session.message}" if session.message else "")
                )
            await asyncio.sleep(interval)

    async def exec(
        self,
        name: str,
        command: str,
        *,
        timeout: Optional[int] = None,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> ExecResult:
        """Runs a bash command line in the session. Never retried."""
        body = core.exec_body(command, timeout, cwd, env, wait)
        _, data = await self._json(
            "POST", f"{core.session_path(core.check_name(name))}/exec", namespace, json=body,
            idempotent=False, timeout=core.exec_timeout(self._settings, timeout, wait),
        )
        return ExecResult.from_json(command, data)

    async def exec_stream(
        self,
        name: str,
        command: str,
        *,
        timeout: Optional[int] = None,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> AsyncExecStream:
        """Runs a command and streams its output (``async for chunk in stream``). Never retried."""
        body = core.exec_body(command, timeout, cwd, env, wait)
        response = await self._send(
            "POST", f"{core.session_path(core.check_name(name))}/exec/stream", namespace, json=body,
            idempotent=False, timeout=core.exec_timeout(self._settings, timeout, wait),
        )
        return AsyncExecStream(response)

    async def write_file(
        self, name: str, path: str, data: core.Body, *, namespace: Optional[str] = None
    ) -> WrittenFile:
        _, result = await self._json(
            "PUT", core.file_path(core.check_name(name), path), namespace, content=core.to_bytes(data),
            headers={"content-type": "application/octet-stream"}, idempotent=True,
        )
        return WrittenFile(path=result["path"], size=int(result["size"]))

    async def read_file(self, name: str, path: str, *, namespace: Optional[str] = None) -> bytes:
        response = await self._send("GET", core.file_path(core.check_name(name), path), namespace, idempotent=True)
        return await _read_bounded(response, core.MAX_RESPONSE_BYTES)

    # -- background processes ---------------------------------------------------------------

    async def start_process(
        self,
        name: str,
        command: str,
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> ProcessInfo:
        """Starts a bash command line in the background (its own process group); never retried.

        The process outlives the call and ends with the session's Pod. ``wait``: seconds to wait
        for a session that is not Ready yet (gateway default 30). A sandbox holds 16 processes
        (:class:`ConflictError` ``too-many-processes``): remove exited ones.
        """
        body = core.process_start_body(command, cwd, env, wait)
        _, data = await self._json("POST", core.process_path(core.check_name(name)), namespace, json=body,
                             idempotent=False, timeout=core.start_process_timeout(self._settings, wait))
        return ProcessInfo.from_json(data)

    async def list_processes(self, name: str, *, namespace: Optional[str] = None) -> list[ProcessInfo]:
        """The background processes of a session (running and exited), oldest first."""
        _, data = await self._json("GET", core.process_path(core.check_name(name)), namespace, idempotent=True)
        return [ProcessInfo.from_json(item) for item in core.process_list(data)]

    async def get_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> ProcessInfo:
        """One background process (:class:`NotFoundError` ``process-not-found`` when there is none)."""
        _, data = await self._json("GET", core.process_path(core.check_name(name), process_id), namespace,
                             idempotent=True)
        return ProcessInfo.from_json(data)

    async def process_output(
        self,
        name: str,
        process_id: str,
        *,
        stdout_offset: Optional[int] = None,
        stderr_offset: Optional[int] = None,
        max_bytes: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> ProcessOutput:
        """Reads a process's output from byte offsets; pass each chunk's ``next_offset`` to read on.

        ``max_bytes``: most bytes per stream (gateway default and maximum 1 MiB).
        """
        query = core.process_query(stdout_offset=stdout_offset, stderr_offset=stderr_offset, max_bytes=max_bytes)
        _, data = await self._json("GET", core.process_path(core.check_name(name), process_id, "output"), namespace,
                             idempotent=True, extra_params=query)
        return ProcessOutput.from_json(data)

    async def follow_process(
        self,
        name: str,
        process_id: str,
        *,
        stdout_offset: Optional[int] = None,
        stderr_offset: Optional[int] = None,
        timeout: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> AsyncProcessFollow:
        """Follows a process's output; ``async for event in follow``; see :class:`AsyncProcessFollow`. A read: retried before it answers.

        ``timeout``: seconds before the gateway ends the follow without an exit event (default 60,
        at most 300): follow again from :attr:`AsyncProcessFollow.stdout_offset` / ``stderr_offset``.
        """
        query = core.process_query(stdout_offset=stdout_offset, stderr_offset=stderr_offset, timeout=timeout)
        response = await self._send("GET", core.process_path(core.check_name(name), process_id, "output/stream"),
                              namespace, idempotent=True, extra_params=query,
                              timeout=core.process_wait_timeout(self._settings, timeout))
        return AsyncProcessFollow(response, core.FollowState(stdout_offset, stderr_offset))

    async def signal_process(
        self, name: str, process_id: str, signal: str = "SIGTERM", *, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Sends a signal to the process's group (default SIGTERM); never retried.

        Allowed: SIGHUP SIGINT SIGQUIT SIGKILL SIGTERM SIGUSR1 SIGUSR2 SIGSTOP SIGCONT (others:
        :class:`InvalidRequestError` ``signal-not-allowed``). The answer may still say running:
        :meth:`wait_process` for the exit.
        """
        _, data = await self._json("POST", core.process_path(core.check_name(name), process_id, "signal"), namespace,
                             json={"signal": signal}, idempotent=False)
        return ProcessInfo.from_json(data)

    async def wait_process(
        self, name: str, process_id: str, *, timeout: int = 30, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Waits up to ``timeout`` seconds (at most 300) for the exit; ``state`` says whether it came."""
        _, data = await self._json("GET", core.process_path(core.check_name(name), process_id, "wait"), namespace,
                             idempotent=True, extra_params=core.process_query(timeout=timeout),
                             timeout=core.process_wait_timeout(self._settings, timeout))
        return ProcessInfo.from_json(data)

    async def remove_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> None:
        """Removes an exited process (:class:`ConflictError` ``process-running`` while it runs). Retried;
        a 404 after a retried attempt counts as done (that attempt arrived)."""
        attempts: list[int] = []
        try:
            response = await self._send("DELETE", core.process_path(core.check_name(name), process_id), namespace,
                                  idempotent=True, attempts=attempts)
        except NotFoundError:
            if len(attempts) > 1:
                return
            raise
        await response.aclose()

    async def _json(
        self, method: str, path: str, namespace: Optional[str], **kw: Any
    ) -> tuple[httpx.Response, Any]:
        response = await self._send(method, path, namespace, **kw)
        return response, core.parse_json(await _read_bounded(response, core.MAX_RESPONSE_BYTES))

    async def _send(
        self,
        method: str,
        path: str,
        namespace: Optional[str],
        *,
        idempotent: bool,
        attempts: Optional[list[int]] = None,
        timeout: Union[httpx.Timeout, float, None] = None,
        extra_params: Optional[Mapping[str, str]] = None,
        **kw: Any,
    ) -> httpx.Response:
        request = self._http.build_request(
            method, path, params={**core.params(self._settings, namespace), **(extra_params or {})},
            timeout=timeout if timeout is not None else self._settings.timeout, **kw,
        )
        attempt = 0
        while True:
            attempt += 1
            if attempts is not None:
                attempts.append(attempt)
            try:
                return await self._attempt(request)
            except (httpx.TransportError, APIError) as exc:
                delay = core.retry_delay(attempt, self._settings.max_retries, exc, idempotent)
                if delay is None:
                    raise self._translate(exc) from (exc if isinstance(exc, httpx.TransportError) else None)
                await asyncio.sleep(delay)

    async def _attempt(self, request: httpx.Request) -> httpx.Response:
        response = await self._http.send(request, stream=True)
        if response.is_success:
            return response
        body = await _read_bounded(response, _ERROR_BODY_BYTES, strict=False)
        raise core.problem_error(response.status_code, response.headers, body)

    def _translate(self, exc: Exception) -> Exception:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return APITimeoutError(f"no answer from the gateway in time: {exc}")
        if isinstance(exc, httpx.TransportError):
            return APIConnectionError(core.describe_transport_error(self._settings.base_url, exc))
        return exc


class AsyncExecStream:
    """The output of a streaming exec: ``async for chunk in stream``, then :attr:`exit_code`."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._decoder = core.NdjsonDecoder()
        self.exit: Optional[ExitStatus] = None

    @property
    def exit_code(self) -> Optional[int]:
        return None if self.exit is None else self.exit.exit_code

    async def __aiter__(self) -> AsyncIterator[OutputChunk]:
        try:
            async for raw in self._response.aiter_bytes():
                for event in self._decoder.feed(raw):
                    chunk = self._handle(event)
                    if chunk is not None:
                        yield chunk
                if self.exit is not None:
                    return
            for event in self._decoder.close():
                chunk = self._handle(event)
                if chunk is not None:
                    yield chunk
            if self.exit is None:
                raise ProtocolError("the exec stream ended without an exit event (connection lost?)")
        except httpx.TransportError as exc:
            raise ProtocolError(f"the exec stream broke off: {exc}") from exc
        finally:
            await self._response.aclose()

    def _handle(self, event: Mapping[str, Any]) -> Optional[OutputChunk]:
        if event["type"] == "exit":
            self.exit = ExitStatus.from_json(event)
            return None
        return OutputChunk(event["type"], decode_output(event["data"], event.get("encoding", "utf-8")))

    async def aclose(self) -> None:
        await self._response.aclose()

    async def __aenter__(self) -> AsyncExecStream:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()


class AsyncProcessFollow:
    """The output of a followed background process: ``async for event in follow`` (see
    :class:`~sandbox_platform.ProcessFollow`), an async context manager."""

    def __init__(self, response: httpx.Response, state: core.FollowState) -> None:
        self._response = response
        self._state = state

    @property
    def exit(self) -> Optional[ProcessExitEvent]:
        """The exit event, once seen (None after a follow that reached its timeout)."""
        return self._state.exit

    @property
    def stdout_offset(self) -> int:
        """Offset after the last stdout byte seen: where to follow again from."""
        return self._state.stdout_offset

    @property
    def stderr_offset(self) -> int:
        """Offset after the last stderr byte seen."""
        return self._state.stderr_offset

    async def __aiter__(self) -> AsyncIterator[ProcessEvent]:
        try:
            async for raw in self._response.aiter_bytes():
                for event in self._state.decoder.feed(raw):
                    yield self._state.handle(event)
                    if self._state.exit is not None:
                        return
            for event in self._state.decoder.close():
                yield self._state.handle(event)
                if self._state.exit is not None:
                    return
        except httpx.TransportError as exc:
            raise ProtocolError(f"the process follow stream broke off: {exc}") from exc
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()

    async def __aenter__(self) -> AsyncProcessFollow:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()


async def _read_bounded(response: httpx.Response, limit: int, *, strict: bool = True) -> bytes:
    out = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            out += chunk
            if len(out) > limit:
                if strict:
                    raise ProtocolError(f"answer is larger than the limit of {limit} bytes")
                return bytes(out[:limit])
    finally:
        await response.aclose()
    return bytes(out)
