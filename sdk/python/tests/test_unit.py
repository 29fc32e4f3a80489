"""The clients against scripted answers (httpx.MockTransport): errors, retries, streams, settings."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, Callable, Union

import httpx
import pytest

import sandbox_platform as sp
from sandbox_platform import _core

SESSION = {"name": "s1", "namespace": "ns", "uid": "u1", "ready": True, "reason": "SandboxReady",
           "message": "", "execTransport": "Agent"}
EXIT = {"type": "exit", "exitCode": 3, "durationMs": 1, "truncated": False, "timedOut": False, "shellReset": False}

Step = Union[httpx.Response, Exception]


class Script:
    """Answers requests with the next step and records them."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def problem(status: int, slug: str, retry_after: str | None = None, **extra: Any) -> httpx.Response:
    headers = {"content-type": "application/problem+json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    body = {"type": f"https://sandbox.dev/problems/{slug}", "title": f"title {slug}", "status": status, **extra}
    return httpx.Response(status, headers=headers, json=body)


def refused() -> httpx.ConnectError:
    return httpx.ConnectError("[Errno 111] Connection refused")


def client(steps: list[Step], **kw: Any) -> tuple[sp.Client, Script]:
    script = Script(steps)
    return sp.Client("http://gw.test", "k-1", transport=httpx.MockTransport(script), **kw), script


def ndjson(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_core, "_MAX_RETRY_DELAY", 0.01)


class TestRequests:
    def test_sends_key_namespace_and_encoded_paths(self) -> None:
        c, script = client([httpx.Response(200, json=SESSION), httpx.Response(201, json={"path": "a b/c", "size": 2})],
                           namespace="team-a")
        assert c.get_session("s1").reason == "SandboxReady"
        c.write_file("s1", "a b/c", b"\x00\xff", namespace="team-b")
        first, second = script.requests
        assert first.headers["authorization"] == "Bearer k-1"
        assert str(first.url) == "http://gw.test/v1/sessions/s1?namespace=team-a"
        assert second.url.raw_path == b"/v1/sessions/s1/files/a%20b/c?namespace=team-b"
        assert second.content == b"\x00\xff"

    def test_create_or_get_reports_created_and_maps_fields(self) -> None:
        c, script = client([httpx.Response(201, json=SESSION), httpx.Response(200, json=SESSION)])
        assert c.create_session("s1", idle_timeout=60, env={"A": "1"}).created is True
        assert c.create_session("s1").created is False
        assert json.loads(script.requests[0].content) == {"name": "s1", "idleTimeoutSeconds": 60, "env": {"A": "1"}}

    def test_settings_from_the_environment_and_refusals(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("SANDBOX_URL", "http://env-gw/")
        monkeypatch.setenv("SANDBOX_KEY", "env-key")
        monkeypatch.setenv("SANDBOX_NAMESPACE", "env-ns")
        with sp.Client() as c:
            assert c._settings.base_url == "http://env-gw"
            assert c._settings.namespace == "env-ns"
        monkeypatch.delenv("SANDBOX_KEY")
        with pytest.raises(ValueError, match="no API key"):
            sp.Client()
        with pytest.raises(ValueError, match="http\\(s\\) URL"):
            sp.Client("gw:8080", "k")

    @pytest.mark.parametrize("path", ["../etc/passwd", "a/./b", "a/.."])
    def test_refuses_dot_segments_before_sending(self, path: str) -> None:
        c, script = client([])
        with pytest.raises(sp.PermissionDeniedError) as info:
            c.read_file("s1", path)
        assert (info.value.code, info.value.status) == ("path-forbidden", 403)
        assert script.requests == []

    def test_refuses_an_invalid_session_name_before_any_call(self) -> None:
        c, script = client([])
        with pytest.raises(ValueError, match="invalid session name"):
            c.exec("Bad_Name", "true")
        assert script.requests == []


class TestSuspendResume:
    def test_posts_suspend_and_resume_with_wait_and_reads_the_session(self) -> None:
        suspended = {**SESSION, "ready": False, "reason": "Suspended", "suspended": True, "persistentWorkspace": True}
        c, script = client([httpx.Response(200, json=suspended), httpx.Response(200, json=SESSION)], namespace="ns")
        s = c.suspend_session("s1")
        assert (s.suspended, s.persistent_workspace, s.reason) == (True, True, "Suspended")
        assert c.resume_session("s1", wait=20).suspended is False
        first, second = script.requests
        assert (first.method, str(first.url), json.loads(first.content)) == (
            "POST", "http://gw.test/v1/sessions/s1/suspend?namespace=ns", {})
        assert (str(second.url), json.loads(second.content)) == (
            "http://gw.test/v1/sessions/s1/resume?namespace=ns", {"waitSeconds": 20})

    def test_both_are_retried(self) -> None:
        c, script = client([refused(), httpx.Response(200, json=SESSION), refused(), httpx.Response(200, json=SESSION)])
        c.suspend_session("s1")
        c.resume_session("s1")
        assert [r.url.path for r in script.requests] == [
            "/v1/sessions/s1/suspend", "/v1/sessions/s1/suspend", "/v1/sessions/s1/resume", "/v1/sessions/s1/resume"]

    def test_a_resume_not_ready_in_time_is_unavailable_with_the_reason(self) -> None:
        c, _ = client([problem(503, "session-not-ready", reason="PodPending")], max_retries=0)
        with pytest.raises(sp.UnavailableError) as info:
            c.resume_session("s1", wait=1)
        assert (info.value.code, info.value.reason) == ("session-not-ready", "PodPending")

    def test_create_sends_persistent_workspace_and_suspend_policy(self) -> None:
        c, script = client([httpx.Response(201, json=SESSION)])
        c.create_session("s1", persistent_workspace=True, shutdown_policy="Suspend")
        assert json.loads(script.requests[0].content) == {
            "name": "s1", "persistentWorkspace": True, "shutdownPolicy": "Suspend"}

    @pytest.mark.anyio
    async def test_async_suspend_and_resume(self) -> None:
        script = Script([httpx.Response(200, json=SESSION), httpx.Response(200, json=SESSION)])
        async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
            await c.suspend_session("s1")
            await c.resume_session("s1", wait=5)
        assert [r.url.path for r in script.requests] == ["/v1/sessions/s1/suspend", "/v1/sessions/s1/resume"]
        assert json.loads(script.requests[1].content) == {"waitSeconds": 5}


class TestErrors:
    @pytest.mark.parametrize(
        ("response", "cls", "code"),
        [
            (problem(401, "unauthorized"), sp.AuthenticationError, "unauthorized"),
            (problem(403, "forbidden"), sp.PermissionDeniedError, "forbidden"),
            (problem(404, "session-not-found", detail="no session s1"), sp.NotFoundError, "session-not-found"),
            (problem(410, "session-gone", reason="Deleted"), sp.SessionGoneError, "session-gone"),
            (problem(422, "policy-violation"), sp.PolicyViolationError, "policy-violation"),
            (problem(500, "internal"), sp.InternalServerError, "internal"),
            (problem(429, "rate-limited", retry_after="1"), sp.RateLimitError, "rate-limited"),
            (problem(403, "quota-exceeded"), sp.PermissionDeniedError, "quota-exceeded"),
            (problem(502, "agent-answer-too-large"), sp.UpstreamError, "agent-answer-too-large"),
            (problem(418, "teapot"), sp.APIError, "teapot"),
            (httpx.Response(502, text="<html>bad gateway</html>"), sp.UpstreamError, "http-502"),
        ],
    )
    def test_problem_answers_are_typed(self, response: httpx.Response, cls: type[sp.APIError], code: str) -> None:
        c, _ = client([response])
        with pytest.raises(cls) as info:
            c.get_session("s1")
        assert isinstance(info.value, sp.SandboxError)
        assert (info.value.code, info.value.status) == (code, response.status_code)

    def test_detail_reason_and_retry_after(self) -> None:
        c, _ = client([problem(503, "session-not-ready", retry_after="2", reason="PodPending", detail="not ready")])
        with pytest.raises(sp.UnavailableError) as info:
            c.exec("s1", "true")
        err = info.value
        assert (err.retry_after, err.reason, err.detail) == (2.0, "PodPending", "not ready")
        assert str(err) == "not ready (session-not-ready, HTTP 503)"

    def test_unreachable_gateway_is_a_connection_error(self) -> None:
        c, script = client([refused(), refused(), refused()])
        with pytest.raises(sp.APIConnectionError) as info:
            c.list_sessions()
        assert info.value.code == "connection-failed"
        assert str(info.value) == "cannot reach the gateway at http://gw.test: connection refused (ECONNREFUSED)"
        assert len(script.requests) == 3

    def test_oversized_and_invalid_answers_are_protocol_errors(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_core, "MAX_RESPONSE_BYTES", 10)
        c, _ = client([httpx.Response(200, content=b"x" * 11), httpx.Response(200, content=b"{nope")])
        with pytest.raises(sp.ProtocolError, match="larger than the limit of 10 bytes"):
            c.read_file("s1", "f")
        with pytest.raises(sp.ProtocolError, match="invalid JSON"):
            c.get_session("s1")

    def test_check_returncode(self) -> None:
        body = {"stdout": "", "stderr": "boom\n", "stdoutEncoding": "utf-8", "stderrEncoding": "utf-8",
                "exitCode": 2, "durationMs": 1, "truncated": False, "timedOut": False, "shellReset": False}
        c, _ = client([httpx.Response(200, json=body)])
        result = c.exec("s1", "false")
        assert not result.ok
        with pytest.raises(sp.CommandError) as info:
            result.check_returncode()
        assert (info.value.exit_code, info.value.stderr) == (2, "boom\n")


class TestRetries:
    def test_reads_retry_on_connection_failure_and_429_or_503_with_retry_after(self) -> None:
        c, script = client([refused(), problem(503, "gateway-not-ready", retry_after="0"),
                            problem(429, "rate-limited", retry_after="0"), httpx.Response(200, json=SESSION)],
                           max_retries=3)
        assert c.get_session("s1").name == "s1"
        assert len(script.requests) == 4

    @pytest.mark.parametrize("failure", [
        refused,
        lambda: problem(503, "shell-unavailable", retry_after="0"),
        lambda: problem(429, "concurrency-limited", retry_after="0"),
    ])
    def test_exec_is_never_retried(self, failure: Callable[[], Step]) -> None:
        c, script = client([failure(), httpx.Response(200, json={})])
        with pytest.raises(sp.SandboxError):
            c.exec("s1", "date >> log")
        assert len(script.requests) == 1
        c, script = client([failure(), httpx.Response(200, json={})])
        with pytest.raises(sp.SandboxError):
            c.exec_stream("s1", "date >> log")
        assert len(script.requests) == 1

    def test_create_is_retried_only_with_a_name(self) -> None:
        c, script = client([refused(), httpx.Response(201, json=SESSION)])
        assert c.create_session("s1").created
        assert len(script.requests) == 2
        c, script = client([refused(), httpx.Response(201, json=SESSION)])
        with pytest.raises(sp.APIConnectionError):
            c.create_session()
        assert len(script.requests) == 1

    def test_delete_404_after_a_retry_is_done_and_a_first_404_is_an_error(self) -> None:
        c, _ = client([refused(), problem(404, "session-not-found")])
        c.delete_session("s1")
        c, _ = client([problem(404, "session-not-found")])
        with pytest.raises(sp.NotFoundError):
            c.delete_session("s1")

    def test_max_retries_zero_turns_retries_off(self) -> None:
        c, script = client([refused(), httpx.Response(200, json=SESSION)], max_retries=0)
        with pytest.raises(sp.APIConnectionError):
            c.get_session("s1")
        assert len(script.requests) == 1


class TestStreams:
    def test_chunks_split_anywhere_then_the_exit_status(self) -> None:
        raw = ndjson({"type": "stdout", "data": "héllo\n", "encoding": "utf-8"},
                     {"type": "stderr", "data": "AP8=", "encoding": "base64"}, EXIT)

        def body() -> Iterator[bytes]:
            for i in range(len(raw)):
                yield raw[i:i + 1]

        c, _ = client([httpx.Response(200, content=body())])
        with c.exec_stream("s1", "x") as stream:
            chunks = list(stream)
        assert [(ch.stream, ch.data) for ch in chunks] == [("stdout", "héllo\n".encode()), ("stderr", b"\x00\xff")]
        assert stream.exit_code == 3

    def test_a_stream_without_exit_is_a_protocol_error(self) -> None:
        c, _ = client([httpx.Response(200, content=ndjson({"type": "stdout", "data": "a", "encoding": "utf-8"}))])
        stream = c.exec_stream("s1", "x")
        with pytest.raises(sp.ProtocolError, match="without an exit event"):
            list(stream)

    def test_an_overlong_line_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_core, "MAX_STREAM_LINE_BYTES", 100)
        c, _ = client([httpx.Response(200, content=b"a" * 500)])
        with pytest.raises(sp.ProtocolError, match="longer than 100 bytes"):
            list(c.exec_stream("s1", "x"))


class TestAsync:
    @pytest.mark.anyio
    async def test_the_same_rules_asynchronously(self) -> None:
        script = Script([refused(), httpx.Response(200, json=SESSION), refused()])
        async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
            assert (await c.get_session("s1")).name == "s1"
            with pytest.raises(sp.APIConnectionError):
                await c.exec("s1", "true")
        assert len(script.requests) == 3

    @pytest.mark.anyio
    async def test_async_stream(self) -> None:
        async def body() -> AsyncIterator[bytes]:
            yield ndjson({"type": "stdout", "data": "1\n", "encoding": "utf-8"})
            yield ndjson(EXIT)

        script = Script([httpx.Response(200, content=body()), problem(404, "session-not-found")])
        async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
            async with await c.exec_stream("s1", "x") as stream:
                data = [chunk.data async for chunk in stream]
            assert (data, stream.exit_code) == ([b"1\n"], 3)
            with pytest.raises(sp.NotFoundError):
                await c.get_session("s1")


PROC = {"id": "0123456789ab", "pid": 42, "command": "sleep 9", "state": "running", "startedAt": "2026-01-01T00:00:00Z",
        "stdout": {"size": 5, "dropped": 0}, "stderr": {"size": 0, "dropped": 0}}
EXITED = {**PROC, "state": "exited", "exitCode": 143, "signal": "SIGTERM", "exitedAt": "2026-01-01T00:00:09Z"}
OUT = {"process": PROC,
       "stdout": {"offset": 2, "nextOffset": 5, "skipped": 2, "data": "llo", "encoding": "utf-8"},
       "stderr": {"offset": 0, "nextOffset": 2, "skipped": 0, "data": "AP8=", "encoding": "base64"}}


class TestProcesses:
    def test_start_sends_the_body_and_reads_the_process(self) -> None:
        c, script = client([httpx.Response(201, json=PROC)], namespace="ns")
        p = c.start_process("s1", "sleep 9", cwd="sub", env={"A": "1"}, wait=5)
        assert (p.id, p.pid, p.state, p.running, p.exit_code, p.stdout.size) == (
            "0123456789ab", 42, "running", True, None, 5)
        req = script.requests[0]
        assert (req.method, str(req.url)) == ("POST", "http://gw.test/v1/sessions/s1/processes?namespace=ns")
        assert json.loads(req.content) == {"command": "sleep 9", "cwd": "sub", "env": {"A": "1"}, "waitSeconds": 5}

    def test_reads_send_their_queries_and_parse_the_answers(self) -> None:
        c, script = client([
            httpx.Response(200, json={"processes": [PROC, EXITED]}),
            httpx.Response(200, json=EXITED),
            httpx.Response(200, json=OUT),
            httpx.Response(200, json=EXITED),
        ])
        assert [p.state for p in c.list_processes("s1")] == ["running", "exited"]
        got = c.get_process("s1", "0123456789ab")
        assert (got.exit_code, got.signal, got.exited_at, got.running) == (143, "SIGTERM", "2026-01-01T00:00:09Z", False)
        out = c.process_output("s1", "0123456789ab", stdout_offset=0, max_bytes=3)
        assert (out.stdout.data, out.stdout.next_offset, out.stdout.skipped, out.stderr.data) == (b"llo", 5, 2, b"\x00\xff")
        assert c.wait_process("s1", "0123456789ab", timeout=7).state == "exited"
        assert [r.url.raw_path for r in script.requests] == [
            b"/v1/sessions/s1/processes",
            b"/v1/sessions/s1/processes/0123456789ab",
            b"/v1/sessions/s1/processes/0123456789ab/output?stdoutOffset=0&maxBytes=3",
            b"/v1/sessions/s1/processes/0123456789ab/wait?timeoutSeconds=7",
        ]

    def test_signal_posts_the_name_and_ids_are_encoded(self) -> None:
        c, script = client([httpx.Response(200, json=EXITED), problem(404, "process-not-found")])
        assert c.signal_process("s1", "0123456789ab", "SIGKILL").exit_code == 143
        assert json.loads(script.requests[0].content) == {"signal": "SIGKILL"}
        with pytest.raises(sp.NotFoundError) as info:
            c.get_process("s1", "../x")
        assert info.value.code == "process-not-found"
        assert script.requests[1].url.raw_path == b"/v1/sessions/s1/processes/..%2Fx"

    @pytest.mark.parametrize(
        ("response", "cls", "code"),
        [
            (problem(409, "process-running"), sp.ConflictError, "process-running"),
            (problem(409, "too-many-processes"), sp.ConflictError, "too-many-processes"),
            (problem(400, "signal-not-allowed"), sp.InvalidRequestError, "signal-not-allowed"),
            (problem(501, "not-supported"), sp.NotSupportedError, "not-supported"),
        ],
    )
    def test_process_problems_are_typed(self, response: httpx.Response, cls: type[sp.APIError], code: str) -> None:
        c, _ = client([response])
        with pytest.raises(cls) as info:
            c.remove_process("s1", "0123456789ab")
        assert info.value.code == code

    @pytest.mark.parametrize("failure", [
        refused,
        lambda: problem(503, "session-not-ready", retry_after="0"),
        lambda: problem(429, "rate-limited", retry_after="0"),
    ])
    def test_start_and_signal_are_never_retried(self, failure: Callable[[], Step]) -> None:
        c, script = client([failure(), httpx.Response(201, json=PROC)])
        with pytest.raises(sp.SandboxError):
            c.start_process("s1", "date >> log")
        assert len(script.requests) == 1
        c, script = client([failure(), httpx.Response(200, json=PROC)])
        with pytest.raises(sp.SandboxError):
            c.signal_process("s1", "0123456789ab")
        assert len(script.requests) == 1

    def test_reads_wait_follow_and_remove_are_retried(self) -> None:
        c, script = client([
            refused(), httpx.Response(200, json={"processes": []}),
            refused(), httpx.Response(200, json=PROC),
            refused(), httpx.Response(200, json=OUT),
            refused(), httpx.Response(200, json=EXITED),
            refused(), httpx.Response(200, content=ndjson({"type": "exit", "exitCode": 0})),
            refused(), httpx.Response(204),
        ])
        assert c.list_processes("s1") == []
        c.get_process("s1", "0123456789ab")
        c.process_output("s1", "0123456789ab")
        c.wait_process("s1", "0123456789ab")
        assert list(c.follow_process("s1", "0123456789ab")) == [sp.ProcessExitEvent(exit_code=0)]
        c.remove_process("s1", "0123456789ab")
        assert len(script.requests) == 12

    def test_remove_404_after_a_retry_is_done_and_a_first_404_is_an_error(self) -> None:
        c, _ = client([refused(), problem(404, "process-not-found")])
        c.remove_process("s1", "0123456789ab")
        c, _ = client([problem(404, "process-not-found")])
        with pytest.raises(sp.NotFoundError):
            c.remove_process("s1", "0123456789ab")

    def test_follow_yields_typed_events_split_anywhere_and_tracks_offsets(self) -> None:
        raw = ndjson({"type": "stdout", "offset": 0, "skipped": 0, "data": "héllo\n", "encoding": "utf-8"},
                     {"type": "stderr", "offset": 4, "skipped": 4, "data": "AP8=", "encoding": "base64"},
                     {"type": "exit", "exitCode": 137, "signal": "SIGKILL"},
                     {"type": "stdout", "offset": 99, "skipped": 0, "data": "after exit", "encoding": "utf-8"})

        def body() -> Iterator[bytes]:
            for i in range(len(raw)):
                yield raw[i:i + 1]

        c, script = client([httpx.Response(200, content=body())])
        with c.follow_process("s1", "0123456789ab", stderr_offset=4, timeout=5) as follow:
            events = list(follow)
        assert events == [
            sp.ProcessOutputEvent(stream="stdout", offset=0, skipped=0, data="héllo\n".encode()),
            sp.ProcessOutputEvent(stream="stderr", offset=4, skipped=4, data=b"\x00\xff"),
            sp.ProcessExitEvent(exit_code=137, signal="SIGKILL"),
        ]
        assert (follow.exit, follow.stdout_offset, follow.stderr_offset) == (
            sp.ProcessExitEvent(137, "SIGKILL"), 7, 6)
        assert script.requests[0].url.raw_path == (
            b"/v1/sessions/s1/processes/0123456789ab/output/stream?stderrOffset=4&timeoutSeconds=5")

    def test_a_follow_that_times_out_ends_without_exit_and_can_resume(self) -> None:
        c, _ = client([httpx.Response(200, content=ndjson(
            {"type": "stdout", "offset": 10, "skipped": 0, "data": "abc", "encoding": "utf-8"}))])
        follow = c.follow_process("s1", "0123456789ab", stdout_offset=10)
        assert [e.text for e in follow if isinstance(e, sp.ProcessOutputEvent)] == ["abc"]
        assert (follow.exit, follow.stdout_offset, follow.stderr_offset) == (None, 13, 0)

    @pytest.mark.parametrize("content", [
        b'{"type": "stdin", "data": "x"}\n',
        b"{nope\n",
        b'{"type": "stdout", "data": "x"}\n',           # no offset
        b'{"type": "stdout", "offset": 0, "data": "!!", "encoding": "base64"}\n',
        b'{"type": "exit"}\n',
    ])
    def test_bad_follow_lines_are_protocol_errors(self, content: bytes) -> None:
        c, _ = client([httpx.Response(200, content=content)])
        with pytest.raises(sp.ProtocolError):
            list(c.follow_process("s1", "0123456789ab"))

    def test_an_overlong_follow_line_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_core, "MAX_STREAM_LINE_BYTES", 100)
        c, _ = client([httpx.Response(200, content=b"a" * 500)])
        with pytest.raises(sp.ProtocolError, match="longer than 100 bytes"):
            list(c.follow_process("s1", "0123456789ab"))

    @pytest.mark.parametrize("body", [
        {"processes": [{**PROC, "state": "zombie"}]},
        {"processes": [{**PROC, "pid": None}]},
        {"items": []},
    ])
    def test_malformed_process_answers_are_protocol_errors(self, body: dict[str, Any]) -> None:
        c, _ = client([httpx.Response(200, json=body)])
        with pytest.raises(sp.ProtocolError):
            c.list_processes("s1")

    def test_refuses_a_bad_session_name_or_empty_id_before_any_call(self) -> None:
        c, script = client([])
        with pytest.raises(ValueError, match="invalid session name"):
            c.start_process("Bad_Name", "true")
        with pytest.raises(ValueError, match="invalid process id"):
            c.get_process("s1", "")
        assert script.requests == []

    @pytest.mark.anyio
    async def test_async_processes(self) -> None:
        async def stream() -> AsyncIterator[bytes]:
            yield ndjson({"type": "stdout", "offset": 0, "skipped": 0, "data": "1\n", "encoding": "utf-8"})
            yield ndjson({"type": "exit", "exitCode": 0})

        script = Script([
            refused(),                                                       # start: not retried
            httpx.Response(201, json=PROC),
            refused(), httpx.Response(200, json={"processes": [PROC]}),      # list: retried
            httpx.Response(200, json=OUT),
            httpx.Response(200, content=stream()),
            httpx.Response(200, json=EXITED),
            httpx.Response(200, json=EXITED),
            httpx.Response(200, json=EXITED),
            httpx.Response(204),
        ])
        async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
            with pytest.raises(sp.APIConnectionError):
                await c.start_process("s1", "x")
            p = await c.start_process("s1", "x", wait=3)
            assert [q.id for q in await c.list_processes("s1")] == [p.id]
            assert (await c.process_output("s1", p.id, stderr_offset=1)).stderr.data == b"\x00\xff"
            async with await c.follow_process("s1", p.id, timeout=9) as follow:
                events = [e async for e in follow]
            assert events[-1] == sp.ProcessExitEvent(0) and follow.stdout_offset == 2
            assert (await c.signal_process("s1", p.id, "SIGTERM")).signal == "SIGTERM"
            assert (await c.wait_process("s1", p.id, timeout=2)).state == "exited"
            assert (await c.get_process("s1", p.id)).exit_code == 143
            await c.remove_process("s1", p.id)
        assert [(r.method, r.url.raw_path) for r in script.requests][-6:] == [
            ("GET", b"/v1/sessions/s1/processes/0123456789ab/output?stderrOffset=1"),
            ("GET", b"/v1/sessions/s1/processes/0123456789ab/output/stream?timeoutSeconds=9"),
            ("POST", b"/v1/sessions/s1/processes/0123456789ab/signal"),
            ("GET", b"/v1/sessions/s1/processes/0123456789ab/wait?timeoutSeconds=2"),
            ("GET", b"/v1/sessions/s1/processes/0123456789ab"),
            ("DELETE", b"/v1/sessions/s1/processes/0123456789ab"),
        ]

    def test_invalid_base64_in_an_exec_stream_is_a_protocol_error(self) -> None:
        # Regression: base64 was decoded leniently (invalid characters dropped, no error).
        c, _ = client([httpx.Response(200, content=ndjson({"type": "stdout", "data": "!!", "encoding": "base64"}))])
        with pytest.raises(sp.ProtocolError, match="invalid base64"):
            list(c.exec_stream("s1", "x"))


class TestCalls:
    """The pure builders both clients share: what each call sends and whether it may be retried."""

    SETTINGS = _core.Settings(base_url="http://gw.test", api_key="k", namespace="ns", timeout=7.0, max_retries=2)

    def test_only_exec_start_signal_and_a_nameless_create_are_never_retried(self) -> None:
        from sandbox_platform import _calls

        s, opts = self.SETTINGS, _calls.ExecOptions(None, None, None, None)
        fields = dict(image=None, env=None, idle_timeout=None, max_lifetime=None, shutdown_policy=None,
                      exec_transport=None, persistent_workspace=None, pool=None, namespace=None)
        never = [
            _calls.exec(s, "s1", "true", opts, None).request,
            _calls.exec_stream(s, "s1", "true", opts, None),
            _calls.start_process(s, "s1", "true", cwd=None, env=None, wait=None, namespace=None).request,
            _calls.signal_process(s, "s1", "p1", "SIGTERM", None).request,
            _calls.create_session(s, None, **fields).request,
        ]
        retried = [
            _calls.create_session(s, "s1", **fields).request,
            _calls.get_session(s, "s1", None).request,
            _calls.list_sessions(s, None).request,
            _calls.delete_session(s, "s1", None),
            _calls.suspend_session(s, "s1", None).request,
            _calls.resume_session(s, "s1", None, None).request,
            _calls.write_file(s, "s1", "f", b"x", None).request,
            _calls.read_file(s, "s1", "f", None).request,
            _calls.list_processes(s, "s1", None).request,
            _calls.get_process(s, "s1", "p1", None).request,
            _calls.process_output(s, "s1", "p1", stdout_offset=None, stderr_offset=None, max_bytes=None,
                                  namespace=None).request,
            _calls.follow_process(s, "s1", "p1", stdout_offset=None, stderr_offset=None, timeout=None, namespace=None),
            _calls.wait_process(s, "s1", "p1", 5, None).request,
            _calls.remove_process(s, "s1", "p1", None),
        ]
        assert [r.idempotent for r in never] == [False] * len(never)
        assert [r.idempotent for r in retried] == [True] * len(retried)
        assert {r.params["namespace"] for r in never + retried} == {"ns"}

    def test_a_request_carries_its_query_body_and_timeout_and_decodes_its_answer(self) -> None:
        from sandbox_platform import _calls

        call = _calls.wait_process(self.SETTINGS, "s1", "p1", 5, "other")
        assert (call.request.method, call.request.path, dict(call.request.params)) == (
            "GET", "/v1/sessions/s1/processes/p1/wait", {"namespace": "other", "timeoutSeconds": "5"})
        assert call.request.timeout == httpx.Timeout(35, connect=7.0)
        assert call.decode(_calls.Answer(200, json.dumps(EXITED).encode())).exit_code == 143
        get = _calls.get_session(self.SETTINGS, "s1", None)
        assert (get.request.timeout, get.request.json, get.request.content) == (7.0, None, None)
        create = _calls.create_session(self.SETTINGS, "s1", image=None, env=None, idle_timeout=None,
                                       max_lifetime=None, shutdown_policy=None, exec_transport=None,
                                       persistent_workspace=None, pool=None, namespace=None)
        assert create.decode(_calls.Answer(201, json.dumps(SESSION).encode())).created is True
        assert create.decode(_calls.Answer(200, json.dumps(SESSION).encode())).created is False
        with pytest.raises(sp.ProtocolError, match="invalid JSON"):
            get.decode(_calls.Answer(200, b"{nope"))

    def test_a_delete_closes_its_answer_unread(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_core, "MAX_RESPONSE_BYTES", 10)
        c, script = client([httpx.Response(200, content=b"x" * 100), httpx.Response(200, content=b"x" * 100)])
        c.delete_session("s1")
        c.remove_process("s1", "p1")
        assert [r.method for r in script.requests] == ["DELETE", "DELETE"]

    def test_a_follow_left_early_reports_the_offsets_of_what_was_taken(self) -> None:
        # The state handles an event when the loop takes it: a caller that stops early follows again
        # from what it saw, not from events decoded in the same piece but never given to it.
        raw = ndjson({"type": "stdout", "offset": 0, "skipped": 0, "data": "ab", "encoding": "utf-8"},
                     {"type": "stdout", "offset": 2, "skipped": 0, "data": "cd", "encoding": "utf-8"})
        c, _ = client([httpx.Response(200, content=raw)])
        with c.follow_process("s1", "p1") as follow:
            for _event in follow:
                break
        assert follow.stdout_offset == 2

    @pytest.mark.anyio
    async def test_async_delete_and_early_follow_alike(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_core, "MAX_RESPONSE_BYTES", 10)
        raw = ndjson({"type": "stdout", "offset": 0, "skipped": 0, "data": "ab", "encoding": "utf-8"},
                     {"type": "stdout", "offset": 2, "skipped": 0, "data": "cd", "encoding": "utf-8"})
        script = Script([refused(), problem(404, "session-not-found"), httpx.Response(200, content=b"x" * 100),
                         httpx.Response(200, content=raw)])
        async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
            await c.delete_session("s1")
            await c.remove_process("s1", "p1")
            async with await c.follow_process("s1", "p1") as follow:
                async for _event in follow:
                    break
        assert follow.stdout_offset == 2
