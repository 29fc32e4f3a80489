#!/usr/bin/env python3
"""Runs a command in a new pseudo-terminal, as a person's terminal emulator would.

Usage: pty-run.py ROWS COLS -- COMMAND [ARG...]

The command gets a fresh pty (ROWS x COLS) as its controlling terminal and its stdin, stdout and
stderr, in its own session, so it sees a real TTY (raw mode, window size, SIGWINCH). This process
relays its own stdin to the terminal (the keystrokes) and the terminal's output to its stdout.
Lines "resize ROWS COLS" on file descriptor 3, when open, change the terminal's size: the kernel
then sends SIGWINCH to the command, as a window resize does. It exits with the command's status
(128 + the signal when a signal ended it). Python's standard library only (pty, termios).
"""

import errno
import fcntl
import os
import select
import struct
import sys
import termios

CONTROL_FD = 3


def set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def spawn(command: list[str], rows: int, cols: int) -> tuple[int, int]:
    """Forks the command on a new pty of the given size; returns (pid, master fd)."""
    master, slave = os.openpty()
    set_size(slave, rows, cols)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            if slave > 2:
                os.close(slave)
            if fd_open(CONTROL_FD):
                os.close(CONTROL_FD)
            os.execvp(command[0], command)
        except OSError as err:
            os.write(2, f"pty-run: {command[0]}: {err.strerror}\n".encode())
        os._exit(127)
    os.close(slave)
    return pid, master


def fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def relay(pid: int, master: int) -> int:
    """Relays until the terminal's last writer closed it; returns the command's exit status."""
    inputs = [0, master] + ([CONTROL_FD] if fd_open(CONTROL_FD) else [])
    control = b""
    while True:
        readable, _, _ = select.select(inputs, [], [])
        if master in readable:
            try:
                data = os.read(master, 65536)
            except OSError as err:
                if err.errno != errno.EIO:  # EIO: the command side of the pty is closed
                    raise
                data = b""
            if not data:
                break
            os.write(1, data)
        if 0 in readable:
            data = os.read(0, 65536)
            if data:
                os.write(master, data)
            else:
                inputs.remove(0)  # no more keystrokes; the terminal stays open
        if CONTROL_FD in readable:
            data = os.read(CONTROL_FD, 4096)
            if not data:
                inputs.remove(CONTROL_FD)
            control += data
            while b"\n" in control:
                line, control = control.split(b"\n", 1)
                words = line.decode().split()
                if len(words) != 3 or words[0] != "resize":
                    raise SystemExit(f"pty-run: unknown control line {line!r}")
                set_size(master, int(words[1]), int(words[2]))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def main() -> int:
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        raise SystemExit(__doc__)
    rows, cols = int(sys.argv[1]), int(sys.argv[2])
    pid, master = spawn(sys.argv[4:], rows, cols)
    return relay(pid, master)


if __name__ == "__main__":
    sys.exit(main())
