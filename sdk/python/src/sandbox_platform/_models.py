"""Values the client returns: plain frozen dataclasses built from the gateway's JSON."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional

from ._errors import CommandError, ProtocolError

Stream = Literal["stdout", "stderr"]


def decode_output(data: str, encoding: str) -> bytes:
    """The bytes of an output string: the gateway sends UTF-8 text when it was valid, else base64."""
    if encoding == "base64":
        return base64.b64decode(data)
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

