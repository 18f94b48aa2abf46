/*
 * awf-mcp-shim: `awf-mcp serve` of the single executable, started in a millisecond.
 *
 *     awf-mcp-shim /path/to/awf-mcp serve [SERVE ARGS...]
 *
 * The single executable unpacks its bundle before any of its code runs (about 0.3 s at every
 * start), so its own `serve` cannot be a quick client of the shared server. This program is that
 * client for it, and does exactly what `awf_mcp/cli/shim.py` does for the pip install:
 *
 *   - it finds the shared server of that executable: the socket
 *     `$XDG_RUNTIME_DIR/awf-mcp/serve-IDENTITY.sock` (else `/tmp/awf-mcp-UID/...`, a 0700
 *     directory of the user's own), where IDENTITY is `shim.identity()` of the frozen binary:
 *     the executable's real path, modification time and size (not this shim's version: an entry
 *     naming an earlier version's shim reaches the upgraded binary's own server);
 *   - it starts that server when none answers (`awf-mcp __awf_mcp_shared__ SOCKET`, in a
 *     session of its own, its temporary files beside its socket, its stderr in the log there);
 *   - it hands the server the session: a hello (command line, working directory, environment)
 *     and its standard input, output and error themselves (SCM_RIGHTS);
 *   - it waits for the session's end and exits with its code, passing SIGTERM, SIGINT and
 *     SIGHUP on to the session; when the server dies it exits at once, saying why.
 *
 * Where the shared server is not wanted (AWF_MCP_SHARED=0, --no-shared, --transport http, a
 * terminal on stdin, --help) or cannot be used, it runs the executable itself:
 * `awf-mcp serve ARGS` in-process, after saying why on stderr when something failed.
 *
 * The executable carries this shim, built by scripts/build-binary.sh; `awf-mcp daemon shim`
 * installs it as awf-mcp-shim-VERSION.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ENTRY "__awf_mcp_shared__"
#define START_SECONDS 60.0
#define MAX_SOCKET_PATH 100

extern char **environ;

static volatile sig_atomic_t session_pid = 0;
static int control = -1;

static void say(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("awf-mcp: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stderr);
}

/* ------------------------------------------------------------------ serving in-process */

static char *binary;    /* the executable, as found */
static char **serve_argv; /* binary, "serve", ARGS..., NULL */

/* Run `awf-mcp serve ARGS` in this process's place; with `unshared`, tell it not to try the
 * shared server again. Exits 127 when the executable cannot run. */
static void serve_in_process(int unshared) {
    if (unshared)
        setenv("AWF_MCP_SHARED", "0", 1);
    execv(binary, serve_argv);
    say("error: cannot run %s: %s", binary, strerror(errno));
    _exit(127);
}

static int shared_wanted(int argc, char **args) {
    const char *chosen = getenv("AWF_MCP_SHARED");
    if (chosen) {
        char word[8] = {0};
        size_t n = 0;
        while (*chosen && isspace((unsigned char)*chosen))
            chosen++;
        while (*chosen && !isspace((unsigned char)*chosen) && n < sizeof word - 1)
            word[n++] = (char)tolower((unsigned char)*chosen++);
        if (!strcmp(word, "0") || !strcmp(word, "no") || !strcmp(word, "off") || !strcmp(word, "false"))
            return 0;
    }
    for (int i = 0; i < argc; i++) {
        if (!strcmp(args[i], "--no-shared") || !strcmp(args[i], "--transport=http") ||
            !strcmp(args[i], "-h") || !strcmp(args[i], "--help"))
            return 0;
        if (!strcmp(args[i], "--transport") && i + 1 < argc && !strcmp(args[i + 1], "http"))
            return 0;
    }
    return !isatty(0);
}

/* ------------------------------------------------------------------ identity */

static uint32_t crc32_of(const unsigned char *data, size_t size) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

static uint32_t adler32_of_reversed(const unsigned char *data, size_t size) {
    uint32_t a = 1, b = 0;
    for (size_t i = size; i-- > 0;) {
        a = (a + data[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

/* `shim.identity()` of the frozen executable at `real`: binary-CRC32ADLER32 of
 * "PATH\0MTIME_NS\0SIZE" (the Adler-32 of those bytes reversed). Not this shim's version: a
 * client entry naming an earlier version's shim reaches the upgraded binary's own server. */
static int identity(const char *real, char *out, size_t size) {
    struct stat info;
    if (stat(real, &info) != 0)
        return -1;
    long long mtime_ns = (long long)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec;
    char data[PATH_MAX + 128];
    int length = snprintf(data, sizeof data, "%s%c%lld%c%lld", real, 0, mtime_ns, 0, (long long)info.st_size);
    if (length < 0 || (size_t)length >= sizeof data)
        return -1;
    const unsigned char *bytes = (const unsigned char *)data;
    snprintf(out, size, "binary-%08x%08x", crc32_of(bytes, (size_t)length), adler32_of_reversed(bytes, (size_t)length));
    return 0;
}

/* ------------------------------------------------------------------ the socket */

/* `$XDG_RUNTIME_DIR/awf-mcp`, else `/tmp/awf-mcp-UID`: made 0700 and checked to be the user's
 * own directory. On failure, `why` says what is wrong. */
static int socket_directory(char *out, size_t size, char *why, size_t why_size) {
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    struct stat info;
    uid_t uid = getuid();
    if (runtime && runtime[0] == '/' && strlen(runtime) < MAX_SOCKET_PATH - 48 && stat(runtime, &info) == 0 &&
        S_ISDIR(info.st_mode))
        snprintf(out, size, "%s/awf-mcp", runtime);
    else
        snprintf(out, size, "/tmp/awf-mcp-%u", (unsigned)uid);
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "cannot create %s: %s", out, strerror(errno));
        return -1;
    }
    if (lstat(out, &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != uid || (info.st_mode & 077)) {
        snprintf(why, why_size, "%s is not a private directory of this user (owner, mode 0700, no link)", out);
        return -1;
    }
    return 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Start the shared server for `path` in a session of its own; its pid, or -1. */
static pid_t start_server(const char *real, const char *path) {
    char directory[128], tmp[136], log[136]; /* `path` fits a socket address: under 108 bytes */
    if (strlen(path) >= sizeof directory)
        return -1;
    snprintf(directory, sizeof directory, "%s", path);
    char *slash = strrchr(directory, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(tmp, sizeof tmp, "%s/tmp", directory);
    size_t length = strlen(path);
    snprintf(log, sizeof log, "%.*s.log", (int)(length - strlen(".sock")), path);
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -1;
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child: its temporary files (the bundle it unpacks) beside its socket, not in the
     * TMPDIR of the session that happened to start it, which may be removed while it serves. */
    setsid();
    int null = open("/dev/null", O_RDWR);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (null < 0 || out < 0)
        _exit(127);
    dup2(null, 0);
    dup2(null, 1);
    dup2(out, 2);
    setenv("TMPDIR", tmp, 1);
    char *argv[] = {(char *)real, ENTRY, (char *)path, NULL};
    execv(real, argv);
    _exit(127);
}

/* A connection to the shared server at `path`, started when none answers; -1 when none could
 * be reached within START_SECONDS. */
static int connect_server(const char *real, const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
    pid_t started = 0;
    double deadline = now() + START_SECONDS;
    long pause_ns = 2000000;
    for (;;) {
        int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sock < 0)
            return -1;
        if (connect(sock, (struct sockaddr *)&address, sizeof address) == 0)
            return sock;
        int failure = errno;
        close(sock);
        if (failure != ENOENT && failure != ECONNREFUSED)
            return -1;
        if (started == 0) {
            started = start_server(real, path);
            if (started < 0)
                return -1;
        } else if (started > 0 && waitpid(started, NULL, WNOHANG) != 0) {
            started = -1; /* it exited: another server won the socket, or it failed */
        }
        if (now() > deadline)
            return -1;
        struct timespec pause = {0, pause_ns};
        nanosleep(&pause, NULL);
        pause_ns = pause_ns * 2 > 5000000 ? 5000000 : pause_ns * 2; /* a new server seen within 5 ms */
    }
}

/* ------------------------------------------------------------------ the hello */

struct buffer {
    char *data;
    size_t length, capacity;
};

static void append(struct buffer *buffer, const char *bytes, size_t length, int separated) {
    size_t needed = buffer->length + length + 1;
    if (needed > buffer->capacity) {
        buffer->capacity = needed * 2;
        buffer->data = realloc(buffer->data, buffer->capacity);
        if (!buffer->data) {
            say("error: out of memory");
            _exit(1);
        }
    }
    if (separated && buffer->length)
        buffer->data[buffer->length++] = '\0';
    memcpy(buffer->data + buffer->length, bytes, length);
    buffer->length += length;
}

static void field(struct buffer *buffer, const char *text) { append(buffer, text, strlen(text), 1); }

/* The hello `shim.hello_fields("serve", ARGS, CWD, ENVIRON)` makes: NUL-separated fields. */
static void hello_fields(struct buffer *hello, int argc, char **args) {
    char cwd[PATH_MAX], count[32];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    snprintf(count, sizeof count, "%d", argc);
    append(hello, "serve", 5, 0);
    field(hello, cwd);
    field(hello, count);
    for (int i = 0; i < argc; i++)
        field(hello, args[i]);
    for (char **variable = environ; *variable; variable++)
        field(hello, *variable);
}

/* The hello's length in 8 bytes, big-endian, with the agent's stdin, stdout and stderr; then the
 * hello itself. */
static int send_hello(int sock, const struct buffer *hello) {
    unsigned char header[8];
    for (int i = 0; i < 8; i++)
        header[i] = (unsigned char)(((uint64_t)hello->length >> (56 - 8 * i)) & 0xFF);
    int fds[3] = {0, 1, 2};
    union {
        char buffer[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control_data;
    struct iovec vector = {.iov_base = header, .iov_len = sizeof header};
    struct msghdr message = {
        .msg_iov = &vector,
        .msg_iovlen = 1,
        .msg_control = control_data.buffer,
        .msg_controllen = sizeof control_data.buffer,
    };
    struct cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(rights), fds, sizeof fds);
    ssize_t sent;
    do
        sent = sendmsg(sock, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent != (ssize_t)sizeof header)
        return -1;
    for (size_t done = 0; done < hello->length;) {
        ssize_t wrote = send(sock, hello->data + done, hello->length - done, MSG_NOSIGNAL);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            return -1;
        done += (size_t)wrote;
    }
    return 0;
}

/* ------------------------------------------------------------------ the session */

static void pass_on(int signum) {
    pid_t pid = session_pid;
    if (pid <= 0) {
        close(control); /* no session yet: closing is what stops it */
        _exit(128 + signum);
    }
    kill(pid, signum); /* the session ends as `serve` does; its ending is on its way */
}

/* Wait for the server's lines (`session PID`, `message TEXT`, `exit CODE`) until the session
 * ends; exit with its code. */
static void wait_for_session(int sock) {
    signal(SIGPIPE, SIG_IGN); /* an agent that closed our stderr must not end the session */
    struct sigaction action = {.sa_handler = pass_on};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
    int code = -1, have_code = 0;
    char pending[8192];
    size_t held = 0;
    for (;;) {
        ssize_t got = recv(sock, pending + held, sizeof pending - 1 - held, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        held += (size_t)got;
        char *start = pending, *end;
        while ((end = memchr(start, '\n', held - (size_t)(start - pending)))) {
            *end = '\0';
            if (!strncmp(start, "session ", 8))
                session_pid = (pid_t)atol(start + 8);
            else if (!strncmp(start, "exit ", 5)) {
                code = atoi(start + 5);
                have_code = 1;
            } else if (!strncmp(start, "message ", 8)) {
                fprintf(stderr, "%s\n", start + 8);
                fflush(stderr);
            }
            start = end + 1;
        }
        held -= (size_t)(start - pending);
        memmove(pending, start, held);
        if (held == sizeof pending - 1)
            held = 0; /* a line longer than any the server sends: dropped */
    }
    if (!have_code) {
        say("the shared awf-mcp server ended this session without an exit status (it was killed?); "
            "the next session starts a new one");
        code = 1;
    }
    _exit(code);
}

/* `binary` as execv needs it: a path, or the first match on $PATH for a bare name. */
static char *locate(const char *name) {
    if (strchr(name, '/'))
        return strdup(name);
    const char *path = getenv("PATH");
    if (!path)
        return strdup(name);
    char candidate[PATH_MAX];
    for (const char *start = path;; start++) {
        const char *end = strchr(start, ':');
        size_t length = end ? (size_t)(end - start) : strlen(start);
        snprintf(candidate, sizeof candidate, "%.*s/%s", (int)length, length ? start : ".", name);
        if (access(candidate, X_OK) == 0)
            return strdup(candidate);
        if (!end)
            return strdup(name);
        start = end;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/awf-mcp serve [ARGS...]\n", argv[0]);
        return 2;
    }
    binary = locate(argv[1]);
    serve_argv = argv + 1;
    serve_argv[0] = binary;
    if (argc < 3 || strcmp(argv[2], "serve") != 0) { /* any other command: the executable's own */
        execv(binary, serve_argv);
        say("error: cannot run %s: %s", binary, strerror(errno));
        return 127;
    }
    int count = argc - 3;
    char **args = argv + 3;
    if (!shared_wanted(count, args))
        serve_in_process(0);

    char real[PATH_MAX], name[64], directory[PATH_MAX], path[PATH_MAX + 128], why[PATH_MAX + 128];
    if (!realpath(binary, real) || identity(real, name, sizeof name) != 0) {
        say("error: cannot run %s: %s", binary, strerror(errno));
        return 127;
    }
    if (socket_directory(directory, sizeof directory, why, sizeof why) != 0) {
        say("note: serving in-process; the shared server is not usable: %s", why);
        serve_in_process(1);
    }
    snprintf(path, sizeof path, "%s/serve-%s.sock", directory, name);
    if (strlen(path) >= sizeof((struct sockaddr_un *)0)->sun_path) {
        say("note: serving in-process; the shared server's socket path is too long: %s", path);
        serve_in_process(1);
    }
    control = connect_server(real, path);
    if (control < 0) {
        say("note: serving in-process; the shared server did not start (see its log next to its socket, %s)",
            path);
        serve_in_process(1);
    }
    struct buffer hello = {0};
    hello_fields(&hello, count, args);
    if (send_hello(control, &hello) != 0) {
        say("note: serving in-process; the shared server did not take the session: %s", strerror(errno));
        close(control);
        serve_in_process(1);
    }
    free(hello.data);
    for (int fd = 0; fd <= 1; fd++) { /* the session holds the agent's pipes now; so must nobody else */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, fd);
            close(null);
        }
    }
    wait_for_session(control);
    return 0;
}
