"""The synchronous client: the I/O half of each call (the calls themselves: ``_calls``)."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Generic, Iterator, Mapping, Optional, TypeVar

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
_Self = TypeVar("_Self", bound="_Closing")


class _Closing:
    """A context manager whose exit calls :meth:`close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


class Client(_Closing):
    """Synchronous client of the sandbox-platform gateway.

    ``base_url``, ``api_key`` and ``namespace`` default to ``SANDBOX_URL``, ``SANDBOX_KEY`` and
    ``SANDBOX_NAMESPACE``. Use it as a context manager (or call :meth:`close`) to release its
    connections::

        with Client() as client:
            client.create_session("demo")
            print(client.exec("demo", "echo hi").stdout)
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        namespace: Optional[str] = None,
        timeout: float = 150.0,
        max_retries: int = 2,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self._settings = core.resolve_settings(base_url, api_key, namespace, timeout, max_retries)
        self._http = httpx.Client(**core.http_client_args(self._settings), transport=transport)

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
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
        """Creates the session, or returns the one of that name (``created`` tells which).

        With a name the call is idempotent and retried; without one the gateway generates a name
        (``sbx-...``), so it is not. ``pool`` names a SandboxPool (warm pool): the session is bound
        to one of its running Pods (cold from its template when none is available); the pool
        decides the sandbox, so ``image``, ``env``, ``exec_transport`` and ``persistent_workspace``
        cannot be given with it.
        """
        return self._call(calls.create_session(
            self._settings, name, image=image, env=env, idle_timeout=idle_timeout, max_lifetime=max_lifetime,
            shutdown_policy=shutdown_policy, exec_transport=exec_transport,
            persistent_workspace=persistent_workspace, pool=pool, namespace=namespace,
        ))

    def get_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        return self._call(calls.get_session(self._settings, name, namespace))

    def list_sessions(self, *, namespace: Optional[str] = None) -> list[Session]:
        """The sessions of a namespace, sorted by name."""
        return self._call(calls.list_sessions(self._settings, namespace))

    def delete_session(self, name: str, *, namespace: Optional[str] = None) -> None:
        """Deletes a session; a 404 after a retried attempt counts as done (that attempt arrived)."""
        self._delete(calls.delete_session(self._settings, name, namespace))

    def suspend_session(self, name: str, *, namespace: Optional[str] = None) -> Session:
        """Suspends a session: its Pod goes; its workspace, Secret and token stay. Idempotent (retried).

        The next exec or file call resumes it, as does :meth:`resume_session`.
        """
        return self._call(calls.suspend_session(self._settings, name, namespace))

    def resume_session(self, name: str, *, wait: Optional[int] = None, namespace: Optional[str] = None) -> Session:
        """Resumes a suspended session (a new Pod on the same workspace). Idempotent (retried).

        ``wait``: seconds the gateway waits for it to be Ready before answering (default: answer at
        once); :class:`UnavailableError` (``session-not-ready``) when it is not Ready by then.
        """
        return self._call(calls.resume_session(self._settings, name, wait, namespace))

    def wait_until_ready(
        self, name: str, *, timeout: float = 120.0, interval: float = 1.0, namespace: Optional[str] = None
    ) -> Session:
        """Polls until the session is Ready; APITimeoutError (with the last reason) after ``timeout``."""
        poll = core.ReadyPoll(name, timeout, interval)
        while not poll.is_ready(session := self.get_session(name, namespace=namespace)):
            time.sleep(interval)
        return session

    # -- exec -------------------------------------------------------------------------------

    def exec(
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
        """Runs a bash command line in the session. Never retried.

        ``timeout``: seconds before the command is killed (gateway default 60); ``wait``: seconds
        to wait for a session that is not Ready yet (gateway default 30).
        """
        options = calls.ExecOptions(timeout, cwd, env, wait)
        return self._call(calls.exec(self._settings, name, command, options, namespace))

    def exec_stream(
        self,
        name: str,
        command: str,
        *,
        timeout: Optional[int] = None,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> ExecStream:
        """Runs a command and streams its output; see :class:`ExecStream`. Never retried."""
        options = calls.ExecOptions(timeout, cwd, env, wait)
        return ExecStream(self._send(calls.exec_stream(self._settings, name, command, options, namespace)))

    # -- files ------------------------------------------------------------------------------

    def write_file(
        self, name: str, path: str, data: core.Body, *, namespace: Optional[str] = None
    ) -> WrittenFile:
        """Uploads bytes (or UTF-8 text) to a path relative to /workspace; atomic replace, retried."""
        return self._call(calls.write_file(self._settings, name, path, data, namespace))

    def read_file(self, name: str, path: str, *, namespace: Optional[str] = None) -> bytes:
        """Downloads a workspace file's bytes."""
        return self._call(calls.read_file(self._settings, name, path, namespace))

    # -- background processes ---------------------------------------------------------------

    def start_process(
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
        return self._call(calls.start_process(self._settings, name, command, cwd=cwd, env=env, wait=wait,
                                              namespace=namespace))

    def list_processes(self, name: str, *, namespace: Optional[str] = None) -> list[ProcessInfo]:
        """The background processes of a session (running and exited), oldest first."""
        return self._call(calls.list_processes(self._settings, name, namespace))

    def get_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> ProcessInfo:
        """One background process (:class:`NotFoundError` ``process-not-found`` when there is none)."""
        return self._call(calls.get_process(self._settings, name, process_id, namespace))

    def process_output(
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
        return self._call(calls.process_output(self._settings, name, process_id, stdout_offset=stdout_offset,
                                               stderr_offset=stderr_offset, max_bytes=max_bytes, namespace=namespace))

    def follow_process(
        self,
        name: str,
        process_id: str,
        *,
        stdout_offset: Optional[int] = None,
        stderr_offset: Optional[int] = None,
        timeout: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> ProcessFollow:
        """Follows a process's output; see :class:`ProcessFollow`. A read: retried before it answers.

        ``timeout``: seconds before the gateway ends the follow without an exit event (default 60,
        at most 300): follow again from :attr:`ProcessFollow.stdout_offset` / ``stderr_offset``.
        """
        request = calls.follow_process(self._settings, name, process_id, stdout_offset=stdout_offset,
                                       stderr_offset=stderr_offset, timeout=timeout, namespace=namespace)
        return ProcessFollow(self._send(request), core.FollowState(stdout_offset, stderr_offset))

    def signal_process(
        self, name: str, process_id: str, signal: str = "SIGTERM", *, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Sends a signal to the process's group (default SIGTERM); never retried.

        Allowed: SIGHUP SIGINT SIGQUIT SIGKILL SIGTERM SIGUSR1 SIGUSR2 SIGSTOP SIGCONT (others:
        :class:`InvalidRequestError` ``signal-not-allowed``). The answer may still say running:
        :meth:`wait_process` for the exit.
        """
        return self._call(calls.signal_process(self._settings, name, process_id, signal, namespace))

    def wait_process(
        self, name: str, process_id: str, *, timeout: int = 30, namespace: Optional[str] = None
    ) -> ProcessInfo:
        """Waits up to ``timeout`` seconds (at most 300) for the exit; ``state`` says whether it came."""
        return self._call(calls.wait_process(self._settings, name, process_id, timeout, namespace))

    def remove_process(self, name: str, process_id: str, *, namespace: Optional[str] = None) -> None:
        """Removes an exited process (:class:`ConflictError` ``process-running`` while it runs). Retried;
        a 404 after a retried attempt counts as done (that attempt arrived)."""
        self._delete(calls.remove_process(self._settings, name, process_id, namespace))

    # -- code interpreter and file watching ---------------------------------------------------

    def run_code(
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
        return self._call(code_calls.run_code(self._settings, name, code, context=context, timeout=timeout,
                                              wait=wait, namespace=namespace))

    def run_code_stream(
        self,
        name: str,
        code: str,
        *,
        context: Optional[str] = None,
        timeout: Optional[int] = None,
        wait: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> CodeStream:
        """Runs code and streams its events (dicts; the last one ``end``); see :class:`CodeStream`."""
        request = code_calls.run_code_stream(self._settings, name, code, context=context, timeout=timeout,
                                             wait=wait, namespace=namespace)
        return CodeStream(self._send(request))

    def list_code_contexts(self, name: str, *, namespace: Optional[str] = None) -> list[CodeContext]:
        """The code contexts of a session."""
        return self._call(code_calls.list_code_contexts(self._settings, name, namespace))

    def create_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Starts a code context now (a run starts it otherwise); an existing one is returned."""
        return self._call(code_calls.create_code_context(self._settings, name, context, namespace))

    def interrupt_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Interrupts the running code of a context (KeyboardInterrupt in Python)."""
        return self._call(code_calls.code_context_action(self._settings, name, context, "interrupt", namespace))

    def restart_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> CodeContext:
        """Restarts the kernel of a context: every variable is gone."""
        return self._call(code_calls.code_context_action(self._settings, name, context, "restart", namespace))

    def delete_code_context(self, name: str, context: str, *, namespace: Optional[str] = None) -> None:
        """Removes a code context."""
        self._delete(code_calls.delete_code_context(self._settings, name, context, namespace))

    def watch(
        self,
        name: str,
        path: Optional[str] = None,
        *,
        recursive: bool = False,
        timeout: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> Watch:
        """Follows changes under a workspace directory; see :class:`Watch`. ``timeout``: seconds
        before the gateway ends it with reason ``timeout`` (default 300, at most 3600)."""
        request = code_calls.watch(self._settings, name, path=path, recursive=recursive, timeout=timeout,
                                   namespace=namespace)
        return Watch(self._send(request))

    # -- snapshots and forks (docs/snapshots.md) -------------------------------------------

    def snapshot(
        self, session: str, *, name: Optional[str] = None, ttl_seconds_after_ready: Optional[int] = None,
        namespace: Optional[str] = None,
    ) -> Snapshot:
        """Takes a snapshot of a session's /workspace; answers at once (see :meth:`wait_until_snapshot_ready`)."""
        return self._call(snapshot_calls.create_snapshot(self._settings, session, name, ttl_seconds_after_ready,
                                                         namespace))

    def get_snapshot(self, name: str, *, namespace: Optional[str] = None) -> Snapshot:
        """One snapshot."""
        return self._call(snapshot_calls.get_snapshot(self._settings, name, namespace))

    def list_snapshots(self, *, namespace: Optional[str] = None) -> list[Snapshot]:
        """The snapshots of a namespace, sorted by name."""
        return self._call(snapshot_calls.list_snapshots(self._settings, namespace))

    def delete_snapshot(self, name: str, *, namespace: Optional[str] = None) -> None:
        """Deletes a snapshot and its stored data."""
        self._delete(snapshot_calls.delete_snapshot(self._settings, name, namespace))

    def wait_until_snapshot_ready(
        self, name: str, *, timeout: float = 300.0, interval: float = 1.0, namespace: Optional[str] = None
    ) -> Snapshot:
        """Polls until the snapshot is Ready; raises when it failed or after ``timeout``."""
        poll = snapshot_calls.SnapshotPoll(name, timeout)
        while not poll.is_ready(snap := self.get_snapshot(name, namespace=namespace)):
            time.sleep(interval)
        return snap

    def fork(
        self, session: str, count: int = 1, *, names: Optional[list[str]] = None,
        ttl_seconds_after_ready: Optional[int] = None, namespace: Optional[str] = None,
    ) -> ForkResult:
        """Forks a session: a snapshot of its /workspace and ``count`` new sessions started from it.

        Each new session has the source's image and settings and becomes ready once its copy is
        verified against the snapshot's digest. Never retried (it creates).
        """
        return self._call(snapshot_calls.fork(self._settings, session, count, names, ttl_seconds_after_ready,
                                              namespace))

    # -- I/O --------------------------------------------------------------------------------

    def _call(self, call: calls.Call[T]) -> T:
        """Sends the call and decodes its answer, read whole within ``MAX_RESPONSE_BYTES``."""
        response = self._send(call.request)
        return call.decode(calls.Answer(response.status_code, _read_bounded(response, core.MAX_RESPONSE_BYTES)))

    def _delete(self, request: calls.Request) -> None:
        """Sends a delete and closes its answer unread; a 404 after a retried attempt counts as done."""
        retry = core.Retry(self._settings, request.idempotent)
        try:
            self._send(request, retry).close()
        except NotFoundError:
            if not retry.retried:
                raise

    def _send(self, request: calls.Request, retry: Optional[core.Retry] = None) -> httpx.Response:
        """Sends with the retry rule; returns a 2xx streaming response (the caller reads and closes it)."""
        built = self._http.build_request(**request.build_args())
        retry = retry or core.Retry(self._settings, request.idempotent)
        while True:
            try:
                return self._attempt(built)
            except (httpx.TransportError, APIError) as exc:
                time.sleep(retry.after(exc))

    def _attempt(self, request: httpx.Request) -> httpx.Response:
        response = self._http.send(request, stream=True)
        if response.is_success:
            return response
        body = _read_bounded(response, core.ERROR_BODY_BYTES, strict=False)
        raise core.problem_error(response.status_code, response.headers, body)


class _Stream(_Closing, Generic[E]):
    """An NDJSON answer read as it comes, decoded by its state; closed at the end of the loop."""

    def __init__(self, response: httpx.Response, state: core.StreamState[E]) -> None:
        self._response = response
        self._state = state

    def __iter__(self) -> Iterator[E]:
        try:
            for raw in self._response.iter_bytes():
                yield from self._state.take(raw)
                if self._state.ended:
                    return
            yield from self._state.take_rest()
        except httpx.TransportError as exc:
            raise ProtocolError(f"the {self._state.label} broke off: {exc}") from exc
        finally:
            self._response.close()

    def close(self) -> None:
        self._response.close()


class ExecStream(_Stream[OutputChunk], core.ExecStreamView):
    """The output of a streaming exec, as an iterator of :class:`OutputChunk` and a context manager.

    After the loop, :attr:`exit` (and :attr:`exit_code`) tell how the command ended; a stream that
    ends without its exit event raises :class:`ProtocolError`. Leaving the ``with`` block early
    closes the connection::

        with client.exec_stream("demo", "make test") as stream:
            for chunk in stream:
                sys.stdout.buffer.write(chunk.data)
        print(stream.exit_code)
    """

    def __init__(self, response: httpx.Response) -> None:
        self._exec = core.ExecStreamState()
        super().__init__(response, self._exec)


class ProcessFollow(_Stream[ProcessEvent], core.FollowView):
    """The output of a followed background process: an iterator of events and a context manager.

    Yields :class:`ProcessOutputEvent` as output comes, then a :class:`ProcessExitEvent` when the
    process ended. A follow that reaches its timeout ends without one (:attr:`exit` stays None):
    follow again from :attr:`stdout_offset` / :attr:`stderr_offset`. Leaving the ``with`` block
    early closes the connection; lines are bounded like the exec stream's::

        with client.follow_process("demo", proc.id) as follow:
            for event in follow:
                if isinstance(event, ProcessOutputEvent):
                    sys.stdout.buffer.write(event.data)
        print(follow.exit)
    """

    def __init__(self, response: httpx.Response, state: core.FollowState) -> None:
        super().__init__(response, state)
        self._follow = state

    @property
    def exit(self) -> Optional[ProcessExitEvent]:
        """The exit event, once seen."""
        return self._follow.exit


def _read_bounded(response: httpx.Response, limit: int, *, strict: bool = True) -> bytes:
    """Reads a streaming response's body, refusing more than ``limit`` bytes (hostile input)."""
    body = core.BoundedBody(limit, strict=strict)
    try:
        for chunk in response.iter_bytes():
            if body.add(chunk):
                break
    finally:
        response.close()
    return body.value()


class CodeStream(_Stream[CodeEvent]):
    """The events of a streamed run (dicts with ``type``: stdout, stderr, result, display, error,
    then end), an iterator and a context manager; :attr:`end` is the end event after the loop::

        with client.run_code_stream("demo", "for i in range(3): print(i)") as run:
            for event in run:
                if event["type"] == "stdout":
                    print(event["text"], end="")
        print(run.end["status"])
    """

    def __init__(self, response: httpx.Response) -> None:
        self._code = code_calls.CodeStreamState()
        super().__init__(response, self._code)

    @property
    def end(self) -> Optional[CodeEvent]:
        """The end event, once seen."""
        return self._code.end


class Watch(_Stream[WatchEvent]):
    """The lines of a watch (dicts with ``type``: watching, create, modify, delete, rename,
    overflow, then end), an iterator and a context manager; leaving the ``with`` block stops it::

        with client.watch("demo", "out", recursive=True) as changes:
            for change in changes:
                print(change["type"], change.get("path"))
    """

    def __init__(self, response: httpx.Response) -> None:
        self._watch = code_calls.WatchState()
        super().__init__(response, self._watch)

    @property
    def end_reason(self) -> Optional[str]:
        """Why the watch ended (timeout, session-suspended, session-deleted, directory-gone ...)."""
        return self._watch.end_reason
