"""Snapshots and forks in the Python SDK (docs/snapshots.md): what each call sends and reads back."""

from __future__ import annotations

import json

import httpx
import pytest

import sandbox_platform as sp

SNAP = {"name": "src-abcde", "namespace": "ns", "session": "src", "ready": True, "phase": "Ready",
        "reason": "SnapshotReady", "message": "", "digest": "sha256:" + "a" * 64, "files": 3, "sizeBytes": 4096}


def session(name: str) -> dict[str, object]:
    return {"name": name, "namespace": "ns", "uid": f"u-{name}", "ready": False, "reason": "WorkspaceRestoring",
            "message": "", "execTransport": "Agent", "fromSnapshot": "src-abcde",
            "workspaceVerified": {"status": "False", "reason": "WorkspaceRestoring", "message": ""}}


def gateway(requests: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        path = request.url.path
        if path.endswith("/fork"):
            names = json.loads(request.content).get("names") or ["src-fork-1", "src-fork-2"]
            return httpx.Response(201, json={"snapshot": SNAP, "sessions": [session(n) for n in names]})
        if path == "/v1/snapshots" and request.method == "GET":
            return httpx.Response(200, json={"items": [SNAP]})
        if path == "/v1/snapshots":
            return httpx.Response(202, json={**SNAP, "ready": False, "phase": "Pending"})
        if request.method == "DELETE":
            return httpx.Response(204)
        return httpx.Response(200, json=SNAP)

    return httpx.MockTransport(answer)


def test_fork_sends_count_and_names_and_reads_the_sessions() -> None:
    requests: list[httpx.Request] = []
    c = sp.Client("http://gw.test", "k", namespace="ns", transport=gateway(requests))
    result = c.fork("src", 2, names=["a1", "a2"])
    assert requests[0].url.path == "/v1/sessions/src/fork"
    assert json.loads(requests[0].content) == {"count": 2, "names": ["a1", "a2"]}
    assert result.snapshot.digest == "sha256:" + "a" * 64
    assert [s.name for s in result.sessions] == ["a1", "a2"]
    assert result.sessions[0].from_snapshot == "src-abcde"
    assert result.sessions[0].workspace_verified == {"status": "False", "reason": "WorkspaceRestoring", "message": ""}


def test_fork_checks_count_and_names_before_sending() -> None:
    requests: list[httpx.Request] = []
    c = sp.Client("http://gw.test", "k", transport=gateway(requests))
    with pytest.raises(ValueError):
        c.fork("src", 11)
    with pytest.raises(ValueError):
        c.fork("src", 2, names=["one"])
    assert requests == []


def test_snapshot_list_get_wait_delete() -> None:
    requests: list[httpx.Request] = []
    c = sp.Client("http://gw.test", "k", namespace="ns", transport=gateway(requests))
    created = c.snapshot("src", name="src-abcde", ttl_seconds_after_ready=60)
    assert json.loads(requests[0].content) == {"session": "src", "name": "src-abcde", "ttlSecondsAfterReady": 60}
    assert (created.ready, created.phase) == (False, "Pending")
    assert [s.name for s in c.list_snapshots()] == ["src-abcde"]
    assert c.wait_until_snapshot_ready("src-abcde", timeout=5).files == 3
    c.delete_snapshot("src-abcde")
    assert (requests[-1].method, requests[-1].url.path) == ("DELETE", "/v1/snapshots/src-abcde")


@pytest.mark.anyio
async def test_async_fork_and_snapshot() -> None:
    requests: list[httpx.Request] = []
    async with sp.AsyncClient("http://gw.test", "k", namespace="ns", transport=gateway(requests)) as c:
        result = await c.fork("src", 2)
        snap = await c.wait_until_snapshot_ready(result.snapshot.name, timeout=5)
    assert len(result.sessions) == 2
    assert snap.ready
