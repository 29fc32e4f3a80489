"""The agent's Python engine for one code context (docs/adr/0033-code-interpreter.md).

``kernel-bridge.py STREAM_MAX ITEM_MAX DISPLAY_MAX``: an IPython ``InteractiveShell`` in this
process, no Jupyter kernel and no ZeroMQ (ipykernel's shell, control and IOPub threads cost a
thread wake-up per message, which is slow under gVisor, and its imports seconds per start).
Runs come as NDJSON on stdin, answers go as NDJSON to stdout (the agent's pipe, kept on a
duplicate: fds 0, 1 and 2 become the cells'); stdout and stderr (file descriptors 1 and 2, so
subprocesses too) go to pipes read by one capture thread, asleep unless something is written;
results, displays (IPython's formatters: every MIME type they give, matplotlib's inline backend
to image/png) and errors are written by the shell's own display hook, publisher and traceback
hook. The agent interrupts a run with SIGINT to this process's group (KeyboardInterrupt in the
cell) and restarts a context by killing the process.

Agent -> engine (stdin), one JSON object per line:
    {"op": "execute", "id": "<id>", "code": "<source>"}
Engine -> agent (stdout), one JSON object per line:
    {"type": "ready", "language": "python", "version": "3.11.2"}    once it can run code
    {"id", "type": "stdout"|"stderr", "text"}                        stream output
    {"id", "type": "result"|"display", "data": {mime: text}, "omitted": [{"mime", "bytes"}]}
    {"id", "type": "error", "name", "value", "traceback": [lines]}
    {"id", "type": "done", "status": "ok"|"error"|"aborted", "executionCount"?,
     "dropped": {"stdout": n, "stderr": n, "displays": n}}
    {"type": "fatal", "message"}                                     then the process exits 1

Everything a run produces is the sandbox's own output, so it is bounded here before it is
written (the agent checks every line again and enforces the same bounds): stream text per
execution and stream, each MIME item, displays per execution, tracebacks. Values that are not
strings (application/json) are sent as JSON text.
"""

import base64
import codecs
import json
import math
import os
import platform
import re
import select
import signal
import sys
import threading

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
TRACEBACK_MAX_CHARS = 64 * 1024
TEXT_FIELD_MAX_CHARS = 4096
READ_CHUNK = 64 * 1024
# Bytes of captured output one drain reads at most (a writer faster than us cannot hold a run open).
DRAIN_MAX_BYTES = 16 * 1024 * 1024


def utf8_cut(text, max_bytes):
    """The longest prefix of text whose UTF-8 encoding has at most max_bytes bytes."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= max_bytes:
        return text, len(raw), 0
    return raw[:max_bytes].decode("utf-8", "ignore"), max_bytes, len(raw) - max_bytes


def as_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):  # a _repr_png_ giving raw bytes: base64, as ipykernel
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return json_text(value)


def json_text(value):
    """A display's JSON value as JSON text: never raises (a cell's repr must not fail the cell)."""
    try:
        return json.dumps(value, default=json_default, allow_nan=False)
    except (ValueError, RecursionError):  # NaN or Infinity, a cycle
        pass
    try:
        return json.dumps(finite(value), default=json_default, allow_nan=False)
    except (ValueError, RecursionError):
        return json.dumps(repr(value)[:TEXT_FIELD_MAX_CHARS])


def json_default(obj):
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(obj).decode("ascii")
    return repr(obj)


def finite(value):
    """value with NaN and infinite floats as null (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


class Execution:
    """The bounds and counters of one run."""

    def __init__(self, req_id, stream_max, item_max, display_max):
        self.id = req_id
        self.stream_max = stream_max
        self.item_max = item_max
        self.display_left = display_max
        self.sent = {"stdout": 0, "stderr": 0}
        self.dropped = {"stdout": 0, "stderr": 0, "displays": 0}
        self.reply = None

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


class Writer:
    """Writes whole protocol lines to one file descriptor, from any thread."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()

    def write(self, line):
        data = memoryview((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        with self.lock:
            while data:
                data = data[os.write(self.fd, data) :]


class LineReader:
    """Request lines from a file descriptor."""

    def __init__(self, fd):
        self.fd = fd
        self.pending = b""

    def lines(self):
        """The complete lines read by one os.read; None at end of input."""
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self.pending += chunk
        *whole, self.pending = self.pending.split(b"\n")
        return [json.loads(line) for line in whole if line.strip()]


class Interrupts:
    """SIGINT becomes KeyboardInterrupt only while a cell runs, never inside a protocol write.

    The agent signals the whole process group; a SIGINT between runs (a deadline racing the end of
    a run) is ignored, and one arriving while this process writes a line is raised once the line is
    whole, so the agent never sees half a line.
    """

    def __init__(self):
        self.armed = False
        self.critical = 0
        self.pending = False
        self.main = threading.get_ident()
        signal.signal(signal.SIGINT, self.handler)

    def handler(self, _signum, _frame):
        if not self.armed:
            return
        if self.critical:
            self.pending = True
            return
        raise KeyboardInterrupt

    def __enter__(self):
        if threading.get_ident() == self.main:
            self.critical += 1

    def __exit__(self, *_exc):
        if threading.get_ident() != self.main:
            return
        self.critical -= 1
        if self.critical == 0 and self.pending and self.armed:
            self.pending = False
            raise KeyboardInterrupt


class Capture:
    """File descriptors 1 and 2 as pipes, read into the current run's stdout and stderr.

    One thread waits in poll() and forwards what is written (by print, C code or a subprocess);
    it sleeps while nothing is. Before each display, error and end line the main thread drains
    the pipes itself, under the same lock, so output written before them is sent before them.
    Output written between runs has no run to go to and is dropped.
    """

    def __init__(self, out, guard):
        self.out = out
        self.guard = guard
        self.lock = threading.Lock()
        self.current = None
        self.streams = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
            os.set_blocking(r, False)
            self.streams[r] = (name, codecs.getincrementaldecoder("utf-8")("replace"))
        # One write per line, even under PYTHONUNBUFFERED (print writes its end separately).
        sys.stdout.reconfigure(line_buffering=True, write_through=False)
        sys.stderr.reconfigure(line_buffering=True, write_through=False)
        threading.Thread(target=self.loop, name="sandbox-capture", daemon=True).start()

    def loop(self):
        poller = select.poll()
        for fd in self.streams:
            poller.register(fd, select.POLLIN)
        while True:
            for fd, _ in poller.poll():
                with self.lock:
                    if not self.read(fd, READ_CHUNK):
                        poller.unregister(fd)

    def read(self, fd, budget):
        """Forwards what fd holds (up to budget bytes); False once every writer closed it."""
        name, decoder = self.streams[fd]
        while budget > 0:
            try:
                chunk = os.read(fd, min(READ_CHUNK, budget))
            except BlockingIOError:
                return True
            if not chunk:
                return False
            budget -= len(chunk)
            text = decoder.decode(chunk)
            line = self.current.stream(name, text) if self.current and text else None
            if line:
                self.out.write(line)
        return True

    def drain(self):
        """Sends what was written so far (main thread: before a display, an error, the end)."""
        with self.guard:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass  # closed or replaced by the cell: its output is its own business
            with self.lock:
                for fd in self.streams:
                    self.read(fd, DRAIN_MAX_BYTES)


def build_shell(engine):
    """The InteractiveShell, its results, displays and tracebacks written by `engine`."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            engine.emit("display", {"data": data})

        def clear_output(self, wait=False):
            pass  # a run's displays are a list, not a screen

    class Hook(DisplayHook):
        def start_displayhook(self):
            super().start_displayhook()
            self.format_data = None

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self.format_data = format_dict

        def finish_displayhook(self):
            self._is_active = False
            if self.format_data:
                engine.emit("result", {"data": self.format_data, "execution_count": self.prompt_count})

    class Shell(InteractiveShell):
        def _showtraceback(self, etype, evalue, stb):
            engine.emit("error", {"ename": etype.__name__, "evalue": str(evalue), "traceback": stb})

        def enable_gui(self, gui=None):
            # %matplotlib inline comes here with no GUI; there is no event loop for any other.
            if gui not in (None, "inline"):
                raise UsageError("the code interpreter has no GUI event loop (%s): use the inline backend" % gui)

        def ask_exit(self):
            # exit() or quit(): the engine ends after this run; the next run gets a new one.
            self.exit_now = True

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    return Shell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher)


def no_input(*_args, **_kwargs):
    from IPython.core.error import StdinNotImplementedError

    raise StdinNotImplementedError("input() is not supported: the code interpreter has no stdin")


class ShellEngine:
    """Runs cells in an InteractiveShell, one at a time, as the agent sends them."""

    def __init__(self, limits, out):
        self.limits = limits
        self.out = out
        # The protocol keeps the pipes the agent gave; fds 0, 1 and 2 become the cells' (os.dup
        # makes them non-inheritable: subprocesses of a cell never see the protocol).
        self.requests = LineReader(os.dup(0))
        self.guard = Interrupts()
        self.shell = build_shell(self)
        import builtins

        builtins.input = no_input
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.capture = Capture(self.out, self.guard)
        self.current = None

    def emit(self, kind, content):
        """A result, display or error of the running cell (dropped outside a run)."""
        ex = self.current
        if ex is None:
            return
        self.capture.drain()
        with self.guard:
            self.out.write(ex.error(content) if kind == "error" else ex.bundle(kind, content))

    def serve(self):
        self.out.write({"type": "ready", "language": "python", "version": platform.python_version()[:64]})
        while True:
            requests = self.requests.lines()
            if requests is None:
                return
            for req in requests:
                if req.get("op") != "execute":
                    raise RuntimeError("unknown op")
                self.execute(Execution(str(req["id"]), *self.limits), req["code"])
                if self.shell.exit_now:  # exit() or quit() in a cell: the next run gets a new engine
                    return

    def execute(self, ex, code):
        self.current = ex
        self.capture.current = ex
        result = None
        try:
            self.guard.armed = True
            result = self.shell.run_cell(code, store_history=True)
            self.guard.armed = False
        except KeyboardInterrupt:  # in IPython's own code around the cell
            self.guard.armed = False
            self.emit("error", {"ename": "KeyboardInterrupt", "evalue": "", "traceback": []})
        self.guard.pending = False
        self.capture.drain()
        ok = result is not None and result.success
        ex.reply = {"status": "ok" if ok else "error", "execution_count": self.shell.execution_count - 1}
        with self.capture.lock:
            self.capture.current = None
        self.current = None
        self.out.write(ex.done())


USAGE = "usage: kernel-bridge.py STREAM_MAX ITEM_MAX DISPLAY_MAX"


def main(argv):
    if len(argv) != 4:
        raise SystemExit(USAGE)
    limits = tuple(int(x) for x in argv[1:4])
    # The protocol keeps the stdout the agent gave; fd 1 becomes the cells' (Capture).
    out = Writer(os.dup(1))
    try:
        ShellEngine(limits, out).serve()
    except Exception as err:  # reported to the agent, which ends the context
        out.write({"type": "fatal", "message": ("%s: %s" % (type(err).__name__, err))[:TEXT_FIELD_MAX_CHARS]})
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
