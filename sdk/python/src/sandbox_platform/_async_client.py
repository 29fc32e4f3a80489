"""The asyncio client: the same calls as :class:`~sandbox_platform.Client`, awaited (the I/O half of
each call; the calls themselves: ``_calls``)."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import AsyncIterator, Generic, Mapping, Optional, TypeVar

import httpx

from . import _calls as calls
from . import _code as code_calls
from . import _snapshots as snapshot_calls
from ._snapshots import ForkResult, Snapshot
from . import _core as core
from ._code import CodeContext, CodeEvent, CodeResult, WatchEvent
from ._errors import APIError, NotFoundError, ProtocolError
from ._models import (ExecResult, OutputChunk, ProcessEvent, ProcessExitEvent, ProcessInfo, ProcessOutput, Session,
                      WrittenFile)

T = TypeVar("T")
E = TypeVar("E")
_Self = TypeVar("_Self", bound="_AsyncClosing")


class _AsyncClosing:
    """An async context manager whose exit awaits :meth:`aclose`."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()


class AsyncClient(_AsyncClosing):
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
        self._http = httpx.AsyncClient(**core.http_client_args(self._settings), transport=transport)

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

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
        return await self._call(calls.create_session(
            self._settings, name, image=image, env=env, idle_timeout=idle_timeout, max_lifetime=max_lifetime,
            shutdown_policy=shutdown_policy, exec_transport=exec_transport,
            persistent_workspace=persistent_workspace, pool=pool, namespace=namespace,
        ))

    async def get_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        return await self._call(calls.get_session(self._settings, name, namespace))

    async def list_sessions(self, *, namespace: Optional[str] = None) -> list[Session]:
        return await self._call(calls.list_sessions(self._settings, namespace))

    async def delete_session(self, name: str, *, namespace: Optional[str] = None) -> None:
        await self._delete(calls.delete_session(self._settings, name, namespace))

    async def suspend_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        """Suspends a session: its Pod goes; its workspace, Secret and token stay. Idempotent (retried)."""
        return await self._call(calls.suspend_session(self._settings, name, namespace))

    async def resume_session(
        self, name: str, *, wait: Optional[int] = None, namespace: Optional[str] = None
    ) -> Session:
        """Resumes a suspended session; ``wait``: seconds the gateway waits for Ready. Idempotent."""
        return await self._call(calls.resume_session(self._settings, name, wait, namespace))

    async def wait_until_ready(
        self, name: str, *, timeout: float = 120.0, interval: float = 1.0, namespace: Optional[str] = None
    ) -> Session:
        poll = core.ReadyPoll(name, timeout, interval)
        while not poll.is_ready(session := await self.get_session(name, namespace=namespace)):
            await asyncio.sleep(interval)
        return session

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
        options = calls.ExecOptions(timeout, cwd, env, wait)
        return await self._call(calls.exec(self._settings, name, command, options, namespace))

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
        options = calls.ExecOptions(timeout, cwd, env, wait)
        return AsyncExecStream(await self._send(calls.exec_stream(self._settings, name, command, options, namespace)))

    async def write_file(
        self, name: str, path: str, data: core.Body, *, namespace: Optional[str] = None
    ) -> WrittenFile:
        return await self._call(calls.write_file(self._settings, name, path, data, namespace))

    async def read_file(self, name: str, path: str, *, namespace: Optional[str] = None) -> bytes:
        return await self._call(calls.read_file(self._settings, name, path, namespace))

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
        return await self._call(calls.start_process(self._settings, name, command, cwd=cwd, env=env, wait=wait,
                                                    namespace=namespace))

    async def list_processes(self, name: str, *, namespace: Optional[str] = None) -> list[ProcessInfo]:
        """The background processes of a session (running and exited), oldest first."""
        return await self._call(calls.list_processes(self._settings, name, namespace))

    async def get_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> ProcessInfo:
        """One background process (:class:`NotFoundError` ``process-not-found`` when there is none)."""
        return await self._call(calls.get_process(self._settings, name, process_id, namespace))

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
        return await self._call(calls.process_output(
            self._settings, name, process_id, stdout_offset=stdout_offset, stderr_offset=stderr_offset,
            max_bytes=max_bytes, namespace=namespace,
        ))

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
        request = calls.follow_process(self._settings, name, process_id, stdout_offset=stdout_offset,
                                       stderr_offset=stderr_offset, timeout=timeout, namespace=namespace)
        return AsyncProcessFollow(await self._send(request), core.FollowState(stdout_offset, stderr_offset))

    async def signal_process(
        self, name: str, process_id: str, signal: str = "SIGTERM", *, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Sends a signal to the process's group (default SIGTERM); never retried.

        Allowed: SIGHUP SIGINT SIGQUIT SIGKILL SIGTERM SIGUSR1 SIGUSR2 SIGSTOP SIGCONT (others:
        :class:`InvalidRequestError` ``signal-not-allowed``). The answer may still say running:
        :meth:`wait_process` for the exit.
        """
        return await self._call(calls.signal_process(self._settings, name, process_id, signal, namespace))

    async def wait_process(
        self, name: str, process_id: str, *, timeout: int = 30, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Waits up to ``timeout`` seconds (at most 300) for the exit; ``state`` says whether it came."""
        return await self._call(calls.wait_process(self._settings, name, process_id, timeout, namespace))

    async def remove_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> None:
        """Removes an exited process (:class:`ConflictError` ``process-running`` while it runs). Retried;
        a 404 after a retried attempt counts as done (that attempt arrived)."""
        await self._delete(calls.remove_process(self._settings, name, process_id, namespace))

    # -- code interpreter and file watching ---------------------------------------------------

    async def run_code(
        self,
        name: str,
        code: str,
        *,
        context: Optional[str] = None,
        timeout: Optional[int] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> CodeResult:
        """Runs Python in a code context of the session (a Jupyter kernel, started on first use;
        variables persist between runs) and returns the whole run: ``stdout``, ``stderr``,
        ``outputs`` (results and displays in every MIME type: charts as base64 ``image/png``),
        ``error`` with its traceback, ``status``. Never retried. ``timeout``: seconds before the
        code is interrupted (default 60, at most 300); the context stays usable."""
        return await self._call(code_calls.run_code(self._settings, name, code, context=context, timeout=timeout,
                                              wait=wait, namespace=namespace))

    async def run_code_stream(
        self,
        name: str,
        code: str,
        *,
        context: Optional[str] = None,
        timeout: Optional[int] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> AsyncCodeStream:
        """Runs code and streams its events (dicts; the last one ``end``); see :class:`AsyncCodeStream`."""
        request = code_calls.run_code_stream(self._settings, name, code, context=context, timeout=timeout,
                                             wait=wait, namespace=namespace)
        return AsyncCodeStream(await self._send(request))

    async def list_code_contexts(self, name: str, *, namespace: Optional[str] = None) -> list[CodeContext]:
        """The code contexts of a session."""
        return await self._call(code_calls.list_code_contexts(self._settings, name, namespace))

    async def create_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Starts a code context now (a run starts it otherwise); an existing one is returned."""
        return await self._call(code_calls.create_code_context(self._settings, name, context, namespace))

    async def interrupt_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Interrupts the running code of a context (KeyboardInterrupt in Python)."""
        return await self._call(code_calls.code_context_action(self._settings, name, context, "interrupt", namespace))

    async def restart_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Restarts the kernel of a context: every variable is gone."""
        return await self._call(code_calls.code_context_action(self._settings, name, context, "restart", namespace))

    async def delete_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> None:
        """Removes a code context."""
        await self._delete(code_calls.delete_code_context(self._settings, name, context, namespace))

    async def watch(
        self,
        name: str,
        path: Optional[str] = None,
        *,
        recursive: bool = False,
        timeout: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> AsyncWatch:
        """Follows changes under a workspace directory; see :class:`AsyncWatch`. ``timeout``: seconds
        before the gateway ends it with reason ``timeout`` (default 300, at most 3600)."""
        request = code_calls.watch(self._settings, name, path=path, recursive=recursive, timeout=timeout,
                                   namespace=namespace)
        return AsyncWatch(await self._send(request))

    # -- snapshots and forks (docs/snapshots.md) -------------------------------------------

    async def snapshot(
        self, session: str, *, name: Optional[str] = None, ttl_seconds_after_ready: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> Snapshot:
        """Takes a snapshot of a session's /workspace; answers at once (see :meth:`wait_until_snapshot_ready`)."""
        return await self._call(snapshot_calls.create_snapshot(self._settings, session, name, ttl_seconds_after_ready,
                                                         namespace))

    async def get_snapshot(self, name: str, *, namespace: Optional[str] = None) -> Snapshot:
        """One snapshot."""
        return await self._call(snapshot_calls.get_snapshot(self._settings, name, namespace))

    async def list_snapshots(self, *, namespace: Optional[str] = None) -> list[Snapshot]:
        """The snapshots of a namespace, sorted by name."""
        return await self._call(snapshot_calls.list_snapshots(self._settings, namespace))

    async def delete_snapshot(self, name: str, *, namespace: Optional[str] = None) -> None:
        """Deletes a snapshot and its stored data."""
        await self._delete(snapshot_calls.delete_snapshot(self._settings, name, namespace))

    async def wait_until_snapshot_ready(
        self, name: str, *, timeout: float = 300.0, interval: float = 1.0, namespace: Optional[str] = None
    ) -> Snapshot:
        """Polls until the snapshot is Ready; raises when it failed or after ``timeout``."""
        poll = snapshot_calls.SnapshotPoll(name, timeout)
        while not poll.is_ready(snap := await self.get_snapshot(name, namespace=namespace)):
            await asyncio.sleep(interval)
        return snap

    async def fork(
        self, session: str, count: int = 1, *, names: Optional[list[str]] = None,
        ttl_seconds_after_ready: Optional[int] = None, namespace: Optional[str] = None,
    ) -> ForkResult:
        """Forks a session: a snapshot of its /workspace and ``count`` new sessions started from it.

        Each new session has the source's image and settings and becomes ready once its copy is
        verified against the snapshot's digest. Never retried (it creates).
        """
        return await self._call(snapshot_calls.fork(self._settings, session, count, names, ttl_seconds_after_ready,
                                              namespace))

    # -- I/O (as Client's, awaited) ---------------------------------------------------------

    async def _call(self, call: calls.Call[T]) -> T:
        response = await self._send(call.request)
        return call.decode(calls.Answer(response.status_code, await _read_bounded(response, core.MAX_RESPONSE_BYTES)))

    async def _delete(self, request: calls.Request) -> None:
        retry = core.Retry(self._settings, request.idempotent)
        try:
            await (await self._send(request, retry)).aclose()
        except NotFoundError:
            if not retry.retried:
                raise

    async def _send(self, request: calls.Request, retry: Optional[core.Retry] = None) -> httpx.Response:
        built = self._http.build_request(**request.build_args())
        retry = retry or core.Retry(self._settings, request.idempotent)
        while True:
            try:
                return await self._attempt(built)
            except (httpx.TransportError, APIError) as exc:
                await asyncio.sleep(retry.after(exc))

    async def _attempt(self, request: httpx.Request) -> httpx.Response:
        response = await self._http.send(request, stream=True)
        if response.is_success:
            return response
        body = await _read_bounded(response, core.ERROR_BODY_BYTES, strict=False)
        raise core.problem_error(response.status_code, response.headers, body)


class _AsyncStream(_AsyncClosing, Generic[E]):
    """An NDJSON answer read as it comes, decoded by its state; closed at the end of the loop."""

    def __init__(self, response: httpx.Response, state: core.StreamState[E]) -> None:
        self._response = response
        self._state = state

    async def __aiter__(self) -> AsyncIterator[E]:
        try:
            async for raw in self._response.aiter_bytes():
                for event in self._state.take(raw):
                    yield event
                if self._state.ended:
                    return
            for event in self._state.take_rest():
                yield event
        except httpx.TransportError as exc:
            raise ProtocolError(f"the {self._state.label} broke off: {exc}") from exc
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


class AsyncExecStream(_AsyncStream[OutputChunk], core.ExecStreamView):
    """The output of a streaming exec: ``async for chunk in stream``, then :attr:`exit_code`."""

    def __init__(self, response: httpx.Response) -> None:
        self._exec = core.ExecStreamState()
        super().__init__(response, self._exec)


class AsyncProcessFollow(_AsyncStream[ProcessEvent], core.FollowView):
    """The output of a followed background process: ``async for event in follow`` (see
    :class:`~sandbox_platform.ProcessFollow`), an async context manager."""

    def __init__(self, response: httpx.Response, state: core.FollowState) -> None:
        super().__init__(response, state)
        self._follow = state

    @property
    def exit(self) -> Optional[ProcessExitEvent]:
        """The exit event, once seen (None after a follow that reached its timeout)."""
        return self._follow.exit


async def _read_bounded(response: httpx.Response, limit: int, *, strict: bool = True) -> bytes:
    body = core.BoundedBody(limit, strict=strict)
    try:
        async for chunk in response.aiter_bytes():
            if body.add(chunk):
                break
    finally:
        await response.aclose()
    return body.value()


class AsyncCodeStream(_AsyncStream[CodeEvent]):
    """The events of a streamed run: ``async for event in run`` (see
    :class:`~sandbox_platform.CodeStream`), an async context manager."""

    def __init__(self, response: httpx.Response) -> None:
        self._code = code_calls.CodeStreamState()
        super().__init__(response, self._code)

    @property
    def end(self) -> Optional[CodeEvent]:
        """The end event, once seen."""
        return self._code.end


class AsyncWatch(_AsyncStream[WatchEvent]):
    """The lines of a watch: ``async for change in watch`` (see :class:`~sandbox_platform.Watch`),
    an async context manager."""

    def __init__(self, response: httpx.Response) -> None:
        self._watch = code_calls.WatchState()
        super().__init__(response, self._watch)

    @property
    def end_reason(self) -> Optional[str]:
        """Why the watch ended."""
        return self._watch.end_reason
