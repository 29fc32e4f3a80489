/*
 * sandbox-pty: runs a program on a new pseudo-terminal for the sandbox agent's terminal
 * (GET /v1/pty). Node has no PTY API without a native module; this static helper is the small
 * native part, driven over plain pipes by the agent (sandbox-agent/src/pty/).
 *
 *   sandbox-pty COLS ROWS -- PROGRAM [ARG...]
 *
 *   fd 0  terminal input from the agent; EOF hangs the terminal up (SIGHUP to the program's
 *         session, SIGKILL 2 s later if it is still there)
 *   fd 1  terminal output to the agent
 *   fd 2  the helper's own error messages
 *   fd 3  control from the agent: lines "COLS ROWS\n" resize the terminal (TIOCSWINSZ, so the
 *         program gets SIGWINCH); malformed lines are reported on fd 2 and ignored
 *   fd 4  status to the agent: "pid N\n" once the program is forked (its session id, so the
 *         agent can clean up what it leaves behind), "exit CODE SIGNAL\n" at the end (SIGNAL 0
 *         when it exited normally)
 *
 * The program runs as a session leader with the terminal as its controlling tty (setsid,
 * TIOCSCTTY) on stdin, stdout and stderr. The helper's exit status is the program's (128+N when
 * killed by signal N), 127 when it cannot be started, 125 when the helper itself fails. All
 * descriptors are non-blocking and buffered (64 KiB each way), so a slow reader on either side
 * holds that side back without stopping resizes or the other direction. Once the program has
 * exited, output still buffered in the terminal is drained until the terminal reports the end
 * (EIO) or stays silent for 100 ms (a background job may keep it open), then written out.
 *
 * Built with `gcc -static` so it runs in any image (test-e2e/images, mk/images.mk).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define BUF_SIZE 65536
#define LINE_MAX_LEN 64
#define HANGUP_GRACE_MS 2000
#define DRAIN_QUIET_MS 100
#define EXIT_HELPER 125
#define EXIT_NOT_STARTED 127

struct buffer {
	char data[BUF_SIZE];
	size_t len;
};

static int sigchld_pipe[2] = {-1, -1};

static void on_sigchld(int sig) {
	(void)sig;
	int saved = errno;
	if (write(sigchld_pipe[1], "c", 1) < 0) {
		/* the pipe is full: a wake-up is already pending */
	}
	errno = saved;
}

static int parse_dim(const char *s, unsigned short *out) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535) {
		return -1;
	}
	*out = (unsigned short)v;
	return 0;
}

static int set_nonblock(int fd) {
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void status_line(const char *line) {
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t n = write(4, line + off, len - off);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return; /* the agent stopped listening: nothing to report to */
		}
		off += (size_t)n;
	}
}

/* Reads what fits into b; returns 0 on EOF or a hangup error, 1 otherwise. */
static int fill(int fd, struct buffer *b) {
	ssize_t n = read(fd, b->data + b->len, BUF_SIZE - b->len);
	if (n > 0) {
		b->len += (size_t)n;
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		return 1;
	}
	return 0; /* 0 = EOF; EIO = every slave descriptor closed */
}

/* Writes what the descriptor takes from b; returns 0 when it is gone. */
static int flush(int fd, struct buffer *b) {
	ssize_t n = write(fd, b->data, b->len);
	if (n > 0) {
		memmove(b->data, b->data + n, b->len - (size_t)n);
		b->len -= (size_t)n;
		return 1;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Applies complete "COLS ROWS" lines of the control channel; returns 0 at its EOF. */
static int control(int master, char *line, size_t *len) {
	ssize_t n = read(3, line + *len, LINE_MAX_LEN - *len);
	if (n < 0) {
		return errno == EAGAIN || errno == EINTR;
	}
	if (n == 0) {
		return 0;
	}
	*len += (size_t)n;
	char *nl;
	while ((nl = memchr(line, '\n', *len)) != NULL) {
		*nl = '\0';
		char *space = strchr(line, ' ');
		struct winsize ws;
		memset(&ws, 0, sizeof(ws));
		if (space != NULL) {
			*space = '\0';
		}
		if (space == NULL || parse_dim(line, &ws.ws_col) != 0 || parse_dim(space + 1, &ws.ws_row) != 0) {
			fprintf(stderr, "sandbox-pty: ignored a malformed resize line\n");
		} else if (ioctl(master, TIOCSWINSZ, &ws) != 0) {
			fprintf(stderr, "sandbox-pty: TIOCSWINSZ: %s\n", strerror(errno));
		}
		size_t used = (size_t)(nl - line) + 1;
		memmove(line, nl + 1, *len - used);
		*len -= used;
	}
	if (*len == LINE_MAX_LEN) {
		fprintf(stderr, "sandbox-pty: ignored a resize line over %d bytes\n", LINE_MAX_LEN);
		*len = 0;
	}
	return 1;
}

static void run_child(int slave, char **argv) {
	setsid();
	if (ioctl(slave, TIOCSCTTY, 0) != 0) {
		fprintf(stderr, "sandbox-pty: cannot make the terminal controlling: %s\n", strerror(errno));
		_exit(EXIT_HELPER);
	}
	dup2(slave, 0);
	dup2(slave, 1);
	dup2(slave, 2);
	if (slave > 2) {
		close(slave);
	}
	/* Ignored signals stay ignored across exec: give the program the defaults. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	execvp(argv[0], argv);
	fprintf(stderr, "sandbox-pty: cannot run %s: %s\r\n", argv[0], strerror(errno));
	_exit(EXIT_NOT_STARTED);
}

/*
 * Opens the pseudo-terminal pair: the master (returned) and its replica (*slave). The replica is
 * opened here, before the fork, and the child inherits it: gVisor reports a hangup on a master
 * (POLLHUP, read fails with EIO) while no replica is open, also before the first open, so a
 * child still on its way to open() would make the helper stop serving a terminal that never
 * started. Opened with O_NOCTTY: the helper is a session leader (the agent spawns it detached)
 * and must not take the terminal as its own controlling tty; the child makes it its own.
 */
static int open_terminal(unsigned short cols, unsigned short rows, int *slave) {
	char name[128];
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof(name)) != 0) {
		fprintf(stderr, "sandbox-pty: cannot open a pseudo-terminal: %s\n", strerror(errno));
		return -1;
	}
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0) {
		fprintf(stderr, "sandbox-pty: cannot open the terminal: %s\n", strerror(errno));
		return -1;
	}
	struct winsize ws;
	memset(&ws, 0, sizeof(ws));
	ws.ws_col = cols;
	ws.ws_row = rows;
	if (ioctl(master, TIOCSWINSZ, &ws) != 0) {
		fprintf(stderr, "sandbox-pty: TIOCSWINSZ: %s\n", strerror(errno));
		return -1;
	}
	return master;
}

/* Waits for the program after a hangup: SIGHUP now, SIGKILL after the grace. */
static int reap_after_hangup(pid_t pid) {
	int status;
	kill(-pid, SIGHUP);
	for (int waited = 0; waited < HANGUP_GRACE_MS; waited += 20) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			return status;
		}
		usleep(20000);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return status;
}

static int report_exit(int status) {
	char line[64];
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	snprintf(line, sizeof(line), "exit %d %d\n", code, sig);
	status_line(line);
	return code;
}

/* Writes out what is left for the agent, blocking (the program is gone; nothing else to serve). */
static void final_flush(struct buffer *out) {
	int flags = fcntl(1, F_GETFL);
	if (flags >= 0) {
		fcntl(1, F_SETFL, flags & ~O_NONBLOCK);
	}
	while (out->len > 0 && flush(1, out)) {
	}
}

int main(int argc, char **argv) {
	unsigned short cols, rows;
	if (argc < 5 || strcmp(argv[3], "--") != 0 || parse_dim(argv[1], &cols) != 0 ||
	    parse_dim(argv[2], &rows) != 0) {
		fprintf(stderr, "usage: sandbox-pty COLS ROWS -- PROGRAM [ARG...]\n");
		return EXIT_HELPER;
	}
	int slave = -1;
	int master = open_terminal(cols, rows, &slave);
	if (master < 0 || pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		return EXIT_HELPER;
	}
	fcntl(3, F_SETFD, FD_CLOEXEC);
	fcntl(4, F_SETFD, FD_CLOEXEC);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "sandbox-pty: fork: %s\n", strerror(errno));
		return EXIT_HELPER;
	}
	if (pid == 0) {
		run_child(slave, argv + 4);
	}
	close(slave); /* the child's copy keeps the terminal open until the program and its jobs end */
	char line[64];
	snprintf(line, sizeof(line), "pid %d\n", (int)pid);
	status_line(line);
	set_nonblock(master);
	set_nonblock(0);
	set_nonblock(1);
	set_nonblock(3);

	static struct buffer in, out;
	char ctl[LINE_MAX_LEN];
	size_t ctl_len = 0;
	int in_open = 1, ctl_open = 1, master_open = 1, exited = 0, status = 0;
	while (master_open) {
		struct pollfd p[5] = {
		    {.fd = in_open && in.len < BUF_SIZE ? 0 : -1, .events = POLLIN},
		    {.fd = master, .events = (out.len < BUF_SIZE ? POLLIN : 0) | (in.len > 0 ? POLLOUT : 0)},
		    {.fd = out.len > 0 ? 1 : -1, .events = POLLOUT},
		    {.fd = ctl_open ? 3 : -1, .events = POLLIN},
		    {.fd = sigchld_pipe[0], .events = POLLIN},
		};
		int ready = poll(p, 5, exited ? DRAIN_QUIET_MS : -1);
		if (ready < 0 && errno != EINTR) {
			break;
		}
		if (ready == 0) {
			break; /* exited and quiet: the rest belongs to background jobs */
		}
		if (p[0].revents && !fill(0, &in)) {
			status = reap_after_hangup(pid);
			exited = 1;
			break; /* the agent hung up: nobody reads the output any more */
		}
		if ((p[1].revents & POLLOUT) && !flush(master, &in)) {
			in.len = 0;
		}
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !fill(master, &out)) {
			master_open = 0;
		}
		if (p[2].revents && !flush(1, &out)) {
			break; /* the agent's end is gone */
		}
		if (p[3].revents && !control(master, ctl, &ctl_len)) {
			ctl_open = 0;
		}
		if (p[4].revents) {
			char drain[16];
			while (read(sigchld_pipe[0], drain, sizeof(drain)) > 0) {
			}
			if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
				exited = 1;
			}
		}
	}
	if (!exited) {
		status = reap_after_hangup(pid);
	}
	final_flush(&out);
	return report_exit(status);
}
