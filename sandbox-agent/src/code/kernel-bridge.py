"""The agent's bridge to one Jupyter kernel (docs/adr/0033-code-interpreter.md).

The agent starts the kernel itself (``python3 -m ipykernel_launcher -f <connection file>``) and,
at the same time, this bridge, which speaks the Jupyter messaging protocol (v5.3) to the kernel
over ZeroMQ and NDJSON to the agent over its stdin and stdout. It uses pyzmq and the standard
library only: importing jupyter_client costs about 0.6 s, more than everything else here.

Agent -> bridge (stdin), one JSON object per line:
    {"op": "execute", "id": "<id>", "code": "<source>"}
Bridge -> agent (stdout), one JSON object per line:
    {"type": "ready", "language": "python", "version": "3.11.2"}    once the kernel answers
    {"id", "type": "stdout"|"stderr", "text"}                        stream output
    {"id", "type": "result"|"display", "data": {mime: text}, "omitted": [{"mime", "bytes"}]}
    {"id", "type": "error", "name", "value", "traceback": [lines]}
    {"id", "type": "done", "status": "ok"|"error"|"aborted", "executionCount"?,
     "dropped": {"stdout": n, "stderr": n, "displays": n}}
    {"type": "fatal", "message"}                                     then the bridge exits 1

Everything the kernel sends is the sandbox's own output, so it is bounded here before it is
written (the agent checks every line again and enforces the same bounds): stream text per
execution and stream, each MIME item, displays per execution, tracebacks. Values that are not
strings (application/json) are sent as JSON text. Interrupts, restarts and deadlines are the
agent's: it signals the kernel's process group itself.

Usage: python3 kernel-bridge.py CONNECTION_FILE STREAM_MAX ITEM_MAX DISPLAY_MAX
"""

import hashlib
import hmac
import json
import os
import re
import sys
import time
import uuid

import zmq

PROTOCOL_VERSION = "5.3"
DELIM = b"<IDS|MSG>"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
TRACEBACK_MAX_CHARS = 64 * 1024
TEXT_FIELD_MAX_CHARS = 4096
READY_TIMEOUT_S = 60.0


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"


class Channel:
    """Signs, sends and parses Jupyter wire messages (HMAC-SHA256 over the four JSON parts)."""

    def __init__(self, key):
        self.key = key
        self.session = uuid.uuid4().hex

    def sign(self, parts):
        if not self.key:
            return b""
        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for p in parts:
            mac.update(p)
        return mac.hexdigest().encode()

    def send(self, sock, msg_type, content):
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "username": "sandbox-agent",
            "date": now_iso(),
            "version": PROTOCOL_VERSION,
        }
        parts = [json.dumps(x).encode() for x in (header, {}, {}, content)]
        sock.send_multipart([DELIM, self.sign(parts)] + parts)
        return msg_id

    def recv(self, sock):
        frames = sock.recv_multipart(zmq.NOBLOCK)
        try:
            i = frames.index(DELIM)
        except ValueError:
            return None
        sig, parts = frames[i + 1], frames[i + 2 : i + 6]
        if len(parts) < 4 or not hmac.compare_digest(sig, self.sign(parts)):
            return None
        header, parent, _meta, content = (json.loads(p) for p in parts)
        return {
            "type": header.get("msg_type"),
            "parent": parent.get("msg_id") if isinstance(parent, dict) else None,
            "content": content,
        }


def utf8_cut(text, max_bytes):
    """The longest prefix of text whose UTF-8 encoding has at most max_bytes bytes."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= max_bytes:
        return text, len(raw), 0
    return raw[:max_bytes].decode("utf-8", "ignore"), max_bytes, len(raw) - max_bytes


def as_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return json.dumps(value)


class Execution:
    """The bounds and counters of one execute request."""

    def __init__(self, req_id, stream_max, item_max, display_max):
        self.id = req_id
        self.stream_max = stream_max
        self.item_max = item_max
        self.display_left = display_max
        self.sent = {"stdout": 0, "stderr": 0}
        self.dropped = {"stdout": 0, "stderr": 0, "displays": 0}
        self.reply = None
        self.idle = False

    def stream(self, name, text):
        name = "stderr" if name == "stderr" else "stdout"
        room = self.stream_max - self.sent[name]
        kept, used, lost = utf8_cut(text, max(room, 0))
        self.sent[name] += used
        self.dropped[name] += lost
        return {"id": self.id, "type": name, "text": kept} if kept else None

    def bundle(self, kind, content):
        data, omitted = {}, []
        for mime, value in (content.get("data") or {}).items():
            text = as_text(value)
            size = len(text.encode("utf-8", "replace"))
            if size > self.item_max or size > self.display_left:
                omitted.append({"mime": str(mime)[:255], "bytes": size})
                continue
            self.display_left -= size
            data[str(mime)[:255]] = text
        if not data:
            self.dropped["displays"] += 1
        line = {"id": self.id, "type": kind, "data": data}
        if omitted:
            line["omitted"] = omitted
        if kind == "result" and isinstance(content.get("execution_count"), int):
            line["executionCount"] = content["execution_count"]
        return line

    def error(self, content):
        lines, total = [], 0
        for entry in content.get("traceback") or []:
            text = ANSI.sub("", as_text(entry))
            if total + len(text) > TRACEBACK_MAX_CHARS:
                lines.append("[traceback truncated]")
                break
            total += len(text)
            lines.append(text)
        return {
            "id": self.id,
            "type": "error",
            "name": as_text(content.get("ename", ""))[:TEXT_FIELD_MAX_CHARS],
            "value": ANSI.sub("", as_text(content.get("evalue", "")))[:TEXT_FIELD_MAX_CHARS],
            "traceback": lines,
        }

    def done(self):
        line = {"id": self.id, "type": "done", "status": self.reply.get("status", "error"), "dropped": self.dropped}
        if line["status"] not in ("ok", "error", "aborted"):
            line["status"] = "error"
        if isinstance(self.reply.get("execution_count"), int):
            line["executionCount"] = self.reply["execution_count"]
        return line


class Bridge:
    def __init__(self, conn, limits):
        self.ch = Channel(conn.get("key", "").encode())
        self.limits = limits
        self.ctx = zmq.Context()
        self.shell = self.ctx.socket(zmq.DEALER)
        self.iopub = self.ctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        for sock, port in ((self.shell, "shell_port"), (self.iopub, "iopub_port")):
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint(conn, port))
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)
        self.poller.register(sys.stdin.fileno(), zmq.POLLIN)
        self.pending = b""
        self.current = None
        self.queue = []
        self.by_msg = {}

    def write(self, line):
        sys.stdout.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def wait_ready(self):
        """kernel_info until its reply and its iopub status arrive: both channels are connected."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            msg_id = self.ch.send(self.shell, "kernel_info_request", {})
            info, seen_status, until = None, False, time.monotonic() + 0.25
            while time.monotonic() < until and not (info and seen_status):
                for sock, _ in self.poller.poll(50):
                    if sock is self.shell:
                        msg = self.ch.recv(self.shell)
                        if msg and msg["parent"] == msg_id:
                            info = msg["content"]
                    elif sock is self.iopub:
                        msg = self.ch.recv(self.iopub)
                        if msg and msg["parent"] == msg_id and msg["type"] == "status":
                            seen_status = True
            if info and seen_status:
                lang = info.get("language_info") or {}
                self.write({"type": "ready", "language": str(lang.get("name", "python"))[:64],
                            "version": str(lang.get("version", ""))[:64]})
                return
        raise RuntimeError("the kernel did not answer within %d s" % READY_TIMEOUT_S)

    def run(self):
        self.wait_ready()
        while True:
            for sock, _ in self.poller.poll():
                if sock is self.shell:
                    self.on_shell(self.ch.recv(self.shell))
                elif sock is self.iopub:
                    self.on_iopub(self.ch.recv(self.iopub))
                elif not self.read_stdin():
                    return

    def read_stdin(self):
        chunk = os.read(sys.stdin.fileno(), 1 << 20)
        if not chunk:
            return False
        self.pending += chunk
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            if line.strip():
                self.on_request(json.loads(line))
        return True

    def on_request(self, req):
        if req.get("op") != "execute":
            raise RuntimeError("unknown op")
        ex = Execution(str(req["id"]), *self.limits)
        content = {"code": req["code"], "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        self.by_msg[self.ch.send(self.shell, "execute_request", content)] = ex

    def on_shell(self, msg):
        ex = msg and self.by_msg.get(msg["parent"])
        if ex and msg["type"] == "execute_reply":
            ex.reply = msg["content"]
            self.finish(msg["parent"], ex)

    def on_iopub(self, msg):
        ex = msg and self.by_msg.get(msg["parent"])
        if not ex:
            return
        kind, content = msg["type"], msg["content"]
        line = None
        if kind == "stream":
            line = ex.stream(content.get("name"), as_text(content.get("text", "")))
        elif kind == "execute_result":
            line = ex.bundle("result", content)
        elif kind in ("display_data", "update_display_data"):
            line = ex.bundle("display", content)
        elif kind == "error":
            line = ex.error(content)
        elif kind == "status" and content.get("execution_state") == "idle":
            ex.idle = True
            self.finish(msg["parent"], ex)
        if line:
            self.write(line)

    def finish(self, msg_id, ex):
        # Outputs travel on iopub, the reply on shell: done only once both the reply and the idle
        # status (after the last output) arrived.
        if ex.reply is not None and ex.idle:
            del self.by_msg[msg_id]
            self.write(ex.done())


def endpoint(conn, port_key):
    transport = conn.get("transport", "tcp")
    if transport == "ipc":
        return "ipc://%s-%s" % (conn["ip"], conn[port_key])
    return "tcp://%s:%s" % (conn["ip"], conn[port_key])


def main(argv):
    if len(argv) != 5:
        raise SystemExit("usage: kernel-bridge.py CONNECTION_FILE STREAM_MAX ITEM_MAX DISPLAY_MAX")
    with open(argv[1], encoding="utf-8") as f:
        conn = json.load(f)
    limits = tuple(int(x) for x in argv[2:5])
    bridge = Bridge(conn, limits)
    try:
        bridge.run()
    except Exception as err:  # reported to the agent, which ends the context
        bridge.write({"type": "fatal", "message": ("%s: %s" % (type(err).__name__, err))[:TEXT_FIELD_MAX_CHARS]})
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
