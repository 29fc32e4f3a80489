/*
 * pause: the process that holds a pod's namespaces open. It sleeps until SIGINT or SIGTERM and
 * exits 0, and, as PID 1 of the pod's PID namespace, reaps zombies whenever SIGCHLD arrives so
 * orphaned processes of a shared-PID pod do not pile up.
 *
 * Built with `gcc -static` so the image needs no libc. Written for this project; it follows the
 * behaviour of the Kubernetes pause container, not its code.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
	(void)sig;
	_exit(0);
}

static void on_child(int sig) {
	(void)sig;
	int saved = errno; /* a handler must not clobber errno of the interrupted code */
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
	errno = saved;
}

static int install(int sig, void (*handler)(int)) {
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0) {
		fprintf(stderr, "pause: sigaction(%d): %s\n", sig, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("pause (sandbox-platform) 3.10");
		return 0;
	}
	if (getpid() != 1) {
		/* Still useful outside a PID namespace (tests), but worth saying: zombies of other
		 * processes are not ours to reap there. */
		fprintf(stderr, "pause: warning: not running as PID 1\n");
	}
	if (install(SIGINT, on_stop) || install(SIGTERM, on_stop) || install(SIGCHLD, on_child)) {
		return 1;
	}
	for (;;) {
		pause();
	}
}
