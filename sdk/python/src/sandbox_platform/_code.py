"""The code interpreter and file watching (docs/gateway.md, "Code and file watching"): models,
request builders (pure, shared by :class:`Client` and :class:`AsyncClient`) and stream states.

A run executes Python in a named context of a session (a Jupyter kernel in the sandbox, started
on first use; variables persist between runs). Its result carries every MIME type the kernel gave
(``image/png`` as base64, ``application/json`` as JSON text). A run is never retried.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional

import httpx

from . import _core as core
from ._calls import Answer, Call, Request, _request
from ._errors import ProtocolError

#: Longest NDJSON line of a run: a display with every MIME item the gateway allows (16 MiB), framed.
MAX_CODE_LINE_BYTES = 17 * 1024 * 1024
#: Longest watch line (two workspace paths, JSON-escaped).
MAX_WATCH_LINE_BYTES = 64 * 1024
#: Beyond a run's own timeout: a kernel start (up to 60 s), the readiness wait and the way back.
_RUN_MARGIN_S = 90
_DEFAULT_RUN_TIMEOUT_S = 60
_MAX_WAIT_S = 120


@dataclass(frozen=True)
class CodeOutput:
    """A result (``type == "result"``: the last expression's value) or a display of a run."""

    type: str
    #: MIME type -> content, e.g. ``{"text/plain": "42"}``; images are base64.
    data: Mapping[str, str]
    #: Items left out because they were over the size bounds: ``[{"mime", "bytes"}]``.
    omitted: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> Optional[str]:
        """The ``text/plain`` of the output, if any."""
        return self.data.get("text/plain")

    def image(self, mime: str = "image/png") -> Optional[bytes]:
        """The decoded bytes of an image item (``image/png`` by default), if any."""
        value = self.data.get(mime)
        return None if value is None else base64.b64decode(value)

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> "CodeOutput":
        return CodeOutput(value["type"], dict(value["data"]), list(value.get("omitted", [])))


@dataclass(frozen=True)
class CodeError:
    """The exception a run raised."""

    name: str
    value: str
    traceback: list[str]


@dataclass(frozen=True)
class CodeResult:
    """A whole run."""

    #: ``ok``, ``error``, ``timeout``, ``interrupted`` or ``kernel-died``.
    status: str
    stdout: str
    stderr: str
    outputs: list[CodeOutput]
    error: Optional[CodeError]
    execution_count: Optional[int]
    duration_ms: int
    #: A new kernel ran this code: variables of earlier runs are gone.
    context_reset: bool
    #: Something was dropped or omitted (see ``dropped`` and each output's ``omitted``).
    truncated: bool
    dropped: Mapping[str, int]

    @property
    def result(self) -> Optional[CodeOutput]:
        """The value of the last expression, if the code ended with one."""
        return next((o for o in self.outputs if o.type == "result"), None)

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> "CodeResult":
        error = value.get("error")
        return CodeResult(
            status=value["status"],
            stdout=value["stdout"],
            stderr=value["stderr"],
            outputs=[CodeOutput.from_json(o) for o in value["outputs"]],
            error=None if error is None else CodeError(error["name"], error["value"], list(error["traceback"])),
            execution_count=value.get("executionCount"),
            duration_ms=value["durationMs"],
            context_reset=value["contextReset"],
            truncated=value["truncated"],
            dropped=dict(value["dropped"]),
        )


@dataclass(frozen=True)
class CodeContext:
    """A code context of a session."""

    name: str
    language: str
    #: ``starting``, ``idle``, ``busy`` or ``stopped``.
    state: str
    execution_count: int
    created_at: str
    pid: Optional[int] = None
    last_run_at: Optional[str] = None

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> "CodeContext":
        return CodeContext(value["name"], value["language"], value["state"], value["executionCount"],
                           value["createdAt"], value.get("pid"), value.get("lastRunAt"))


#: A streamed run's event: a dict as the gateway sent it (``type``: stdout, stderr, result,
#: display, error, end).
CodeEvent = Mapping[str, Any]
#: A watch line: a dict (``type``: watching, create, modify, delete, rename, overflow, end).
WatchEvent = Mapping[str, Any]

_CODE_TYPES = {"stdout", "stderr", "result", "display", "error", "end"}
_WATCH_TYPES = {"watching", "create", "modify", "delete", "rename", "overflow", "end"}


def _code_path(name: str, rest: str = "") -> str:
    return f"/v1/sessions/{core.check_name(name)}/code{rest}"


def _run_timeout(settings: core.Settings, timeout: Optional[int], wait: Optional[int]) -> httpx.Timeout:
    total = (timeout or _DEFAULT_RUN_TIMEOUT_S) + (_MAX_WAIT_S if wait is None else wait) + _RUN_MARGIN_S
    return httpx.Timeout(float(total), connect=min(10.0, settings.timeout))


def _run_body(code: str, context: Optional[str], timeout: Optional[int], wait: Optional[int]) -> dict[str, Any]:
    if not isinstance(code, str):
        raise TypeError("code must be a str")
    body: dict[str, Any] = {"code": code}
    for key, value in (("context", context), ("timeoutSeconds", timeout), ("waitSeconds", wait)):
        if value is not None:
            body[key] = value
    return body


def run_code(settings: core.Settings, name: str, code: str, *, context: Optional[str], timeout: Optional[int],
             wait: Optional[int], namespace: Optional[str]) -> Call[CodeResult]:
    """POST .../code: never retried (code may have side effects)."""
    request = _request(settings, "POST", _code_path(name), namespace, json=_run_body(code, context, timeout, wait),
                       idempotent=False, timeout=_run_timeout(settings, timeout, wait))
    return Call(request, lambda a: CodeResult.from_json(a.json()))


def run_code_stream(settings: core.Settings, name: str, code: str, *, context: Optional[str],
                    timeout: Optional[int], wait: Optional[int], namespace: Optional[str]) -> Request:
    """POST .../code/stream: never retried."""
    return _request(settings, "POST", _code_path(name, "/stream"), namespace,
                    json=_run_body(code, context, timeout, wait), idempotent=False,
                    timeout=_run_timeout(settings, timeout, wait))


def list_code_contexts(settings: core.Settings, name: str, namespace: Optional[str]) -> Call[list[CodeContext]]:
    return Call(_request(settings, "GET", _code_path(name, "/contexts"), namespace, idempotent=True),
                lambda a: [CodeContext.from_json(c) for c in a.json()["contexts"]])


def create_code_context(settings: core.Settings, name: str, context: str, namespace: Optional[str]) -> Call[CodeContext]:
    """POST .../code/contexts: idempotent by name (an existing context is returned)."""
    request = _request(settings, "POST", _code_path(name, "/contexts"), namespace, json={"name": context},
                       idempotent=True, timeout=_run_timeout(settings, 0, None))
    return Call(request, _context)


def code_context_action(settings: core.Settings, name: str, context: str, action: str,
                        namespace: Optional[str]) -> Call[CodeContext]:
    """POST .../contexts/<context>/interrupt|restart: never retried."""
    path = _code_path(name, f"/contexts/{_segment(context)}/{action}")
    request = _request(settings, "POST", path, namespace, idempotent=False, timeout=_run_timeout(settings, 0, None))
    return Call(request, _context)


def delete_code_context(settings: core.Settings, name: str, context: str, namespace: Optional[str]) -> Request:
    return _request(settings, "DELETE", _code_path(name, f"/contexts/{_segment(context)}"), namespace,
                    idempotent=True)


def watch(settings: core.Settings, name: str, *, path: Optional[str], recursive: bool, timeout: Optional[int],
          namespace: Optional[str]) -> Request:
    """GET .../watch: not retried once it answered (a watch is a live stream)."""
    query: dict[str, str] = {}
    if path is not None:
        query["path"] = path
    if recursive:
        query["recursive"] = "true"
    if timeout is not None:
        query["timeoutSeconds"] = str(timeout)
    total = float((timeout or 300) + 60)
    return _request(settings, "GET", f"/v1/sessions/{core.check_name(name)}/watch", namespace, idempotent=False,
                    query=query, timeout=httpx.Timeout(total, connect=min(10.0, settings.timeout)))


def _context(answer: Answer) -> CodeContext:
    return CodeContext.from_json(answer.json())


def _segment(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


class _Decoder(core.NdjsonDecoder):
    """NDJSON lines of a run or a watch: objects whose ``type`` is one of ``types``."""

    def __init__(self, max_line: int, label: str, types: set[str]) -> None:
        super().__init__(max_line, label=label)
        self._types = types

    def _parse(self, line: bytes) -> dict[str, Any]:
        try:
            value = json.loads(line.decode("utf-8"))
        except ValueError as exc:
            raise ProtocolError(f"invalid NDJSON line in the {self._label}: {line[:80]!r}") from exc
        if not isinstance(value, dict) or value.get("type") not in self._types:
            raise ProtocolError(f"unexpected {self._label} line: {line[:80]!r}")
        return value


class CodeStreamState(core.StreamState[CodeEvent]):
    """What a streamed run saw: its events, then :attr:`end` (the end event)."""

    def __init__(self) -> None:
        super().__init__("code stream")
        self.decoder = _Decoder(MAX_CODE_LINE_BYTES, "code stream", _CODE_TYPES)
        self.end: Optional[CodeEvent] = None

    @property
    def ended(self) -> bool:
        return self.end is not None

    def take_rest(self) -> Iterator[CodeEvent]:
        yield from super().take_rest()
        if self.end is None:
            raise ProtocolError("the code stream ended without an end event (connection lost?)")

    def _events(self, events: list[dict[str, Any]]) -> Iterator[CodeEvent]:
        for event in events:
            if event["type"] == "end":
                self.end = event
            yield event


class WatchState(core.StreamState[WatchEvent]):
    """What a watch saw: its lines, the last one ``end`` (:attr:`end_reason`)."""

    def __init__(self) -> None:
        super().__init__("watch")
        self.decoder = _Decoder(MAX_WATCH_LINE_BYTES, "watch", _WATCH_TYPES)
        self.end_reason: Optional[str] = None

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    def take_rest(self) -> Iterator[WatchEvent]:
        yield from super().take_rest()
        if self.end_reason is None:
            raise ProtocolError("the watch ended without an end line (connection lost?)")

    def _events(self, events: list[dict[str, Any]]) -> Iterator[WatchEvent]:
        for event in events:
            if event["type"] == "end":
                self.end_reason = str(event.get("reason", ""))
            yield event


__all__ = [
    "CodeContext",
    "CodeError",
    "CodeEvent",
    "CodeOutput",
    "CodeResult",
    "WatchEvent",
]
