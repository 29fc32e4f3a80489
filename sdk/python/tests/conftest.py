"""Fixtures: the live gateway's settings (from the e2e tier's variables) and the anyio backend.

Live tests skip without E2E_GATEWAY_URL, unless SDK_REQUIRE_LIVE=1 (set by mk/sdk.mk), which makes
a missing gateway a failure instead of a silent skip.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from typing import Optional

import pytest


@dataclass(frozen=True)
class Live:
    url: str
    key: str
    namespace: str
    other_namespace: Optional[str]

    def session_name(self, prefix: str) -> str:
        return f"{prefix}-{secrets.token_hex(3)}"


@pytest.fixture(scope="session")
def live() -> Live:
    url = os.environ.get("E2E_GATEWAY_URL")
    key = os.environ.get("E2E_GATEWAY_API_KEY")
    namespace = os.environ.get("E2E_NAMESPACE")
    if not (url and key and namespace):
        if os.environ.get("SDK_REQUIRE_LIVE") == "1":
            pytest.fail("SDK_REQUIRE_LIVE=1 but E2E_GATEWAY_URL / E2E_GATEWAY_API_KEY / E2E_NAMESPACE are not set")
        pytest.skip("no live gateway (E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY, E2E_NAMESPACE)")
    return Live(url, key, namespace, os.environ.get("E2E_OTHER_NAMESPACE") or None)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (the "gateway down" case)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
