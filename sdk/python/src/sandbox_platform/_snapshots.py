"""Snapshots and forks (docs/snapshots.md): models and one pure call builder per gateway call, shared
by :class:`Client` and :class:`AsyncClient` (no I/O), as in ``_calls``.

A snapshot copies a session's /workspace (files, directories, symlinks, modes, mtimes) with a
content digest; a fork is a snapshot plus N sessions started from it, each ready once its copy is
verified against the digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import time

from . import _core as core
from ._calls import Answer, Call, Request, _request
from ._errors import APITimeoutError, ProtocolError
from ._models import Session

MAX_FORK_COUNT = 10


@dataclass(frozen=True)
class Snapshot:
    """A snapshot as the gateway returns it."""

    name: str
    namespace: str
    session: str
    """The session whose /workspace it copies."""
    ready: bool
    """True once stored and its digest known."""
    phase: str
    """``Pending``, ``InProgress``, ``Ready`` or ``Failed``."""
    reason: str
    """Reason of the Ready condition, e.g. ``SnapshotReady``, ``StoreUnavailable``, ``QuotaExceeded``."""
    message: str = ""
    digest: Optional[str] = None
    """``sha256:<hex>``: Merkle root over paths, modes, symlink targets and bytes."""
    size_bytes: Optional[int] = None
    files: Optional[int] = None
    directories: Optional[int] = None
    symlinks: Optional[int] = None
    ttl_seconds_after_ready: Optional[int] = None
    created_at: Optional[str] = None
    completed_at: Optional[str] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        try:
            return cls(
                name=data["name"],
                namespace=data["namespace"],
                session=data["session"],
                ready=bool(data["ready"]),
                phase=data.get("phase", "Pending"),
                reason=data.get("reason", ""),
                message=data.get("message", ""),
                digest=data.get("digest"),
                size_bytes=data.get("sizeBytes"),
                files=data.get("files"),
                directories=data.get("directories"),
                symlinks=data.get("symlinks"),
                ttl_seconds_after_ready=data.get("ttlSecondsAfterReady"),
                created_at=data.get("createdAt"),
                completed_at=data.get("completedAt"),
            )
        except (KeyError, TypeError) as exc:
            raise ProtocolError(f"unexpected snapshot in the gateway's answer: {exc!r}") from exc


@dataclass(frozen=True)
class ForkResult:
    """What a fork made: the snapshot and the new sessions (each ready once its copy is verified)."""

    snapshot: Snapshot
    sessions: list[Session]


def _snapshot(answer: Answer) -> Snapshot:
    return Snapshot.from_json(answer.json())


def _snapshots(answer: Answer) -> list[Snapshot]:
    return [Snapshot.from_json(item) for item in answer.json().get("items", [])]


def _fork(answer: Answer) -> ForkResult:
    body = answer.json()
    return ForkResult(
        snapshot=Snapshot.from_json(body["snapshot"]),
        sessions=[Session.from_json(s, created=True) for s in body.get("sessions", [])],
    )


def snapshot_path(name: str) -> str:
    return f"/v1/snapshots/{core.check_name(name)}"


def create_snapshot(
    settings: core.Settings, session: str, name: Optional[str], ttl: Optional[int], namespace: Optional[str]
) -> Call[Snapshot]:
    body: dict[str, Any] = {"session": core.check_name(session)}
    if name is not None:
        body["name"] = core.check_name(name)
    if ttl is not None:
        body["ttlSecondsAfterReady"] = ttl
    # Not retried without a name: a second attempt would make a second snapshot.
    return Call(_request(settings, "POST", "/v1/snapshots", namespace, json=body, idempotent=name is not None),
                _snapshot)


def get_snapshot(settings: core.Settings, name: str, namespace: Optional[str]) -> Call[Snapshot]:
    return Call(_request(settings, "GET", snapshot_path(name), namespace, idempotent=True), _snapshot)


def list_snapshots(settings: core.Settings, namespace: Optional[str]) -> Call[list[Snapshot]]:
    return Call(_request(settings, "GET", "/v1/snapshots", namespace, idempotent=True), _snapshots)


def delete_snapshot(settings: core.Settings, name: str, namespace: Optional[str]) -> Request:
    return _request(settings, "DELETE", snapshot_path(name), namespace, idempotent=True)


def fork(
    settings: core.Settings,
    session: str,
    count: int,
    names: Optional[list[str]],
    ttl: Optional[int],
    namespace: Optional[str],
) -> Call[ForkResult]:
    if not 1 <= count <= MAX_FORK_COUNT:
        raise ValueError(f"count must be 1..{MAX_FORK_COUNT}")
    body: dict[str, Any] = {"count": count}
    if names is not None:
        if len(names) != count:
            raise ValueError("names must hold exactly count names")
        body["names"] = [core.check_name(n) for n in names]
    if ttl is not None:
        body["ttlSecondsAfterReady"] = ttl
    path = f"{core.session_path(core.check_name(session))}/fork"
    return Call(_request(settings, "POST", path, namespace, json=body, idempotent=False), _fork)


class SnapshotPoll:
    """The loop of wait_until_snapshot_ready, shared by both clients (no I/O)."""

    def __init__(self, name: str, timeout: float) -> None:
        self._name = name
        self._end = time.monotonic() + timeout

    def is_ready(self, snap: Snapshot) -> bool:
        """True when ready; raises when it failed or the time is up."""
        if snap.ready:
            return True
        if snap.phase == "Failed":
            raise RuntimeError(f"snapshot {self._name} failed: {snap.reason}: {snap.message}")
        if time.monotonic() > self._end:
            raise APITimeoutError(f"snapshot {self._name} is not ready: {snap.reason}: {snap.message}")
        return False
