/*
 * The user-space end of the emulated amdxdna driver, loaded with LD_PRELOAD by
 * `runlist-harness emulate`.
 *
 * XRT's XDNA shim finds an NPU the way it finds a real one (the amdxdna folder under
 * /sys/bus/pci/drivers, the device's sysfs files, /dev/accel/accelN) and then talks to
 * the driver only through ioctl and mmap on the device node. This library makes both
 * reach the emulator without root and without a mount namespace:
 *
 *  - paths under the prefixes listed in $HARNESS_EMULATOR_DIR/redirects are looked up
 *    under $HARNESS_EMULATOR_DIR/root instead (open, fopen, stat, opendir, realpath,
 *    ...); realpath hands back the path as it would read on a real machine, because
 *    XRT checks that a driver's device links resolve into /sys/devices/;
 *  - opening the device node connects a socket to the model process: that socket is
 *    the device file, and closing it (or the process ending) releases what the file
 *    held, as closing a DRM file does;
 *  - ioctls on a device file travel to the model as a request (the argument struct and
 *    the user memory it points to) and come back as its answer, on a connection of
 *    their own, so a thread blocked in a wait does not hold up the others;
 *  - mmap of a device file maps the buffer object's backing file in the run folder,
 *    which the model maps too: it reads command packets there and writes their states.
 *
 * Nothing here decides what a command does; the model process does, with the same
 * driver and firmware model the simulated stack plays. Without $HARNESS_EMULATOR_DIR
 * every call passes straight through.
 *
 * With it, the program is emulated or does not run: before the program's own code runs
 * (this library's constructor) the library greets the model and keeps its answer
 * (`xdna_emulator_answer`, which the harness records in a report); a library that cannot
 * reach its model ends the process, so a program labelled EMULATED never drives a real
 * device instead. The device never hangs a program for good: a signal whose handler does
 * not ask for restarts interrupts an ioctl waiting for the model (EINTR, as the driver's
 * interruptible waits give), and a model that stops answering (stopped, hung) fails the
 * ioctl with ETIME once it has been silent for $HARNESS_EMULATOR_SILENCE_MS; a model
 * that is gone fails it at once.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#define ENV_DIR "HARNESS_EMULATOR_DIR"
#define ENV_SILENCE "HARNESS_EMULATOR_SILENCE_MS"
#define WIRE_MAGIC 0x58444e41u          /* "ANDX": every frame starts with it */
#define OP_OPEN 1u
#define OP_IOCTL 2u
#define OP_HELLO 3u                     /* the handshake: the library answers from here */
#define OP_PING 4u                      /* is the model still answering? */
#define RUN_DIR_MAX 64                  /* the socket path must fit sockaddr_un */
#define ANSWER_MAX 1024
#define SILENCE_MS 10000                /* a model silent this long is not answering */
#define TICK_MS 1000                    /* how often a long wait asks whether it is */
#define EXIT_NOT_EMULATED 69            /* EX_UNAVAILABLE: the emulated device is not there */
#define ACCEL_MAJOR 261                 /* the accel subsystem's character major */
#define DEVNODE_PREFIX "/dev/accel/accel"
#define MAX_PREFIXES 32
#define MAX_FDS 65536
#define POOL_SIZE 32
#define MAX_SEGMENTS 2
#define MAX_EXTRA (64u << 20)           /* the largest block of user memory one ioctl moves */
#define DRM_TYPE 'd'
#define DRM_COMMAND_BASE 0x40

/* What a request and an answer start with (little-endian, as both ends run here). */
struct wire_request {
    uint32_t magic, op, file, pid;
    uint64_t cmd;
    uint32_t struct_len, extra_len;
};

struct wire_reply {
    uint32_t magic;
    int32_t ret;
    uint32_t struct_len, extra_len;
};

struct segment {
    void *ptr;
    size_t len;
};

static int active;
static const char *inactive = "the emulator's environment is not set";
static char answer[ANSWER_MAX];         /* the model's answer to the handshake */
static int silence_ms = SILENCE_MS;
static char run_dir[PATH_MAX];
static char root_dir[PATH_MAX];
static size_t root_len;
static struct sockaddr_un model_addr;
static char prefixes[MAX_PREFIXES][256];
static size_t prefix_len[MAX_PREFIXES];
static int prefix_count;
static uint32_t fd_file[MAX_FDS];       /* device file id behind an fd, 0 when not ours */
static int pool[POOL_SIZE];             /* idle connections to the model */
static int pool_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_once_t reals_found = PTHREAD_ONCE_INIT;

/* Declared by old glibc headers only; newer binaries may still call them. */
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
char *__realpath_chk(const char *, char *, size_t);

/* The real functions, found once when the library loads (its constructor), never lazily
 * from whichever thread calls first; a call that comes before the constructor (another
 * library's constructor) finds them through the same once. */
#define REAL(fn) static __typeof__(fn) *real_##fn
#define NEXT(fn) (real_##fn ? real_##fn : (pthread_once(&reals_found, resolve), real_##fn))
#define RESOLVE(fn) real_##fn = (__typeof__(real_##fn))dlsym(RTLD_NEXT, #fn)

REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(fopen); REAL(fopen64);
REAL(opendir);
REAL(stat); REAL(stat64); REAL(lstat); REAL(lstat64); REAL(fstatat); REAL(fstatat64);
REAL(__xstat); REAL(__xstat64); REAL(__lxstat); REAL(__lxstat64); REAL(statx);
REAL(access); REAL(faccessat); REAL(readlink); REAL(readlinkat); REAL(realpath);
REAL(ioctl); REAL(mmap); REAL(mmap64); REAL(close);
REAL(dup); REAL(dup2); REAL(dup3); REAL(fcntl); REAL(uname);
static int (*real_fcntl64)(int, int, ...);

static void resolve(void)
{
    RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64); RESOLVE(fopen);
    RESOLVE(fopen64); RESOLVE(opendir);
    RESOLVE(stat); RESOLVE(stat64); RESOLVE(lstat); RESOLVE(lstat64); RESOLVE(fstatat);
    RESOLVE(fstatat64); RESOLVE(__xstat); RESOLVE(__xstat64); RESOLVE(__lxstat);
    RESOLVE(__lxstat64); RESOLVE(statx);
    RESOLVE(access); RESOLVE(faccessat); RESOLVE(readlink); RESOLVE(readlinkat);
    RESOLVE(realpath);
    RESOLVE(ioctl); RESOLVE(mmap); RESOLVE(mmap64); RESOLVE(close);
    RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl); RESOLVE(uname);
    real_fcntl64 = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl64");
}

/* ---- configuration ------------------------------------------------------------------- */

static void forget_pool(void)
{
    /* A forked child shares its parent's idle connections: using one would interleave
     * two processes' frames, so the child starts with none of its own. The pool's mutex
     * was taken before the fork (fork_prepare), so it is whole: the child unlocks it. */
    for (int i = 0; i < pool_count; i++)
        NEXT(close)(pool[i]);
    pool_count = 0;
    pthread_mutex_unlock(&lock);
}

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_parent(void) { pthread_mutex_unlock(&lock); }

static void read_redirects(void)
{
    char path[PATH_MAX + 16], text[8192];
    snprintf(path, sizeof path, "%s/redirects", run_dir);
    int fd = NEXT(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, text, sizeof text - 1);
    NEXT(close)(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    for (char *line = strtok(text, "\n"); line && prefix_count < MAX_PREFIXES;
         line = strtok(NULL, "\n")) {
        size_t len = strlen(line);
        if (line[0] != '/' || len >= sizeof prefixes[0])
            continue;
        memcpy(prefixes[prefix_count], line, len + 1);
        prefix_len[prefix_count++] = len;
    }
}

static void setup(void)
{
    const char *dir = getenv(ENV_DIR);
    if (!dir)
        return;
    if (dir[0] != '/' || strlen(dir) > RUN_DIR_MAX) {
        inactive = "its run folder's path is not absolute or longer than 64 characters";
        return;
    }
    const char *silence = getenv(ENV_SILENCE);
    if (silence && atoi(silence) > 0)
        silence_ms = atoi(silence);
    snprintf(run_dir, sizeof run_dir, "%s", dir);
    snprintf(root_dir, sizeof root_dir, "%s/root", dir);
    root_len = strlen(root_dir);
    model_addr.sun_family = AF_UNIX;
    snprintf(model_addr.sun_path, sizeof model_addr.sun_path, "%s/model.sock", dir);
    read_redirects();
    pthread_atfork(fork_prepare, fork_parent, forget_pool);
    active = prefix_count > 0;
    if (!active)
        inactive = "its run folder lists no device paths";
}

static void handshake(void);

__attribute__((constructor)) static void load(void)
{
    pthread_once(&reals_found, resolve);
    pthread_once(&once, setup);
    if (getenv(ENV_DIR))
        handshake();
}

static int on(void)
{
    pthread_once(&once, setup);
    return active;
}

/* ---- the kernel release --------------------------------------------------------------- */

/* The machine runs the kernel whose driver the profile plays: uname's release is what the
 * tree's /proc/sys/kernel/osrelease says (xrt-smi prints it, as the amdxdna version where
 * /sys/module/amdxdna/version is missing). */
int uname(struct utsname *buf)
{
    int rc = NEXT(uname)(buf);
    if (rc != 0 || !on())
        return rc;
    char path[PATH_MAX + 32], text[sizeof buf->release];
    snprintf(path, sizeof path, "%s/proc/sys/kernel/osrelease", root_dir);
    int fd = NEXT(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rc;
    ssize_t n = read(fd, text, sizeof text - 1);
    NEXT(close)(fd);
    if (n <= 0)
        return rc;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    memcpy(buf->release, text, strlen(text) + 1);
    return rc;
}

/* ---- paths --------------------------------------------------------------------------- */

static const char *redirect(const char *path, char *buf)
{
    if (!path || path[0] != '/' || !on())
        return path;
    for (int i = 0; i < prefix_count; i++) {
        size_t len = prefix_len[i];
        if (strncmp(path, prefixes[i], len) == 0 && (path[len] == '\0' || path[len] == '/')) {
            if ((size_t)snprintf(buf, PATH_MAX, "%s%s", root_dir, path) >= PATH_MAX)
                return path;
            return buf;
        }
    }
    return path;
}

static int devnode_minor(const char *path)
{
    size_t len = sizeof DEVNODE_PREFIX - 1;
    if (!path || !on() || strncmp(path, DEVNODE_PREFIX, len) != 0)
        return -1;
    char *end;
    long minor = strtol(path + len, &end, 10);
    return (end != path + len && *end == '\0' && minor >= 0 && minor < 256) ? (int)minor : -1;
}

/* The emulated node is a plain file in the tree; to everyone who looks it is what the
 * kernel makes, a character device of the accel major. */
#define FAKE_NODE(path, st) do { \
    int minor_ = devnode_minor(path); \
    if (minor_ >= 0) { \
        (st)->st_mode = ((st)->st_mode & 07777) | S_IFCHR; \
        (st)->st_rdev = makedev(ACCEL_MAJOR, minor_); \
        (st)->st_size = 0; \
    } \
} while (0)

static const char *unroot(const char *resolved)
{
    if (root_len && strncmp(resolved, root_dir, root_len) == 0 &&
        (resolved[root_len] == '/' || resolved[root_len] == '\0'))
        return resolved[root_len] ? resolved + root_len : "/";
    return resolved;
}

/* ---- the connection to the model --------------------------------------------------- */

/* After EINTR: whether the call goes on, as the kernel restarts an interrupted
 * interruptible wait only for a handler installed with SA_RESTART. Which signal came is not
 * known here, so one handler without it is enough to return EINTR (callers such as
 * libdrm's drmIoctl retry; Python runs its handler, and Ctrl-C raises). */
static int restart_after_signal(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) != 0 || sa.sa_handler == SIG_DFL ||
            sa.sa_handler == SIG_IGN)
            continue;
        if (!(sa.sa_flags & SA_RESTART))
            return 0;
    }
    return 1;
}

static int model_answers(void);

/* Wait until `fd` can be read (POLLIN) or written (POLLOUT): 0, or -EINTR (a signal, as
 * above), -ETIME (the model did not answer), -EIO (it is gone). A request may wait long
 * (a job that runs, a wait for ever): every TICK_MS the model is asked whether it still
 * answers (`ask`), and the wait goes on while it does; the question itself waits
 * silence_ms at most. */
static int wait_io(int fd, short events, int ask)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, ask ? TICK_MS : silence_ms);
        if (n > 0)
            return 0;
        if (n < 0 && errno == EINTR) {
            /* an answer already here is taken: what the model did stays done */
            if (!restart_after_signal() && poll(&p, 1, 0) <= 0)
                return -EINTR;
            continue;
        }
        if (n < 0)
            return -EIO;
        if (!ask)
            return -ETIME;
        int alive = model_answers();
        if (alive)
            return alive;
    }
}

static int send_all(int fd, const void *data, size_t len, int ask)
{
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            int ret = wait_io(fd, POLLOUT, ask);
            if (ret)
                return ret;
            continue;
        }
        if (n <= 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int recv_all(int fd, void *data, size_t len, int ask)
{
    char *p = data;
    while (len) {
        int ret = wait_io(fd, POLLIN, ask);
        if (ret)
            return ret;
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0)
            return -EIO;           /* the model is gone: at once, never a hang */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int connect_model(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&model_addr, sizeof model_addr) < 0) {
        NEXT(close)(fd);
        return -1;
    }
    return fd;
}

static int exchange(int conn, uint32_t op, uint32_t file, uint64_t cmd, void *arg,
                    size_t size, int read_back, const struct segment *in, int nin,
                    char **extra, size_t *extra_len, int ask);

/* 0 when the model answers a ping on a connection of its own, else -ETIME (silent for
 * silence_ms), -EINTR or -EIO (gone). */
static int model_answers(void)
{
    int fd = connect_model();
    if (fd < 0)
        return -EIO;
    char *extra = NULL;
    size_t extra_len = 0;
    int ret = exchange(fd, OP_PING, 0, 0, NULL, 0, 0, NULL, 0, &extra, &extra_len, 0);
    free(extra);
    NEXT(close)(fd);
    return ret < 0 ? ret : 0;
}

static int take_connection(void)
{
    int fd = -1;
    pthread_mutex_lock(&lock);
    if (pool_count)
        fd = pool[--pool_count];
    pthread_mutex_unlock(&lock);
    return fd >= 0 ? fd : connect_model();
}

static void give_back(int fd)
{
    pthread_mutex_lock(&lock);
    if (pool_count < POOL_SIZE) {
        pool[pool_count++] = fd;
        fd = -1;
    }
    pthread_mutex_unlock(&lock);
    if (fd >= 0)
        NEXT(close)(fd);
}

/* One request and its answer. The answer's struct goes back over `arg` (when the ioctl
 * reads), its extra bytes into a buffer the caller frees. Returns the model's result
 * (0 or -errno), -EIO when the model is gone, -ETIME when it stopped answering, -EINTR
 * when a signal interrupted the wait; after any of those three the connection is out of
 * step (`*extra` stays NULL). */
static int exchange(int conn, uint32_t op, uint32_t file, uint64_t cmd, void *arg,
                    size_t size, int read_back, const struct segment *in, int nin,
                    char **extra, size_t *extra_len, int ask)
{
    struct wire_request rq = {WIRE_MAGIC, op, file, (uint32_t)getpid(), cmd, (uint32_t)size, 0};
    int ret;
    *extra = NULL;
    *extra_len = 0;
    for (int i = 0; i < nin; i++)
        rq.extra_len += (uint32_t)in[i].len;
    if ((ret = send_all(conn, &rq, sizeof rq, ask)) ||
        (size && (ret = send_all(conn, arg, size, ask))))
        return ret;
    for (int i = 0; i < nin; i++)
        if (in[i].len && (ret = send_all(conn, in[i].ptr, in[i].len, ask)))
            return ret;
    struct wire_reply rp;
    if ((ret = recv_all(conn, &rp, sizeof rp, ask)))
        return ret;
    if (rp.magic != WIRE_MAGIC || rp.struct_len != size || rp.extra_len > MAX_EXTRA)
        return -EIO;
    char scratch[256];
    void *target = (read_back && size) ? arg : scratch;
    if (size > sizeof scratch && target == scratch)
        return -EIO;
    if (size && (ret = recv_all(conn, target, size, ask)))
        return ret;
    if (rp.extra_len) {
        char *got = malloc(rp.extra_len);
        if (!got)
            return -EIO;
        if ((ret = recv_all(conn, got, rp.extra_len, ask))) {
            free(got);
            return ret;
        }
        *extra = got;
        *extra_len = rp.extra_len;
    }
    return rp.ret;
}

/* The handshake, before the program's own code runs: the model answers this process (it
 * records which processes it answered, and `emulate` checks the program is one), and the
 * answer is kept for the program to read (`xdna_emulator_answer`). A process that cannot
 * have it does not run: it would otherwise find whatever device is really there. */
static void handshake(void)
{
    const char *why = inactive;
    if (active) {
        int fd = connect_model();
        char *extra = NULL;
        size_t extra_len = 0;
        int ret = fd < 0 ? -ECONNREFUSED :
            exchange(fd, OP_HELLO, 0, 0, NULL, 0, 0, NULL, 0, &extra, &extra_len, 0);
        if (fd >= 0)
            NEXT(close)(fd);
        if (ret == 0 && extra) {
            size_t n = extra_len < sizeof answer - 1 ? extra_len : sizeof answer - 1;
            memcpy(answer, extra, n);
            answer[n] = '\0';
            free(extra);
            return;
        }
        free(extra);
        why = ret == -ECONNREFUSED || ret == -EIO ? "its model process is not there" :
            ret == -ETIME ? "its model process does not answer" : "the handshake failed";
    }
    char line[512];
    int n = snprintf(line, sizeof line, "xdna-runlist-harness emulator: process %d cannot "
                     "reach the emulated NPU (%s); it does not run, so that it never drives "
                     "a real device in the emulator's place\n", (int)getpid(), why);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    _exit(EXIT_NOT_EMULATED);
}

/* What the model answered this process's handshake (JSON), or NULL when the library is
 * not emulating here. The harness reads it with ctypes and records it in reports. */
__attribute__((visibility("default"))) const char *xdna_emulator_answer(void)
{
    return answer[0] ? answer : NULL;
}

/* ---- device files ------------------------------------------------------------------ */

static uint32_t device_file(int fd)
{
    if (fd < 0 || fd >= MAX_FDS || !on())
        return 0;
    return __atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE);
}

static int open_device(const char *path, int flags)
{
    char buf[PATH_MAX];
    struct stat st;
    if (NEXT(stat)(redirect(path, buf), &st) < 0)
        return -1;                    /* no such node in the emulated tree: ENOENT */
    int fd = connect_model();
    if (fd < 0) {
        errno = ENODEV;
        return -1;
    }
    char *extra = NULL;
    size_t extra_len = 0;
    int ret = exchange(fd, OP_OPEN, 0, (uint64_t)devnode_minor(path), NULL, 0, 0, NULL, 0,
                       &extra, &extra_len, 1);
    free(extra);
    if (ret <= 0 || fd >= MAX_FDS) {
        NEXT(close)(fd);
        errno = ret < 0 ? -ret : ENODEV;
        return -1;
    }
    if (!(flags & O_CLOEXEC))
        fcntl(fd, F_SETFD, 0);
    __atomic_store_n(&fd_file[fd], (uint32_t)ret, __ATOMIC_RELEASE);
    return fd;
}

/* The user memory an ioctl's struct points to, read by the driver (`in`) and written
 * back by it (`out`), for the ioctls the XDNA shim and the DRM core use. */
static int segments(unsigned nr, const unsigned char *s, size_t size, struct segment *in,
                    int *nin, struct segment *out, int *nout)
{
    uint64_t p1 = 0, p2 = 0;
    uint32_t a = 0, b = 0, c = 0;
    *nin = *nout = 0;
#define FIELD(var, off) do { if ((off) + sizeof(var) <= size) memcpy(&(var), s + (off), sizeof(var)); } while (0)
    switch (nr) {
    case DRM_COMMAND_BASE + 0:           /* CREATE_HWCTX: the QoS block */
        FIELD(p1, 16);
        if (p1)
            in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, 24};
        return 0;
    case DRM_COMMAND_BASE + 2:           /* CONFIG_HWCTX: the CU configuration */
        FIELD(a, 4); FIELD(p1, 8); FIELD(b, 16);
        if (a != 0)
            return 0;                    /* the other parameters are values, not pointers */
        if (b > 4096)
            return -E2BIG;
        in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, b};
        return 0;
    case DRM_COMMAND_BASE + 6:           /* EXEC_CMD: the argument BO handles */
        FIELD(p1, 32); FIELD(a, 44);
        if (a > 4095)
            return -EINVAL;
        if (a)
            in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, (size_t)a * 4};
        return 0;
    case DRM_COMMAND_BASE + 7:           /* GET_INFO and SET_STATE: {param, size, buffer} */
    case DRM_COMMAND_BASE + 8:
        FIELD(a, 4); FIELD(p1, 8);
        if (a > MAX_EXTRA)
            return -EINVAL;
        if (a && p1) {
            in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, a};
            if (nr == DRM_COMMAND_BASE + 7)
                out[(*nout)++] = in[0];
        }
        return 0;
    case DRM_COMMAND_BASE + 10:          /* GET_ARRAY: {param, element size, count, buffer} */
        FIELD(a, 4); FIELD(b, 8); FIELD(p1, 16);
        if ((uint64_t)a * b > MAX_EXTRA)
            return -EINVAL;
        if (a && b && p1) {
            in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, (size_t)a * b};
            out[(*nout)++] = in[0];
        }
        return 0;
    case 0xC3:                           /* SYNCOBJ_WAIT: handles */
        FIELD(p1, 0); FIELD(a, 16);
        break;
    case 0xC4:                           /* SYNCOBJ_RESET, SYNCOBJ_SIGNAL: handles */
    case 0xC5:
        FIELD(p1, 0); FIELD(a, 8);
        break;
    case 0xCA:                           /* SYNCOBJ_TIMELINE_WAIT: handles, points */
        FIELD(p1, 0); FIELD(p2, 8); FIELD(a, 24);
        break;
    case 0xCB:                           /* SYNCOBJ_QUERY, SYNCOBJ_TIMELINE_SIGNAL */
    case 0xCD:
        FIELD(p1, 0); FIELD(p2, 8); FIELD(a, 16);
        break;
    default:
        return 0;
    }
    if (a > 4096)
        return -EINVAL;
    c = a;
    if (c && p1)
        in[(*nin)++] = (struct segment){(void *)(uintptr_t)p1, (size_t)c * 4};
    if (c && p2) {
        in[(*nin)++] = (struct segment){(void *)(uintptr_t)p2, (size_t)c * 8};
        if (nr == 0xCB)
            out[(*nout)++] = (struct segment){(void *)(uintptr_t)p2, (size_t)c * 8};
    }
    return 0;
#undef FIELD
}

/* PRIME_FD_TO_HANDLE and SYNCOBJ_FD_TO_HANDLE name the object by the fd they pass: an
 * exported object is a file in the run folder, so the fd's path says which. */
static int fd_path(const unsigned char *s, size_t size, char *path, size_t cap)
{
    int32_t fd = -1;
    char link[64];
    if (size >= 12)
        memcpy(&fd, s + 8, sizeof fd);
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = NEXT(readlink)(link, path, cap - 1);
    if (n <= 0)
        return -EBADF;
    path[n] = '\0';
    return 0;
}

/* DRM_IOCTL_VERSION: three strings, each copied up to the length the caller gave. */
static void fill_version(unsigned char *user, const unsigned char *saved, const char *extra,
                         size_t extra_len)
{
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        size_t off = 16 + (size_t)i * 16, want, have;
        char *dst;
        memcpy(&want, saved + off, sizeof want);
        memcpy(&dst, saved + off + 8, sizeof dst);
        memcpy(&have, user + off, sizeof have);
        if (used + have > extra_len)
            have = extra_len - used;
        if (dst && want)
            memcpy(dst, extra + used, have < want ? have : want);
        used += have;
        memcpy(user + off + 8, &dst, sizeof dst);
    }
}

static int emulated_ioctl(uint32_t file, unsigned long cmd, void *arg)
{
    size_t size = _IOC_SIZE(cmd);
    unsigned nr = _IOC_NR(cmd);
    if (_IOC_TYPE(cmd) != DRM_TYPE || size > 256 || (size && !arg)) {
        errno = size > 256 ? EINVAL : (size ? EFAULT : ENOTTY);
        return -1;
    }
    struct segment in[MAX_SEGMENTS + 1] = {{0}}, out[MAX_SEGMENTS] = {{0}};
    int nin, nout;
    unsigned char saved[256];
    char path[PATH_MAX];
    if (size)
        memcpy(saved, arg, size);
    int ret = segments(nr, saved, size, in, &nin, out, &nout);
    if (!ret && (nr == 0x2E || nr == 0xC2)) {
        ret = fd_path(saved, size, path, sizeof path);
        in[nin++] = (struct segment){path, strlen(path)};
    }
    if (ret) {
        errno = -ret;
        return -1;
    }
    int conn = take_connection();
    if (conn < 0) {
        errno = ENODEV;
        return -1;
    }
    char *extra = NULL;
    size_t extra_len = 0;
    ret = exchange(conn, OP_IOCTL, file, cmd, arg, size, (_IOC_DIR(cmd) & _IOC_READ) != 0,
                   in, nin, &extra, &extra_len, 1);
    if ((ret == -EIO || ret == -ETIME || ret == -EINTR) && !extra)
        NEXT(close)(conn);           /* the stream is out of step: never reuse it; the
                                      * model drops what it parked for it */
    else
        give_back(conn);
    if (ret >= 0 && nr == 0x00 && size >= 64) {
        fill_version(arg, saved, extra ? extra : "", extra_len);
    } else if (ret >= 0 && (nr == 0x2D || nr == 0xC1) && extra && size >= 12) {
        /* HANDLE_TO_FD: the answer names the object's file; its fd is the export */
        uint32_t flags = 0;
        memcpy(&flags, saved + 4, sizeof flags);
        char *name = strndup(extra, extra_len);
        int fd = name ? NEXT(open)(name, O_RDWR | (flags & O_CLOEXEC)) : -1;
        free(name);
        if (fd < 0)
            ret = -errno;
        else
            memcpy((unsigned char *)arg + 8, &fd, sizeof fd);
    } else if (ret >= 0 && nout && extra) {
        size_t used = 0;
        for (int i = 0; i < nout && used < extra_len; i++) {
            size_t n = extra_len - used < out[i].len ? extra_len - used : out[i].len;
            memcpy(out[i].ptr, extra + used, n);
            used += n;
        }
    }
    free(extra);
    if (ret < 0) {
        errno = -ret;
        return -1;
    }
    return ret;
}

/* ---- the interposed calls ------------------------------------------------------------ */

static mode_t mode_of(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

#define OPEN_BODY(fn, path, flags, mode) do { \
    char buf_[PATH_MAX]; \
    if (devnode_minor(path) >= 0) \
        return open_device(path, flags); \
    return NEXT(fn)(redirect(path, buf_), flags, mode); \
} while (0)

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    OPEN_BODY(open, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    OPEN_BODY(open64, path, flags, mode);
}

int __open_2(const char *path, int flags) { OPEN_BODY(open, path, flags, 0); }
int __open64_2(const char *path, int flags) { OPEN_BODY(open64, path, flags, 0); }

#define OPENAT_BODY(fn, dirfd, path, flags, mode) do { \
    char buf_[PATH_MAX]; \
    if (path[0] == '/' && devnode_minor(path) >= 0) \
        return open_device(path, flags); \
    return NEXT(fn)(dirfd, redirect(path, buf_), flags, mode); \
} while (0)

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    OPENAT_BODY(openat, dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    OPENAT_BODY(openat64, dirfd, path, flags, mode);
}

int __openat_2(int dirfd, const char *path, int flags)
{
    OPENAT_BODY(openat, dirfd, path, flags, 0);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
    OPENAT_BODY(openat64, dirfd, path, flags, 0);
}

/* Calls that take a path and nothing to fake: the path goes to the tree when it is one of
 * the device's. */
#define PATH_CALL(ret, fn, params, path, args) \
ret fn params \
{ \
    char buf_[PATH_MAX]; \
    const char *where_ = redirect(path, buf_); \
    return NEXT(fn) args; \
}

PATH_CALL(FILE *, fopen, (const char *path, const char *mode), path, (where_, mode))
PATH_CALL(FILE *, fopen64, (const char *path, const char *mode), path, (where_, mode))
PATH_CALL(DIR *, opendir, (const char *path), path, (where_))
PATH_CALL(int, access, (const char *path, int mode), path, (where_, mode))
PATH_CALL(int, faccessat, (int fd, const char *path, int mode, int flags), path,
          (fd, where_, mode, flags))
PATH_CALL(ssize_t, readlink, (const char *path, char *out, size_t len), path,
          (where_, out, len))
PATH_CALL(ssize_t, readlinkat, (int fd, const char *path, char *out, size_t len), path,
          (fd, where_, out, len))

/* The stat family: the path goes to the tree, and the node reads as a device. A glibc
 * older than 2.33 exports stat and lstat only as __xstat and __lxstat. */
#define STAT_CALL(fn, params, path, st, call) \
int fn params \
{ \
    char buf_[PATH_MAX]; \
    const char *where_ = redirect(path, buf_); \
    int ret_ = call; \
    if (ret_ == 0) \
        FAKE_NODE(path, st); \
    return ret_; \
}

STAT_CALL(stat, (const char *path, struct stat *st), path, st,
          NEXT(stat) ? real_stat(where_, st) : NEXT(__xstat)(1, where_, st))
STAT_CALL(stat64, (const char *path, struct stat64 *st), path, st,
          NEXT(stat64) ? real_stat64(where_, st) : NEXT(__xstat64)(1, where_, st))
STAT_CALL(lstat, (const char *path, struct stat *st), path, st,
          NEXT(lstat) ? real_lstat(where_, st) : NEXT(__lxstat)(1, where_, st))
STAT_CALL(lstat64, (const char *path, struct stat64 *st), path, st,
          NEXT(lstat64) ? real_lstat64(where_, st) : NEXT(__lxstat64)(1, where_, st))
STAT_CALL(fstatat, (int fd, const char *path, struct stat *st, int flags), path, st,
          NEXT(fstatat)(fd, where_, st, flags))
STAT_CALL(fstatat64, (int fd, const char *path, struct stat64 *st, int flags), path, st,
          NEXT(fstatat64)(fd, where_, st, flags))
STAT_CALL(__xstat, (int ver, const char *path, struct stat *st), path, st,
          NEXT(__xstat)(ver, where_, st))
STAT_CALL(__xstat64, (int ver, const char *path, struct stat64 *st), path, st,
          NEXT(__xstat64)(ver, where_, st))
STAT_CALL(__lxstat, (int ver, const char *path, struct stat *st), path, st,
          NEXT(__lxstat)(ver, where_, st))
STAT_CALL(__lxstat64, (int ver, const char *path, struct stat64 *st), path, st,
          NEXT(__lxstat64)(ver, where_, st))

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
    char buf[PATH_MAX];
    int ret = NEXT(statx)(dirfd, redirect(path, buf), flags, mask, stx);
    int minor = devnode_minor(path);
    if (ret == 0 && minor >= 0) {
        stx->stx_mode = (uint16_t)((stx->stx_mode & 07777) | S_IFCHR);
        stx->stx_rdev_major = ACCEL_MAJOR;
        stx->stx_rdev_minor = (uint32_t)minor;
        stx->stx_size = 0;
    }
    return ret;
}

char *realpath(const char *path, char *resolved)
{
    char buf[PATH_MAX], full[PATH_MAX];
    const char *where = redirect(path, buf);
    if (where == path)
        return NEXT(realpath)(path, resolved);
    if (!NEXT(realpath)(where, full))
        return NULL;
    const char *shown = unroot(full);
    if (!resolved)
        return strdup(shown);
    snprintf(resolved, PATH_MAX, "%s", shown);
    return resolved;
}

char *__realpath_chk(const char *path, char *resolved, size_t len)
{
    (void)len;
    return realpath(path, resolved);
}

char *canonicalize_file_name(const char *path)
{
    return realpath(path, NULL);
}

int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    uint32_t file = device_file(fd);
    if (!file)
        return NEXT(ioctl)(fd, request, arg);
    return emulated_ioctl(file, request, arg);
}

/* A device file's mmap offset names the buffer object: its handle in the upper 32 bits
 * (GET_BO_INFO's map_offset), the offset within it below. */
static void *map_bo(void *addr, size_t len, int prot, int flags, off_t offset)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/bo/%llu", run_dir,
             (unsigned long long)((uint64_t)offset >> 32));
    int fd = NEXT(open)(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    /* MAP_LOCKED pins pages of the real heap; a file in the run folder needs no pinning,
     * and asking for it would fail under a small memlock limit the real driver ignores. */
    void *p = NEXT(mmap)(addr, len, prot, flags & ~MAP_LOCKED, fd,
                         (off_t)((uint64_t)offset & 0xffffffffu));
    int saved = errno;
    NEXT(close)(fd);
    errno = saved;
    return p;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    if (device_file(fd))
        return map_bo(addr, len, prot, flags, offset);
    return NEXT(mmap)(addr, len, prot, flags, fd, offset);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t offset)
{
    if (device_file(fd))
        return map_bo(addr, len, prot, flags, (off_t)offset);
    return NEXT(mmap64)(addr, len, prot, flags, fd, offset);
}

static void forget_fd(int fd)
{
    if (fd >= 0 && fd < MAX_FDS && device_file(fd))
        __atomic_store_n(&fd_file[fd], 0, __ATOMIC_RELEASE);
}

int close(int fd)
{
    forget_fd(fd);
    return NEXT(close)(fd);
}

/* A duplicate of a device file's fd is the same open file, as a DRM file's is: its
 * ioctls and mmaps reach the same device file, which is released once every fd naming it
 * is closed (the connection is shared by them). */
static int duplicated(int fd, int copy)
{
    uint32_t file = device_file(fd);
    if (copy >= 0 && copy != fd) {
        if (copy < MAX_FDS)
            __atomic_store_n(&fd_file[copy], file, __ATOMIC_RELEASE);
        else if (file) {
            NEXT(close)(copy);           /* past the table: it could not be followed */
            errno = EMFILE;
            return -1;
        }
    }
    return copy;
}

int dup(int fd)
{
    return duplicated(fd, NEXT(dup)(fd));
}

int dup2(int fd, int copy)
{
    return duplicated(fd, NEXT(dup2)(fd, copy));
}

int dup3(int fd, int copy, int flags)
{
    return duplicated(fd, NEXT(dup3)(fd, copy, flags));
}

#define FCNTL_BODY(real) do { \
    va_list ap; \
    va_start(ap, cmd); \
    void *arg = va_arg(ap, void *); \
    va_end(ap); \
    int ret_ = (real)(fd, cmd, arg); \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) \
        return duplicated(fd, ret_); \
    return ret_; \
} while (0)

int fcntl(int fd, int cmd, ...)
{
    FCNTL_BODY(NEXT(fcntl));
}

int fcntl64(int fd, int cmd, ...)
{
    FCNTL_BODY(NEXT(fcntl64) ? real_fcntl64 : NEXT(fcntl));
}
