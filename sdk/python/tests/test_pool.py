"""Warm pools in the Python SDK: create_session sends ``pool``; a session reports it."""

from __future__ import annotations

import json

import httpx
import pytest

import sandbox_platform as sp

SESSION = {"name": "s1", "namespace": "ns", "uid": "u1", "ready": True, "reason": "SandboxReady",
           "message": "", "execTransport": "Agent", "pool": "warm"}


def test_create_sends_the_pool_and_reads_it_back() -> None:
    requests: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(201, json=SESSION)

    c = sp.Client("http://gw.test", "k", transport=httpx.MockTransport(answer))
    s = c.create_session("s1", pool="warm")
    assert json.loads(requests[0].content) == {"name": "s1", "pool": "warm"}
    assert (s.pool, s.created) == ("warm", True)


@pytest.mark.anyio
async def test_async_create_sends_the_pool() -> None:
    requests: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(201, json=SESSION)

    async with sp.AsyncClient("http://gw.test", "k", transport=httpx.MockTransport(answer)) as c:
        s = await c.create_session("s1", pool="warm")
    assert json.loads(requests[0].content) == {"name": "s1", "pool": "warm"}
    assert s.pool == "warm"
