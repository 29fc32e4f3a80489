/*
 * sandbox-watch: reports changes under a directory with inotify, for the sandbox agent's file
 * watching (GET /v1/watch, sandbox-agent/src/watch/). Node's fs.watch reports "rename" for a
 * create, a delete and both halves of a move alike, and cannot pair the halves; inotify can, by
 * the cookie of IN_MOVED_FROM and IN_MOVED_TO. This static helper is that small native part.
 *
 *   sandbox-watch [-r] DIR
 *
 * stdout: one record per change, in the order the kernel reported them:
 *   KIND TYPE PATH '\0' [FROM '\0']
 * KIND is one byte: c create (also moved in from outside), m modify (content written), d delete
 * (also moved out), r rename within the tree (PATH the new path, FROM the old one), o overflow
 * (the kernel dropped events), w watching (once, when every watch is in place), g gone (DIR was
 * deleted or moved: the last record), e error (PATH is the reason: the last record). TYPE is one
 * byte: d directory, f anything else, - not applicable. Paths are relative to DIR ("" is DIR).
 *
 * With -r every directory below DIR is watched, and so is each one created or moved in later
 * (its entries at that moment are reported as created: they may predate the watch). Symbolic
 * links are never followed: a link to a directory outside DIR is a file here. At most
 * MAX_WATCHES directories are watched ("e too-many-directories" beyond). Exits 0 after g, 3 after
 * e, 2 on bad arguments. A write error on stdout (the agent went away) ends it.
 *
 * Built with `gcc -static` so it runs in any image (test-e2e/images, mk/images.mk).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_WATCHES 8192
#define MASK (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | \
              IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
/* How long an IN_MOVED_FROM waits for its IN_MOVED_TO before it counts as a move out. */
#define PAIR_WAIT_MS 20

static int fd;
static int recursive;
static char *root;
/* wd -> path relative to root ("" for root), NULL when free. */
static char **paths;
static int npaths;
static int watches;
static int root_wd = -1;

static void die_write(void) { _exit(0); }

static void out(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(1, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            die_write();
        }
        buf += n;
        len -= (size_t)n;
    }
}

static void record(char kind, char type, const char *path, const char *from) {
    char head[2] = {kind, type};
    out(head, 2);
    out(path, strlen(path) + 1);
    if (from) out(from, strlen(from) + 1);
}

static void fail(const char *reason) {
    record('e', '-', reason, NULL);
    exit(3);
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) fail("out-of-memory");
    if (a == 0) {
        memcpy(p, name, b + 1);
    } else {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static char *absolute(const char *rel) { return join(root, rel); }

static void remember(int wd, const char *rel) {
    if (wd >= npaths) {
        int n = wd * 2 + 16;
        char **grown = realloc(paths, sizeof(char *) * (size_t)n);
        if (!grown) fail("out-of-memory");
        for (int i = npaths; i < n; i++) grown[i] = NULL;
        paths = grown;
        npaths = n;
    }
    if (paths[wd]) {
        free(paths[wd]);
        watches--;
    }
    paths[wd] = strdup(rel);
    if (!paths[wd]) fail("out-of-memory");
    watches++;
}

/*
 * Watches rel and, with -r, every directory below it; report: its entries as created. Returns
 * the watch descriptor, or -1 when rel cannot be watched (gone meanwhile, not a directory, not
 * readable: nothing to watch).
 */
static int add_tree(const char *rel, int report) {
    if (watches >= MAX_WATCHES) fail("too-many-directories");
    char *abs = absolute(rel);
    int wd = inotify_add_watch(fd, abs, MASK);
    if (wd < 0) {
        free(abs);
        if (errno == ENOSPC) fail("too-many-directories");
        return -1;
    }
    remember(wd, rel);
    DIR *d = recursive ? opendir(abs) : NULL;
    free(abs);
    if (!d) return wd;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *child = join(rel, e->d_name);
        int is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            char *cabs = absolute(child);
            is_dir = lstat(cabs, &st) == 0 && S_ISDIR(st.st_mode);
            free(cabs);
        }
        if (report) record('c', is_dir ? 'd' : 'f', child, NULL);
        if (is_dir && recursive) add_tree(child, report);
        free(child);
    }
    closedir(d);
    return wd;
}

/* After a directory moved within the tree: every watched path under from now lives under to. */
static void rename_prefix(const char *from, const char *to) {
    size_t n = strlen(from);
    for (int i = 0; i < npaths; i++) {
        char *p = paths[i];
        if (!p || strncmp(p, from, n) != 0 || (p[n] != '\0' && p[n] != '/')) continue;
        char *moved = join(to, p[n] == '/' ? p + n + 1 : "");
        if (p[n] == '\0') moved[strlen(to)] = '\0';
        free(p);
        paths[i] = moved;
    }
}

/* True when some watch has exactly this path. */
static int watched(const char *rel) {
    for (int i = 0; i < npaths; i++)
        if (paths[i] && strcmp(paths[i], rel) == 0) return 1;
    return 0;
}

/* A directory moved out of the tree: stop watching it and everything below it. */
static void drop_prefix(const char *rel) {
    size_t n = strlen(rel);
    for (int i = 0; i < npaths; i++) {
        char *p = paths[i];
        if (!p || strncmp(p, rel, n) != 0 || (p[n] != '\0' && p[n] != '/')) continue;
        inotify_rm_watch(fd, i); /* its IN_IGNORED frees the slot */
    }
}

struct pending {
    int active;
    uint32_t cookie;
    int is_dir;
    char *path;
};
static struct pending moved_from;

static void flush_moved_from(void) {
    if (!moved_from.active) return;
    record('d', moved_from.is_dir ? 'd' : 'f', moved_from.path, NULL);
    if (moved_from.is_dir && recursive) drop_prefix(moved_from.path);
    free(moved_from.path);
    moved_from.active = 0;
}

static void on_event(const struct inotify_event *ev) {
    if (ev->mask & IN_Q_OVERFLOW) {
        flush_moved_from();
        record('o', '-', "", NULL);
        return;
    }
    if (ev->mask & IN_IGNORED) {
        if (ev->wd < npaths && paths[ev->wd]) {
            free(paths[ev->wd]);
            paths[ev->wd] = NULL;
            watches--;
        }
        return;
    }
    if (ev->wd == root_wd && (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))) {
        flush_moved_from();
        record('g', '-', "", NULL);
        exit(0);
    }
    if (ev->wd >= npaths || !paths[ev->wd] || ev->len == 0) return;
    int is_dir = (ev->mask & IN_ISDIR) != 0;
    char type = is_dir ? 'd' : 'f';
    char *path = join(paths[ev->wd], ev->name);
    if ((ev->mask & IN_MOVED_TO) && moved_from.active && moved_from.cookie == ev->cookie) {
        record('r', type, path, moved_from.path);
        if (is_dir && recursive) {
            rename_prefix(moved_from.path, path);
            /* Created and moved before its watch was placed: watch it now, report what it holds. */
            if (!watched(path)) add_tree(path, 1);
        }
        free(moved_from.path);
        moved_from.active = 0;
        free(path);
        return;
    }
    flush_moved_from();
    if (ev->mask & IN_MOVED_FROM) {
        moved_from = (struct pending){1, ev->cookie, is_dir, path};
        return;
    }
    if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
        record('c', type, path, NULL);
        if (is_dir && recursive) add_tree(path, 1);
    } else if (ev->mask & IN_MODIFY) {
        record('m', type, path, NULL);
    } else if (ev->mask & IN_DELETE) {
        record('d', type, path, NULL);
    }
    free(path);
}

int main(int argc, char **argv) {
    int i = 1;
    if (i < argc && strcmp(argv[i], "-r") == 0) {
        recursive = 1;
        i++;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: sandbox-watch [-r] DIR\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    root = argv[i];
    fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0) fail("inotify-unavailable");
    /* Every directory is watched before "w": changes after it are all seen. */
    root_wd = add_tree("", 0);
    if (root_wd < 0) fail("cannot-watch");
    record('w', '-', "", NULL);
    static char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int ready = poll(&p, 1, moved_from.active ? PAIR_WAIT_MS : -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            flush_moved_from();
            continue;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            fail("read-failed");
        }
        for (char *at = buf; at < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)at;
            on_event(ev);
            at += sizeof(struct inotify_event) + ev->len;
        }
    }
}
