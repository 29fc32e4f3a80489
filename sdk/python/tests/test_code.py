"""The code interpreter and file watching of both clients, against scripted answers (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest

import sandbox_platform as sp

from test_unit import Script, client, ndjson, problem

RESULT = {
    "status": "ok", "stdout": "hi\n", "stderr": "",
    "outputs": [{"type": "display", "data": {"image/png": base64.b64encode(b"\x89PNG").decode(), "text/plain": "<Figure>"}},
                {"type": "result", "data": {"text/plain": "42"}}],
    "executionCount": 2, "durationMs": 4, "contextReset": False, "truncated": False,
    "dropped": {"stdout": 0, "stderr": 0, "displays": 0},
}
END = {"type": "end", "status": "ok", "durationMs": 1, "contextReset": False, "truncated": False,
       "dropped": {"stdout": 0, "stderr": 0, "displays": 0}}
CONTEXT = {"name": "c1", "language": "python", "state": "idle", "executionCount": 0,
           "createdAt": "2030-01-01T00:00:00.000Z"}


class TestCode:
    def test_run_code_returns_the_whole_run_and_is_never_retried(self) -> None:
        c, script = client([httpx.Response(200, json=RESULT), problem(502, "upstream-error")])
        r = c.run_code("s1", "x + 1", context="c1", timeout=5)
        assert (r.status, r.stdout, r.result and r.result.text, r.execution_count) == ("ok", "hi\n", "42", 2)
        assert r.outputs[0].image() == b"\x89PNG"
        assert script.requests[0].url.path == "/v1/sessions/s1/code"
        assert json.loads(script.requests[0].content) == {"code": "x + 1", "context": "c1", "timeoutSeconds": 5}
        with pytest.raises(sp.UpstreamError):
            c.run_code("s1", "1")
        assert len(script.requests) == 2

    def test_run_code_stream_yields_events_then_end(self) -> None:
        c, script = client([httpx.Response(200, content=ndjson({"type": "stdout", "text": "a"}, END))])
        with c.run_code_stream("s1", "print('a')") as run:
            events = list(run)
        assert [e["type"] for e in events] == ["stdout", "end"]
        assert run.end is not None and run.end["status"] == "ok"
        assert script.requests[0].url.path == "/v1/sessions/s1/code/stream"

    def test_a_stream_without_its_end_is_a_protocol_error(self) -> None:
        c, _ = client([httpx.Response(200, content=ndjson({"type": "stdout", "text": "a"}))])
        with pytest.raises(sp.ProtocolError):
            list(c.run_code_stream("s1", "1"))

    def test_contexts_and_503_code_unavailable(self) -> None:
        c, script = client([httpx.Response(200, json={"contexts": [CONTEXT]}), httpx.Response(201, json=CONTEXT),
                            httpx.Response(200, json=CONTEXT), httpx.Response(200, json=CONTEXT), httpx.Response(204),
                            problem(503, "code-unavailable")])
        assert c.list_code_contexts("s1")[0].name == "c1"
        assert c.create_code_context("s1", "c1").state == "idle"
        c.interrupt_code_context("s1", "c1")
        c.restart_code_context("s1", "c1")
        c.delete_code_context("s1", "c1")
        assert [f"{r.method} {r.url.path}" for r in script.requests] == [
            "GET /v1/sessions/s1/code/contexts", "POST /v1/sessions/s1/code/contexts",
            "POST /v1/sessions/s1/code/contexts/c1/interrupt", "POST /v1/sessions/s1/code/contexts/c1/restart",
            "DELETE /v1/sessions/s1/code/contexts/c1"]
        with pytest.raises(sp.UnavailableError) as err:
            c.run_code("s1", "1")
        assert err.value.code == "code-unavailable"

    def test_watch_yields_lines_and_its_end_reason(self) -> None:
        lines = ndjson({"type": "watching", "path": "out", "recursive": True},
                       {"type": "rename", "path": "out/b", "from": "out/a", "directory": False},
                       {"type": "end", "reason": "session-suspended"})
        c, script = client([httpx.Response(200, content=lines)])
        with c.watch("s1", "out", recursive=True, timeout=30) as changes:
            seen = [line["type"] for line in changes]
        assert seen == ["watching", "rename", "end"]
        assert changes.end_reason == "session-suspended"
        assert script.requests[0].url.params["path"] == "out"
        assert script.requests[0].url.params["recursive"] == "true"
        assert script.requests[0].url.params["timeoutSeconds"] == "30"

    def test_async_run_code_and_watch(self) -> None:
        async def go() -> tuple[Any, list[str]]:
            script = Script([httpx.Response(200, json=RESULT),
                             httpx.Response(200, content=ndjson({"type": "watching", "path": "", "recursive": False},
                                                                {"type": "end", "reason": "timeout"}))])
            async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(script)) as c:
                r = await c.run_code("s1", "x")
                async with await c.watch("s1") as w:
                    types = [line["type"] async for line in w]
            return r, types

        r, types = asyncio.run(go())
        assert r.result.text == "42"
        assert types == ["watching", "end"]
