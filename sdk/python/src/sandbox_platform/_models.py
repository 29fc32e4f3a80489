"""Values the client returns: plain frozen dataclasses built from the gateway's JSON."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Union

from ._errors import CommandError, ProtocolError

Stream = Literal["stdout", "stderr"]


def decode_output(data: str, encoding: str) -> bytes:
    """The bytes of an output string: the gateway sends UTF-8 text when it was valid, else base64."""
    if encoding == "base64":
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, TypeError) as exc:
            raise ProtocolError(f"invalid base64 output from the gateway: {exc}") from exc
    return data.encode("utf-8")


@dataclass(frozen=True)
class Session:
    """A sandbox session as the gateway returns it."""

    name: str
    namespace: str
    uid: str
    ready: bool
    """True when commands can run now."""
    reason: str
    """Reason of the Ready condition, e.g. ``SandboxReady``, ``PodPending``, ``IdleTimeout``."""
    message: str = ""
    exec_transport: str = "Agent"
    created_at: Optional[str] = None
    image: Optional[str] = None
    idle_timeout: Optional[int] = None
    """Idle seconds before the session is collected."""
    max_lifetime: Optional[int] = None
    """Lifetime in seconds."""
    shutdown_policy: Optional[str] = None
    """``Delete``, ``Retain`` or ``Suspend``."""
    suspended: bool = False
    """True while suspended: no Pod; the workspace and token are kept; the next call resumes it."""
    persistent_workspace: bool = False
    """True when /workspace lives on a PersistentVolumeClaim (it survives suspension)."""
    pool: Optional[str] = None
    """The SandboxPool (warm pool) the session was created from, if any."""
    last_activity_time: Optional[str] = None
    expires_at: Optional[str] = None
    created: bool = False
    from_snapshot: Optional[str] = None
    """The snapshot the workspace was restored from (spec.workspace.fromSnapshot), if any."""
    workspace_verified: Optional[Mapping[str, str]] = None
    """Condition WorkspaceVerified (``status``, ``reason``, ``message``): a restore verified against the
    snapshot's digest, or a resumed workspace compared with the digest taken at suspension."""
    """From :meth:`Client.create_session`: whether this call created it (False: it existed)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, created: bool = False) -> Session:
        try:
            return cls(
                name=data["name"],
                namespace=data["namespace"],
                uid=data["uid"],
                ready=bool(data["ready"]),
                reason=data.get("reason", ""),
                message=data.get("message", ""),
                exec_transport=data.get("execTransport", "Agent"),
                created_at=data.get("createdAt"),
                image=data.get("image"),
                idle_timeout=data.get("idleTimeoutSeconds"),
                max_lifetime=data.get("maxLifetimeSeconds"),
                shutdown_policy=data.get("shutdownPolicy"),
                suspended=bool(data.get("suspended", False)),
                persistent_workspace=bool(data.get("persistentWorkspace", False)),
                pool=data.get("pool"),
                last_activity_time=data.get("lastActivityTime"),
                expires_at=data.get("expiresAt"),
                created=created,
                from_snapshot=data.get("fromSnapshot"),
                workspace_verified=data.get("workspaceVerified"),
            )
        except (KeyError, TypeError) as exc:
            raise ProtocolError(f"unexpected session in the gateway's answer: {exc!r}") from exc


@dataclass(frozen=True)
class ExecResult:
    """The result of one command. A non-zero exit is a normal result: check :attr:`exit_code`."""

    command: str
    stdout_bytes: bytes
    stderr_bytes: bytes
    exit_code: int
    """124 on timeout, 128+N when killed by signal N."""
    duration_ms: int
    truncated: bool
    """Output exceeded the cap (1 MiB per stream) and was cut."""
    timed_out: bool
    shell_reset: bool
    """The session's shell was restarted before this command: earlier shell state is lost."""

    @property
    def stdout(self) -> str:
        """stdout as text (invalid UTF-8 replaced)."""
        return self.stdout_bytes.decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        """stderr as text (invalid UTF-8 replaced)."""
        return self.stderr_bytes.decode("utf-8", errors="replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def check_returncode(self) -> ExecResult:
        """Raises :class:`CommandError` when the command exited non-zero; returns self otherwise."""
        if self.exit_code != 0:
            raise CommandError(self.command, self.exit_code, self.stderr)
        return self

    @classmethod
    def from_json(cls, command: str, data: Mapping[str, Any]) -> ExecResult:
        try:
            return cls(
                command=command,
                stdout_bytes=decode_output(data["stdout"], data.get("stdoutEncoding", "utf-8")),
                stderr_bytes=decode_output(data["stderr"], data.get("stderrEncoding", "utf-8")),
                exit_code=int(data["exitCode"]),
                duration_ms=int(data.get("durationMs", 0)),
                truncated=bool(data.get("truncated", False)),
                timed_out=bool(data.get("timedOut", False)),
                shell_reset=bool(data.get("shellReset", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"unexpected exec result in the gateway's answer: {exc!r}") from exc


@dataclass(frozen=True)
class OutputChunk:
    """A piece of a streaming command's output, as it arrived."""

    stream: Stream
    data: bytes

    @property
    def text(self) -> str:
        """The chunk as text (a multi-byte character split across chunks is replaced)."""
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ExitStatus:
    """How a streaming command ended."""

    exit_code: int
    duration_ms: int
    truncated: bool
    timed_out: bool
    shell_reset: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExitStatus:
        return cls(
            exit_code=int(data["exitCode"]),
            duration_ms=int(data.get("durationMs", 0)),
            truncated=bool(data.get("truncated", False)),
            timed_out=bool(data.get("timedOut", False)),
            shell_reset=bool(data.get("shellReset", False)),
        )


@dataclass(frozen=True)
class WrittenFile:
    """Result of an upload: the workspace-relative path and its size in bytes."""

    path: str
    size: int



ProcessState = Literal["running", "exited"]


@dataclass(frozen=True)
class OutputCounters:
    """Byte counters of one output stream of a background process."""

    size: int
    """Bytes the process wrote to the stream so far."""
    dropped: int
    """Oldest bytes no longer held (the agent keeps the last 1 MiB); offsets below this are gone."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OutputCounters:
        return cls(size=int(data["size"]), dropped=int(data["dropped"]))


@dataclass(frozen=True)
class ProcessInfo:
    """A background process of a session (``state`` running or exited)."""

    id: str
    """12 hex digits, never reused."""
    pid: int
    command: str
    """The command as started (its first 4096 characters)."""
    state: ProcessState
    started_at: str
    stdout: OutputCounters
    stderr: OutputCounters
    cwd: Optional[str] = None
    exit_code: Optional[int] = None
    """Only when exited: 128+N when killed by signal N."""
    signal: Optional[str] = None
    """Only when exited by a signal: its name (e.g. ``SIGTERM``)."""
    exited_at: Optional[str] = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessInfo:
        try:
            state = data["state"]
            if state not in ("running", "exited"):
                raise ValueError(f"state {state!r}")
            exit_code = data.get("exitCode")
            return cls(
                id=str(data["id"]),
                pid=int(data["pid"]),
                command=str(data["command"]),
                state=state,
                started_at=str(data["startedAt"]),
                stdout=OutputCounters.from_json(data["stdout"]),
                stderr=OutputCounters.from_json(data["stderr"]),
                cwd=data.get("cwd"),
                exit_code=None if exit_code is None else int(exit_code),
                signal=data.get("signal"),
                exited_at=data.get("exitedAt"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"unexpected process in the gateway's answer: {exc!r}") from exc


@dataclass(frozen=True)
class ProcessOutputChunk:
    """One stream's part of a process output read."""

    offset: int
    """Offset of the first byte of :attr:`data`."""
    next_offset: int
    """Offset to read from next."""
    skipped: int
    """Bytes between the requested offset and :attr:`offset` that were dropped from the ring."""
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessOutputChunk:
        return cls(
            offset=int(data["offset"]),
            next_offset=int(data["nextOffset"]),
            skipped=int(data["skipped"]),
            data=decode_output(data["data"], data.get("encoding", "utf-8")),
        )


@dataclass(frozen=True)
class ProcessOutput:
    """A read of a process's output: the process and both streams' chunks."""

    process: ProcessInfo
    stdout: ProcessOutputChunk
    stderr: ProcessOutputChunk

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessOutput:
        try:
            return cls(
                process=ProcessInfo.from_json(data["process"]),
                stdout=ProcessOutputChunk.from_json(data["stdout"]),
                stderr=ProcessOutputChunk.from_json(data["stderr"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"unexpected process output in the gateway's answer: {exc!r}") from exc


@dataclass(frozen=True)
class ProcessOutputEvent:
    """Output of a followed process, as it arrived."""

    stream: Stream
    offset: int
    """Offset of the first byte of :attr:`data` in its stream."""
    skipped: int
    """Bytes dropped from the ring before they could be read."""
    data: bytes

    @property
    def next_offset(self) -> int:
        """Offset after this event: follow again from here."""
        return self.offset + len(self.data)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ProcessExitEvent:
    """The last event of a followed process that exited."""

    exit_code: int
    signal: Optional[str] = None


ProcessEvent = Union[ProcessOutputEvent, ProcessExitEvent]


def process_event(event: Mapping[str, Any]) -> ProcessEvent:
    """The typed event of one NDJSON line of a follow."""
    try:
        if event["type"] == "exit":
            return ProcessExitEvent(exit_code=int(event["exitCode"]), signal=event.get("signal"))
        return ProcessOutputEvent(
            stream=event["type"],
            offset=int(event["offset"]),
            skipped=int(event.get("skipped", 0)),
            data=decode_output(event["data"], event.get("encoding", "utf-8")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"unexpected follow event in the gateway's answer: {exc!r}") from exc
