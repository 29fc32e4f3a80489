"""Python client of the sandbox-platform gateway.

>>> from sandbox_platform import Client
>>> with Client("http://localhost:8080", "KEY") as client:          # or SANDBOX_URL / SANDBOX_KEY
...     client.create_session("demo")
...     print(client.exec("demo", "echo hi").stdout)

:class:`Client` is synchronous, :class:`AsyncClient` its asyncio twin. Failures raise
:class:`SandboxError` subclasses with a stable ``code`` (the gateway's problem slug).
"""

from ._async_client import AsyncClient, AsyncCodeStream, AsyncExecStream, AsyncProcessFollow, AsyncWatch
from ._client import Client, CodeStream, ExecStream, ProcessFollow, Watch
from ._code import CodeContext, CodeError, CodeOutput, CodeResult
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    CommandError,
    ConflictError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    PolicyViolationError,
    ProtocolError,
    RateLimitError,
    SandboxError,
    SessionGoneError,
    UnavailableError,
    UpstreamError,
)
from ._models import (
    ExecResult,
    ExitStatus,
    OutputChunk,
    OutputCounters,
    ProcessEvent,
    ProcessExitEvent,
    ProcessInfo,
    ProcessOutput,
    ProcessOutputChunk,
    ProcessOutputEvent,
    Session,
    WrittenFile,
    decode_output,
)
from ._snapshots import ForkResult, Snapshot
from ._version import __version__

__all__ = [
    "CodeResult",
    "CodeOutput",
    "CodeError",
    "CodeContext",
    "Watch",
    "CodeStream",
    "AsyncWatch",
    "AsyncCodeStream",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AsyncClient",
    "AsyncExecStream",
    "AsyncProcessFollow",
    "AuthenticationError",
    "Client",
    "CommandError",
    "ConflictError",
    "ExecResult",
    "ExecStream",
    "ExitStatus",
    "InternalServerError",
    "InvalidRequestError",
    "NotFoundError",
    "NotSupportedError",
    "OutputChunk",
    "OutputCounters",
    "PermissionDeniedError",
    "PolicyViolationError",
    "ProcessEvent",
    "ProcessExitEvent",
    "ProcessFollow",
    "ProcessInfo",
    "ProcessOutput",
    "ProcessOutputChunk",
    "ProcessOutputEvent",
    "ProtocolError",
    "RateLimitError",
    "SandboxError",
    "Session",
    "SessionGoneError",
    "Snapshot",
    "ForkResult",
    "UnavailableError",
    "UpstreamError",
    "WrittenFile",
    "__version__",
    "decode_output",
]
