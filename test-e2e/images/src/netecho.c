/*
 * netecho: a tiny TCP responder for pod-to-pod and host-to-pod network tests.
 *
 *   netecho PORT          echo every byte back on each connection
 *   netecho --http PORT   answer every connection with "HTTP/1.0 200 OK" and a body naming the
 *                         host (the pod name) and the peer address, then close
 *
 * One child process per connection, so a stuck client never blocks the next one. Built with
 * `gcc -static` so it runs in any image. Listens on IPv6 any-address with V6ONLY off, which also
 * accepts IPv4, falling back to IPv4 when the kernel has no IPv6.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_on(int port) {
	int one = 1, zero = 0;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd >= 0) {
		struct sockaddr_in6 a6;
		memset(&a6, 0, sizeof(a6));
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons(port);
		a6.sin6_addr = in6addr_any;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(fd, 64) == 0) {
			return fd;
		}
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		return -1;
	}
	struct sockaddr_in a4;
	memset(&a4, 0, sizeof(a4));
	a4.sin_family = AF_INET;
	a4.sin_port = htons(port);
	a4.sin_addr.s_addr = htonl(INADDR_ANY);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0 || listen(fd, 64) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return -1;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static void serve_echo(int fd) {
	char buf[16384];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0 || write_all(fd, buf, (size_t)n) != 0) {
			return;
		}
	}
}

static void serve_http(int fd, const struct sockaddr_storage *peer) {
	char host[256] = "unknown", addr[INET6_ADDRSTRLEN] = "?", body[512], resp[1024], req[4096];
	gethostname(host, sizeof(host) - 1);
	if (peer->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, addr, sizeof(addr));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, addr, sizeof(addr));
	}
	/* Read (part of) the request so the client does not see a reset for unread data. */
	ssize_t got = read(fd, req, sizeof(req));
	(void)got;
	int blen = snprintf(body, sizeof(body), "netecho host=%s peer=%s\n", host, addr);
	int rlen = snprintf(resp, sizeof(resp),
	                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
	                    "Connection: close\r\n\r\n%s",
	                    blen, body);
	write_all(fd, resp, (size_t)rlen);
}

int main(int argc, char **argv) {
	int http = argc == 3 && strcmp(argv[1], "--http") == 0;
	if (argc != 2 && !http) {
		fprintf(stderr, "usage: netecho [--http] PORT\n");
		return 2;
	}
	int port = atoi(argv[argc - 1]);
	if (port <= 0 || port > 65535) {
		fprintf(stderr, "netecho: bad port %s\n", argv[argc - 1]);
		return 2;
	}
	signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
	int lfd = listen_on(port);
	if (lfd < 0) {
		fprintf(stderr, "netecho: listen on %d: %s\n", port, strerror(errno));
		return 1;
	}
	fprintf(stderr, "netecho: listening on %d (%s)\n", port, http ? "http" : "echo");
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int cfd = accept(lfd, (struct sockaddr *)&peer, &plen);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			fprintf(stderr, "netecho: accept: %s\n", strerror(errno));
			return 1;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			if (http) {
				serve_http(cfd, &peer);
			} else {
				serve_echo(cfd);
			}
			_exit(0);
		}
		if (pid < 0) {
			fprintf(stderr, "netecho: fork: %s\n", strerror(errno));
		}
		close(cfd);
	}
}
