/*
 * sandbox-nflog: prints the packets the kernel logs to one NFLOG group, one JSON line each, for
 * the egress drop reporter (egress-proxy/src/drops/, docs/egress.md "Direct connections in the
 * audit"). kube-router logs every packet its NetworkPolicy drops to NFLOG group 100 (limited to
 * 10/minute per Pod); this helper is the small native part that reads them: raw netlink
 * (NETLINK_NETFILTER, nfnetlink_log), no libnetfilter_log.
 *
 *   sandbox-nflog GROUP
 *
 * stdout: per logged IPv4 or IPv6 packet whose headers were captured in full, one line
 *   {"src":"10.0.0.5","dst":"1.2.3.4","proto":"tcp","sport":40312,"dport":443}
 * proto is tcp, udp, icmp (ICMP and ICMPv6: no ports) or other (no ports). Malformed, truncated
 * and non-first-fragment packets are skipped. Each line is written with one write(2).
 * stderr: why it stopped, and a note when the kernel dropped log messages (socket overrun).
 *
 * Binding a group needs CAP_NET_ADMIN in the network namespace's user namespace (every
 * nfnetlink message does); once bound, the helper drops every capability, since it then parses
 * bytes a sandbox chose. Only one listener per group and namespace: a second bind fails (EPERM).
 * Exits 2 on bad arguments, 1 when setup fails or stdout is gone (the reader restarts it).
 *
 * Built with `gcc -static` so it runs in any image (test-e2e/images, mk/images.mk).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Bytes of each packet the kernel copies: IPv4 (<= 60) or IPv6 with a few extension headers,
 * plus the 4 bytes of ports. */
#define COPY_RANGE 128
/* Most IPv6 extension headers walked before giving up on a packet. */
#define MAX_EXT_HEADERS 8
#define RECV_BUF (256 * 1024)

static int sock;
static uint32_t seq;

static void die(const char *what) {
    fprintf(stderr, "sandbox-nflog: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Appends attribute `type` with `len` bytes of `data` to the message in `buf`. */
static void put_attr(char *buf, uint16_t type, const void *data, uint16_t len) {
    struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
    struct nlattr *a = (struct nlattr *)(buf + NLMSG_ALIGN(nlh->nlmsg_len));
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + len);
    memcpy((char *)a + NLA_HDRLEN, data, len);
    nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void start_msg(char *buf, uint8_t family, uint16_t res_id) {
    memset(buf, 0, 256);
    struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
    nlh->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
    nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = ++seq;
    struct nfgenmsg *g = NLMSG_DATA(nlh);
    g->nfgen_family = family;
    g->version = NFNETLINK_V0;
    g->res_id = htons(res_id);
}

/* Sends the message and waits for its acknowledgement: 0, or the kernel's errno. */
static int request(char *buf) {
    struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(sock, buf, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) die("send");
    char reply[4096];
    for (;;) {
        ssize_t n = recv(sock, reply, sizeof reply, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("receive the acknowledgement");
        }
        for (struct nlmsghdr *r = (struct nlmsghdr *)reply; NLMSG_OK(r, (size_t)n); r = NLMSG_NEXT(r, n)) {
            if (r->nlmsg_seq != nlh->nlmsg_seq || r->nlmsg_type != NLMSG_ERROR) continue;
            if (r->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) return EPROTO;
            return -((struct nlmsgerr *)NLMSG_DATA(r))->error;
        }
    }
}

static void setup(uint16_t group) {
    char buf[256];
    /* Legacy per-family binds: no-ops since Linux 3.17, needed before it. */
    static const uint8_t families[] = {AF_INET, AF_INET6};
    for (size_t i = 0; i < sizeof families; i++) {
        start_msg(buf, families[i], 0);
        struct nfulnl_msg_config_cmd cmd = {.command = NFULNL_CFG_CMD_PF_BIND};
        put_attr(buf, NFULA_CFG_CMD, &cmd, sizeof cmd);
        int err = request(buf);
        if (err != 0 && err != EEXIST && err != EBUSY) {
            errno = err;
            die("bind the address family (needs CAP_NET_ADMIN)");
        }
    }
    start_msg(buf, AF_UNSPEC, group);
    struct nfulnl_msg_config_cmd bind_cmd = {.command = NFULNL_CFG_CMD_BIND};
    put_attr(buf, NFULA_CFG_CMD, &bind_cmd, sizeof bind_cmd);
    int err = request(buf);
    if (err != 0) {
        errno = err;
        /* The family binds above passed nfnetlink's CAP_NET_ADMIN check, so EPERM here is the
         * group's: another socket has bound it. */
        fprintf(stderr, "sandbox-nflog: bind NFLOG group %u: %s%s\n", group, strerror(errno),
                err == EPERM ? " (another listener has the group)" : "");
        exit(1);
    }
    start_msg(buf, AF_UNSPEC, group);
    struct nfulnl_msg_config_mode mode = {.copy_range = htonl(COPY_RANGE), .copy_mode = NFULNL_COPY_PACKET};
    put_attr(buf, NFULA_CFG_MODE, &mode, sizeof mode);
    uint32_t qthresh = htonl(1), timeout = htonl(10); /* each packet at once; else within 0.1 s */
    put_attr(buf, NFULA_CFG_QTHRESH, &qthresh, sizeof qthresh);
    put_attr(buf, NFULA_CFG_TIMEOUT, &timeout, sizeof timeout);
    if ((err = request(buf)) != 0) {
        errno = err;
        die("set the copy mode");
    }
}

/* Gives up every capability: what follows parses packets a sandbox chose. */
static void drop_capabilities(void) {
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) != 0) die("drop capabilities");
}

static void out(const char *line, size_t len) {
    while (len > 0) {
        ssize_t n = write(1, line, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("write stdout");
        }
        line += n;
        len -= (size_t)n;
    }
}

static const char *proto_name(uint8_t p) {
    switch (p) {
    case IPPROTO_TCP: return "tcp";
    case IPPROTO_UDP: return "udp";
    case IPPROTO_ICMP:
    case IPPROTO_ICMPV6: return "icmp";
    default: return "other";
    }
}

/* Prints one line for the packet `p` of `len` captured bytes, or nothing when it is not whole. */
static void packet(const uint8_t *p, size_t len) {
    char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
    uint8_t proto;
    size_t l4;
    if (len < 1) return;
    if (p[0] >> 4 == 4) {
        if (len < 20) return;
        size_t ihl = (size_t)(p[0] & 0x0f) * 4;
        if (ihl < 20 || ihl > len) return;
        if ((((p[6] & 0x1f) << 8) | p[7]) != 0) return; /* a later fragment: no ports, seen before */
        proto = p[9];
        l4 = ihl;
        if (!inet_ntop(AF_INET, p + 12, src, sizeof src) || !inet_ntop(AF_INET, p + 16, dst, sizeof dst)) return;
    } else if (p[0] >> 4 == 6) {
        if (len < 40) return;
        proto = p[6];
        l4 = 40;
        for (int i = 0; i < MAX_EXT_HEADERS; i++) {
            if (proto == 0 || proto == 43 || proto == 60) { /* hop-by-hop, routing, destination */
                if (l4 + 8 > len) return;
                proto = p[l4];
                l4 += ((size_t)p[l4 + 1] + 1) * 8;
            } else if (proto == 44) { /* fragment */
                if (l4 + 8 > len) return;
                if (((p[l4 + 2] << 8 | p[l4 + 3]) & 0xfff8) != 0) return;
                proto = p[l4];
                l4 += 8;
            } else if (proto == 51) { /* authentication header */
                if (l4 + 8 > len) return;
                proto = p[l4];
                l4 += ((size_t)p[l4 + 1] + 2) * 4;
            } else {
                break;
            }
        }
        if (proto == 0 || proto == 43 || proto == 60 || proto == 44 || proto == 51) return;
        if (!inet_ntop(AF_INET6, p + 8, src, sizeof src) || !inet_ntop(AF_INET6, p + 24, dst, sizeof dst)) return;
    } else {
        return;
    }
    char line[256];
    int n;
    if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) {
        if (l4 + 4 > len) return;
        n = snprintf(line, sizeof line, "{\"src\":\"%s\",\"dst\":\"%s\",\"proto\":\"%s\",\"sport\":%u,\"dport\":%u}\n",
                     src, dst, proto_name(proto), (unsigned)(p[l4] << 8 | p[l4 + 1]),
                     (unsigned)(p[l4 + 2] << 8 | p[l4 + 3]));
    } else {
        if (l4 > len) return;
        n = snprintf(line, sizeof line, "{\"src\":\"%s\",\"dst\":\"%s\",\"proto\":\"%s\"}\n", src, dst, proto_name(proto));
    }
    if (n > 0 && (size_t)n < sizeof line) out(line, (size_t)n);
}

/* The payload attribute of one NFULNL_MSG_PACKET message, if any. */
static void message(const struct nlmsghdr *nlh) {
    if (nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)) return;
    if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return;
    const char *a = (const char *)NLMSG_DATA(nlh) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
    const char *end = (const char *)nlh + nlh->nlmsg_len;
    while (a + NLA_HDRLEN <= end) {
        const struct nlattr *attr = (const struct nlattr *)a;
        if (attr->nla_len < NLA_HDRLEN || attr->nla_len > end - a) return;
        if ((attr->nla_type & NLA_TYPE_MASK) == NFULA_PAYLOAD) {
            packet((const uint8_t *)a + NLA_HDRLEN, attr->nla_len - NLA_HDRLEN);
            return;
        }
        a += NLA_ALIGN(attr->nla_len);
    }
}

int main(int argc, char **argv) {
    char *endp;
    if (argc != 2 || argv[1][0] < '0' || argv[1][0] > '9') {
        fprintf(stderr, "usage: sandbox-nflog GROUP (0..65535)\n");
        return 2;
    }
    errno = 0;
    unsigned long group = strtoul(argv[1], &endp, 10);
    if (errno != 0 || *endp != '\0' || group > 65535) {
        fprintf(stderr, "usage: sandbox-nflog GROUP (0..65535)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    if (sock < 0) die("netlink socket");
    int rcvbuf = RECV_BUF * 4;
    /* Best effort: the default buffer holds fewer messages; a smaller one only means overruns. */
    if (setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) die("SO_RCVBUF");
    struct sockaddr_nl local = {.nl_family = AF_NETLINK};
    if (bind(sock, (struct sockaddr *)&local, sizeof local) != 0) die("bind the netlink socket");
    setup((uint16_t)group);
    drop_capabilities();

    static char buf[RECV_BUF];
    unsigned long overruns = 0;
    for (;;) {
        struct sockaddr_nl from;
        socklen_t fromlen = sizeof from;
        ssize_t n = recvfrom(sock, buf, sizeof buf, 0, (struct sockaddr *)&from, &fromlen);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOBUFS) { /* the kernel dropped messages: say so, keep reading */
                if (++overruns == 1 || overruns % 100 == 0)
                    fprintf(stderr, "sandbox-nflog: receive buffer overrun (%lu so far)\n", overruns);
                continue;
            }
            die("receive");
        }
        if (fromlen != sizeof from || from.nl_pid != 0) continue; /* only the kernel speaks here */
        for (struct nlmsghdr *nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, (size_t)n); nlh = NLMSG_NEXT(nlh, n))
            message(nlh);
    }
}
