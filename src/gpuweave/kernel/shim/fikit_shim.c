/*
 * fikit_shim.c -- FIKIT kernel-launch gate for unmodified CUDA processes (LD_PRELOAD), spec §1.2, §1.10, §4.4.
 *
 * Problem: hold every kernel launch of a process until the gpuweave FIKIT scheduler lets it go, at
 * kernel granularity, including launches made by libraries that never call the CUDA runtime (cuBLAS,
 * cuDNN, NCCL, Triton: they reach the driver through cuGetProcAddress), without CUDA headers at build
 * time and without a network round trip on the fast path.
 *
 * Interposition (section "hooks"):
 *   driver   cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch (and _ptsz),
 *            exported for direct callers AND handed out by our cuGetProcAddress, cuGetProcAddress_v2 and
 *            dlsym, which wrap the real pointer in one of FK_SLOTS trampolines per function;
 *   runtime  cudaLaunchKernel, cudaLaunchKernelExC, __cudaLaunchKernel (and _ptsz) where a shared
 *            libcudart exports them. A runtime launch marks its thread so the driver launch it makes
 *            inside libcudart is not gated twice.
 * Launches recorded into a CUDA graph (stream capture) are not gated: they run at cuGraphLaunch.
 *
 * Kernel IDs: "{name}|b{bx},{by},{bz}|g{gx},{gy},{gz}" (gpuweave.kernel.ids). name = cuFuncGetName /
 * cuKernelGetName (driver) or cudaFuncGetName / dladdr (runtime), demangled with the C++ ABI's
 * __cxa_demangle, cleaned exactly as gpuweave.kernel.ids.clean_kernel_name ('|' -> '/', bytes outside
 * printable ASCII -> '?', over 900 bytes: first 880 + "~h" + FNV-1a-64 of the raw bytes). Only such
 * authoritative names are cached (per handle); otherwise "?0x<handle>" is used for that launch only.
 * A graph launch is "cudaGraphExec#<n>" (n-th distinct executable graph launched by the process).
 *
 * Decisions (section "agent"): an agent thread per process owns the UDP socket (protocol v1,
 * gpuweave.kernel.protocol). A launching thread never touches the network: it takes its stream's lock
 * (FK_STREAM_LOCKS striped locks), numbers the launch, queues a record for the agent and, while the
 * server has the process "open" (gate{open:true}: it is the highest-priority class, whose launches the
 * scheduler releases at once), launches straight away -- the agent reports the launch afterwards. Only
 * a "closed" process waits, on a futex, for the agent to receive that launch's go. Completions are
 * reported with events (cuEventRecord after the launch; the agent polls cuEventQuery and sends
 * done{seq}), so the server's gap predictions start from real completion times. Silence fails the
 * process open; the agent re-probes (register) every FIKIT_REPROBE_MS and closes the gate again once
 * the server answers. fork(): the child gets fresh locks and state and starts its own agent on its
 * first launch; no lock is taken in the prepare handler, so a fork never waits for a launch.
 *
 * measure mode: every launch is bracketed by two timing events; at exit the shim writes
 * FIKIT_MEASURE_OUT, a kernel-gap trace (format gpuweave.kernel.trace: id, dur, gap_after in ms, gaps
 * between consecutive launches clamped at 0) that `gpuweave kernel profile` turns into a profile.
 *
 * Environment: FIKIT_SCHEDULER=host:port|none (127.0.0.1:47800), FIKIT_PRIORITY 0..9, FIKIT_TASK_KEY
 * (default sha256 of exe basename + argv), FIKIT_MODE=share|measure|off; shim only: FIKIT_TIMEOUT_MS
 * (50), FIKIT_RETRIES (5), FIKIT_REPROBE_MS (1000), FIKIT_COMPLETIONS=events|off (events),
 * FIKIT_MEASURE_OUT=path, FIKIT_SHIM_VERBOSE=1, FIKIT_TOKEN (1-128 characters of [A-Za-z0-9._~+/=-], sent
 * in every message when the server runs with --token). Invalid settings disable gating with one warning.
 *
 * Complexity: a launch is O(1) (hash probe for a cached name, a queue push, one atomic load); the agent
 * is O(1) per message plus O(outstanding completions) per poll.
 *
 * Build: cc -shared -fPIC -O2 -fvisibility=hidden -o libfikit_shim.so fikit_shim.c -ldl -pthread
 * With -DFIKIT_CHECK_CUDA_H and the CUDA include directory, the exported prototypes are checked
 * against the real cuda.h (the tests do this when the header exists).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ CUDA types (ABI only, no headers) */
#ifdef FIKIT_CHECK_CUDA_H
#include <cuda.h>
#undef cuGetProcAddress
#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLaunchCooperativeKernel
#undef cuGraphLaunch
typedef CUlaunchConfig fk_launch_config;
typedef CUhostFn fk_host_fn;
#else
typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUgraphExec, *CUevent, *CUcontext, *CUkernel;
typedef uint64_t cuuint64_t;
typedef int CUdriverProcAddressQueryResult;
typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void *attrs;
    unsigned int numAttrs;
} fk_launch_config;
#endif
typedef int cudaError_t;
typedef void *cudaStream_t, *cudaKernel_t;
typedef struct { unsigned int x, y, z; } dim3;
typedef struct {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    void *attrs;
    unsigned int numAttrs;
} fk_rt_launch_config;

#define FK_OK 0
#define FK_ERR_UNKNOWN 999
#define FK_STREAM_PER_THREAD ((CUstream)0x2)
#define FK_EVENT_DISABLE_TIMING 0x2
#define FK_EXPORT __attribute__((visibility("default")))

typedef CUresult (*cuLaunchKernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, CUstream, void **, void **);
typedef CUresult (*cuLaunchKernelEx_fn)(const fk_launch_config *, CUfunction, void **, void **);
typedef CUresult (*cuLaunchCooperativeKernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                 unsigned, unsigned, CUstream, void **);
typedef CUresult (*cuGraphLaunch_fn)(CUgraphExec, CUstream);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*name_fn)(const char **, void *);
typedef CUresult (*event_create_fn)(CUevent *, unsigned);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*event_query_fn)(CUevent);
typedef CUresult (*event_elapsed_fn)(float *, CUevent, CUevent);
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*capturing_fn)(CUstream, int *);
typedef CUresult (*capture_mode_fn)(int *); /* cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *) */
typedef cudaError_t (*rt_launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*rt_launch_ex_fn)(const fk_rt_launch_config *, const void *, void **);
typedef cudaError_t (*rt_funcname_fn)(const char **, const void *);
typedef cudaError_t (*rt_lasterr_fn)(void);
typedef void *(*dlsym_fn)(void *, const char *);
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* ------------------------------------------------------------------ limits (gpuweave.kernel.protocol / ids) */
#define FK_MAX_DATAGRAM 4096
#define FK_MAX_NAME 900          /* + "|b..|g.." (at most 68) stays under the protocol's 1024 */
#define FK_NAME_KEEP 880         /* prefix kept before "~h<16 hex>" when a name is shortened */
#define FK_ID_MAX 1024
#define FK_CACHE_SIZE 8192       /* handle -> name cache slots (power of two) */
#define FK_GO_SLOTS 4096         /* seq -> released, ring (power of two) */
#define FK_STREAM_LOCKS 64
#define FK_SLOTS 4               /* trampolines per driver launch function */
#define FK_EVENT_POOL 4096 /* above the launches in flight of a busy process: event churn contends */

/* ------------------------------------------------------------------ state */
enum { REC_REQUEST, REC_LAUNCHED, REC_EVENTS };

typedef struct {
    uint64_t seq, t_ns;
    const char *name; /* cached authoritative name, or NULL: alt holds this launch's "?0x..." */
    char alt[24];
    unsigned g[3], b[3];
    long tid;
    CUevent ev_start, ev_end;
    CUcontext ctx;
    int kind;
    int slot; /* share mode: the stream's completion slot (stream_slot), or -1 when ev_end is this launch's own */
} fk_rec;

typedef struct {
    fk_rec *v;
    size_t n, cap;
} fk_vec;

static struct {
    /* configuration, read once (cfg_once) */
    int enabled, networked, measure, completions, verbose;
    int priority, timeout_ms, retries, reprobe_ms;
    char mode[8], task_key[129], server[300], measure_out[1024];
    char tok[160]; /* ',"tok":"<FIKIT_TOKEN>"' inserted in every message, or "" without a token */
    struct sockaddr_in addr;
    /* shared by launching threads and the agent */
    pid_t pid;
    _Atomic int open, fail_open, agent_running, agent_idle, stop;
    _Atomic uint64_t seq;
    _Atomic int go_gen;
    _Atomic uint64_t go_slot[FK_GO_SLOTS];
    pthread_mutex_t q_mu, start_mu, ev_mu, cache_mu;
    fk_vec queue;
    int wake_fd;
    pthread_t agent;
    pthread_mutex_t stream_mu[FK_STREAM_LOCKS];
} S = {.q_mu = PTHREAD_MUTEX_INITIALIZER, .start_mu = PTHREAD_MUTEX_INITIALIZER,
       .ev_mu = PTHREAD_MUTEX_INITIALIZER, .cache_mu = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT, dl_once = PTHREAD_ONCE_INIT, streams_once = PTHREAD_ONCE_INIT;
static __thread int in_launch; /* a gated runtime launch is calling into the driver on this thread */
static dlsym_fn real_dlsym;

/* Driver functions the shim calls itself, resolved from the loaded libcuda.so.1. */
static struct {
    _Atomic int ready;
    name_fn func_name, kernel_name;
    event_create_fn ev_create;
    event_record_fn ev_record;
    event_query_fn ev_query, ev_destroy;
    event_elapsed_fn ev_elapsed;
    ctx_get_fn ctx_get;
    ctx_set_fn ctx_set;
    capturing_fn capturing;
    capture_mode_fn capture_mode;
} D;

static struct { _Atomic(const void *) key; const char *name; } cache[FK_CACHE_SIZE];
static struct { CUevent ev; CUcontext ctx; int timing; } ev_pool[FK_EVENT_POOL];
static int ev_pool_n;

__attribute__((format(printf, 1, 2))) static void warn(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fikit-shim[%d]: %s\n", (int)getpid(), line);
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic int *addr, int val, long timeout_ns) {
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    syscall(SYS_futex, (int *)addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic int *addr) {
    atomic_fetch_add(addr, 1);
    syscall(SYS_futex, (int *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static int vec_push(fk_vec *q, const fk_rec *r) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        fk_rec *v = realloc(q->v, cap * sizeof *v);
        if (!v) return 0;
        q->v = v, q->cap = cap;
    }
    q->v[q->n++] = *r;
    return 1;
}

/* ------------------------------------------------------------------ sha256 (default task key, R-3) */
typedef struct { uint32_t h[8]; uint64_t len; unsigned char buf[64]; size_t n; } sha256_ctx;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(sha256_ctx *c, const unsigned char *p) {
    uint32_t w[64], a, b, d, e, f, g, h, cc, t1, t2;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g, g = f, f = e, e = d + t1, d = cc, cc = b, b = a, a = t1 + t2;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d, c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha256_init(sha256_ctx *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
    c->n = 0;
}

static void sha256_update(sha256_ctx *c, const void *data, size_t len) {
    const unsigned char *p = data;
    c->len += len;
    while (len--) {
        c->buf[c->n++] = *p++;
        if (c->n == 64) {
            sha256_block(c, c->buf);
            c->n = 0;
        }
    }
}

static void sha256_hex(sha256_ctx *c, char out[65]) {
    uint64_t bits = c->len * 8;
    unsigned char pad = 0x80, zero = 0, lenb[8];
    sha256_update(c, &pad, 1);
    while (c->n != 56) sha256_update(c, &zero, 1);
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(c, lenb, 8);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08" PRIx32, c->h[i]);
}

/* Default task key: sha256(basename(/proc/self/exe) + "\0" + "\0".join(/proc/self/cmdline)). */
static int default_task_key(char out[65]) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (n <= 0 || fd < 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, base, strlen(base));
    sha256_update(&c, "", 1);
    unsigned char buf[4096];
    int have_pending = 0;
    unsigned char pending = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR)) {
        if (r < 0) continue;
        if (have_pending) sha256_update(&c, &pending, 1);
        sha256_update(&c, buf, (size_t)r - 1); /* hold back the last byte: cmdline ends in NUL */
        pending = buf[r - 1];
        have_pending = 1;
    }
    close(fd);
    if (have_pending && pending != 0) sha256_update(&c, &pending, 1);
    sha256_hex(&c, out);
    return 0;
}


/* ------------------------------------------------------------------ configuration */
static int valid_task_key(const char *k) {
    size_t n = strlen(k);
    if (n < 1 || n > 128) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = k[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

/* FIKIT_TOKEN: the server's shared secret (`gpuweave kernel serve --token`), safe to put in JSON unescaped. */
static int valid_token(const char *t) {
    size_t n = strlen(t);
    if (n < 1 || n > 128) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == '~' || ch == '+' || ch == '/' || ch == '=' || ch == '-'))
            return 0;
    }
    return 1;
}

static int env_int(const char *name, int dflt, int lo, int hi, int *out) {
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = dflt;
        return 1;
    }
    while (*v == ' ' || *v == '\t') v++;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    if (errno || end == v || *end || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}

static int parse_server(const char *text) {
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || !colon[1] || strlen(text) >= sizeof S.server) return 0;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    long port = strtol(colon + 1, NULL, 10);
    if (port < 1 || port > 65535 || strlen(colon + 1) > 5) return 0;
    char host[256];
    size_t hl = (size_t)(colon - text);
    if (hl >= sizeof host) return 0;
    memcpy(host, text, hl);
    host[hl] = 0;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) return 0;
    memcpy(&S.addr, res->ai_addr, sizeof S.addr);
    S.addr.sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 1;
}

/* FIKIT_MODE lower-cased without blanks; "!" when absurdly long. */
static void read_mode(char m[16]) {
    const char *mode = getenv("FIKIT_MODE");
    strcpy(m, "share");
    if (!mode) return;
    size_t j = 0;
    for (const char *p = mode; *p && j < 15; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n') m[j++] = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
    m[j] = 0;
    if (strlen(mode) > 12) m[0] = '!';
}

static int read_numbers(void) {
    if (!env_int("FIKIT_PRIORITY", 0, 0, 9, &S.priority)) {
        warn("FIKIT_PRIORITY must be an integer 0-9 (0 highest), got '%.40s': launches are not gated",
             getenv("FIKIT_PRIORITY"));
        return 0;
    }
    if (!env_int("FIKIT_TIMEOUT_MS", 50, 1, 60000, &S.timeout_ms) || !env_int("FIKIT_RETRIES", 5, 1, 1000, &S.retries) ||
        !env_int("FIKIT_REPROBE_MS", 1000, 1, 3600000, &S.reprobe_ms)) {
        warn("FIKIT_TIMEOUT_MS must be 1-60000, FIKIT_RETRIES 1-1000 and FIKIT_REPROBE_MS 1-3600000: "
             "launches are not gated");
        return 0;
    }
    const char *c = getenv("FIKIT_COMPLETIONS");
    if (c && *c && strcmp(c, "events") != 0 && strcmp(c, "off") != 0) {
        warn("FIKIT_COMPLETIONS must be events or off, got '%.40s': launches are not gated", c);
        return 0;
    }
    S.completions = !(c && strcmp(c, "off") == 0);
    return 1;
}

static int read_identity(void) {
    const char *key = getenv("FIKIT_TASK_KEY");
    if (key && *key) {
        if (!valid_task_key(key)) {
            warn("FIKIT_TASK_KEY must be 1-128 characters of [A-Za-z0-9_.:-], got '%.140s': launches are not gated",
                 key);
            return 0;
        }
        strcpy(S.task_key, key);
    } else if (default_task_key(S.task_key) != 0) {
        warn("cannot read /proc/self/exe or /proc/self/cmdline; set FIKIT_TASK_KEY: launches are not gated");
        return 0;
    }
    const char *srv = getenv("FIKIT_SCHEDULER");
    if (!srv || !*srv) srv = "127.0.0.1:47800";
    S.networked = strcmp(srv, "none") != 0;
    if (S.networked && !parse_server(srv)) {
        warn("FIKIT_SCHEDULER must be host:port (IPv4) or none, got '%.260s': launches are not gated", srv);
        return 0;
    }
    snprintf(S.server, sizeof S.server, "%s", srv);
    const char *out = getenv("FIKIT_MEASURE_OUT");
    if (out && strlen(out) >= sizeof S.measure_out) {
        warn("FIKIT_MEASURE_OUT is longer than %zu characters: launches are not gated", sizeof S.measure_out - 1);
        return 0;
    }
    snprintf(S.measure_out, sizeof S.measure_out, "%s", out ? out : "");
    const char *tok = getenv("FIKIT_TOKEN");
    S.tok[0] = 0;
    if (tok && *tok) {
        if (!valid_token(tok)) {
            warn("FIKIT_TOKEN must be 1-128 characters of [A-Za-z0-9._~+/=-]: launches are not gated");
            return 0;
        }
        snprintf(S.tok, sizeof S.tok, ",\"tok\":\"%s\"", tok);
    }
    return 1;
}

/* Read the environment once. Any invalid setting leaves S.enabled = 0 (fail open, nothing gated). */
static void read_config(void) {
    char m[16];
    S.pid = getpid();
    S.verbose = getenv("FIKIT_SHIM_VERBOSE") && strcmp(getenv("FIKIT_SHIM_VERBOSE"), "0") != 0;
    read_mode(m);
    if (strcmp(m, "off") == 0) return;
    if (strcmp(m, "share") != 0 && strcmp(m, "measure") != 0) {
        warn("FIKIT_MODE must be measure, share or off, got '%.40s': launches are not gated", getenv("FIKIT_MODE"));
        return;
    }
    strcpy(S.mode, m);
    S.measure = strcmp(m, "measure") == 0;
    if (!read_numbers() || !read_identity()) return;
    if (!S.networked && !S.measure) return; /* share without a scheduler: nothing to do */
    S.enabled = 1;
    if (S.verbose)
        warn("gating launches via %s, task key %s, priority %d, mode %s", S.server, S.task_key, S.priority, S.mode);
}

static int gating_enabled(void) {
    pthread_once(&cfg_once, read_config);
    return S.enabled;
}

/* ------------------------------------------------------------------ real symbols */
static void resolve_dlsym(void) {
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym) real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static void *rdlsym(void *handle, const char *name) {
    pthread_once(&dl_once, resolve_dlsym);
    return real_dlsym ? real_dlsym(handle, name) : NULL;
}

/* The real `name` next after this library, else in an already-loaded (maybe RTLD_LOCAL) library. */
static void *lib_lookup(const char *const *sonames, const char *name, const void *self) {
    void *p = rdlsym(RTLD_NEXT, name);
    for (int i = 0; (!p || p == self) && sonames[i]; i++) {
        void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = rdlsym(h, name);
            dlclose(h);
        }
    }
    return p == self ? NULL : p;
}

static const char *const DRIVER_LIBS[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const RUNTIME_LIBS[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
                                           NULL};

/* dlsym(RTLD_NEXT, name) as the caller would have seen it: the first object after the caller's in
 * load order that defines name (dlsym(RTLD_NEXT) called from here would search after this library). */
static void *next_after(const void *caller, const char *name) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return rdlsym(RTLD_NEXT, name);
    for (struct link_map *o = lm->l_next; o; o = o->l_next) {
        void *p = rdlsym(o, name); /* glibc handles are link maps; this searches o and its dependencies */
        struct link_map *where = NULL;
        if (p && dladdr1(p, &info, (void **)&where, RTLD_DL_LINKMAP) && where == o) return p;
    }
    return NULL;
}

static void resolve_driver(void) {
    if (atomic_load_explicit(&D.ready, memory_order_acquire)) return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return; /* no driver loaded yet: try again at the next launch */
    D.func_name = (name_fn)rdlsym(h, "cuFuncGetName");
    D.kernel_name = (name_fn)rdlsym(h, "cuKernelGetName");
    D.ev_create = (event_create_fn)rdlsym(h, "cuEventCreate");
    D.ev_record = (event_record_fn)rdlsym(h, "cuEventRecord");
    D.ev_query = (event_query_fn)rdlsym(h, "cuEventQuery");
    D.ev_destroy = (event_query_fn)rdlsym(h, "cuEventDestroy_v2");
    D.ev_elapsed = (event_elapsed_fn)rdlsym(h, "cuEventElapsedTime_v2"); /* CUDA 13 names it so */
    if (!D.ev_elapsed) D.ev_elapsed = (event_elapsed_fn)rdlsym(h, "cuEventElapsedTime");
    D.ctx_get = (ctx_get_fn)rdlsym(h, "cuCtxGetCurrent");
    D.ctx_set = (ctx_set_fn)rdlsym(h, "cuCtxSetCurrent");
    D.capturing = (capturing_fn)rdlsym(h, "cuStreamIsCapturing");
    D.capture_mode = (capture_mode_fn)rdlsym(h, "cuThreadExchangeStreamCaptureMode");
    dlclose(h); /* the process keeps its own reference */
    atomic_store_explicit(&D.ready, 1, memory_order_release);
}

static int have_events(void) {
    return D.ev_create && D.ev_record && D.ev_query && D.ev_destroy && D.ev_elapsed && D.ctx_get && D.ctx_set;
}

/* ------------------------------------------------------------------ kernel names (ids.clean_kernel_name) */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* '|' -> '/', bytes outside printable ASCII -> '?'; longer than FK_MAX_NAME: prefix + "~h" + hash of raw. */
static void clean_name(const char *raw, char *out) {
    size_t n = strlen(raw), j = 0;
    for (size_t i = 0; i < n && j < FK_MAX_NAME; i++) {
        unsigned char ch = (unsigned char)raw[i];
        out[j++] = ch == '|' ? '/' : (ch < 0x20 || ch > 0x7e) ? '?' : (char)ch;
    }
    out[j] = 0;
    if (n > FK_MAX_NAME) snprintf(out + FK_NAME_KEEP, FK_MAX_NAME + 1 - FK_NAME_KEEP, "~h%016" PRIx64, fnv1a(raw));
}

static demangle_fn find_demangler(void) {
    static _Atomic(demangle_fn) fn;
    static _Atomic int tried;
    demangle_fn f = atomic_load(&fn);
    if (f || atomic_load(&tried)) return f;
    f = (demangle_fn)rdlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) { /* a C program: the C++ runtime is on every system that has CUDA */
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h) f = (demangle_fn)rdlsym(h, "__cxa_demangle");
    }
    atomic_store(&fn, f);
    atomic_store(&tried, 1);
    return f;
}

static size_t cache_index(const void *key) {
    return (size_t)(((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull >> 51) & (FK_CACHE_SIZE - 1);
}

static const char *cache_get(const void *key) {
    size_t i = cache_index(key);
    for (int probe = 0; probe < 64; probe++, i = (i + 1) & (FK_CACHE_SIZE - 1)) {
        const void *k = atomic_load_explicit(&cache[i].key, memory_order_acquire);
        if (k == key) return cache[i].name;
        if (!k) return NULL;
    }
    return NULL;
}

/* Demangle and clean an authoritative raw name and cache it for key; returns the cached copy (or NULL). */
static const char *cache_put(const void *key, const char *raw) {
    char clean[FK_MAX_NAME + 1];
    demangle_fn dm = raw[0] == '_' && raw[1] == 'Z' ? find_demangler() : NULL;
    int status = -1;
    char *demangled = dm ? dm(raw, NULL, NULL, &status) : NULL;
    clean_name(status == 0 && demangled ? demangled : raw, clean);
    free(demangled);
    char *copy = strdup(clean);
    if (!copy) return NULL;
    pthread_mutex_lock(&S.cache_mu);
    size_t i = cache_index(key);
    for (int probe = 0; probe < 64; probe++, i = (i + 1) & (FK_CACHE_SIZE - 1)) {
        const void *k = atomic_load_explicit(&cache[i].key, memory_order_relaxed);
        if (k == key) { /* another thread got here first */
            free(copy);
            copy = (char *)cache[i].name;
            break;
        }
        if (!k) {
            cache[i].name = copy;
            atomic_store_explicit(&cache[i].key, key, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&S.cache_mu);
    return copy; /* neighbourhood full: this launch still gets the name, the next one looks it up again */
}

/* Name of a CUfunction or CUkernel handle, through the real driver. NULL: alt holds "?0x<handle>". */
static const char *driver_name(const void *handle, char alt[24]) {
    const char *name = cache_get(handle), *raw = NULL;
    if (name) return name;
    if (D.func_name && (D.func_name(&raw, (void *)handle) != FK_OK || !raw || !*raw)) raw = NULL;
    if (!raw && D.kernel_name && (D.kernel_name(&raw, (void *)handle) != FK_OK || !raw || !*raw)) raw = NULL;
    if (raw && (name = cache_put(handle, raw))) return name;
    snprintf(alt, 24, "?0x%" PRIxPTR, (uintptr_t)handle);
    return NULL;
}

/* Name of a runtime host stub: cudaFuncGetName (without disturbing the runtime's last error), else its
 * exact dynamic symbol. */
static const char *host_stub_name(const void *func, char alt[24]) {
    static rt_funcname_fn funcname;
    static rt_lasterr_fn peek, getlast;
    static _Atomic int resolved;
    const char *name = cache_get(func), *raw = NULL;
    if (name) return name;
    if (!atomic_load(&resolved)) {
        funcname = (rt_funcname_fn)lib_lookup(RUNTIME_LIBS, "cudaFuncGetName", NULL);
        peek = (rt_lasterr_fn)lib_lookup(RUNTIME_LIBS, "cudaPeekAtLastError", NULL);
        getlast = (rt_lasterr_fn)lib_lookup(RUNTIME_LIBS, "cudaGetLastError", NULL);
        atomic_store(&resolved, 1);
    }
    if (funcname && peek && getlast && peek() == FK_OK) {
        if (funcname(&raw, func) != FK_OK || !raw || !*raw) {
            raw = NULL;
            getlast(); /* clear only the error we caused (none was pending before) */
        }
    }
    Dl_info info;
    if (!raw && dladdr(func, &info) && info.dli_sname && info.dli_saddr == func && *info.dli_sname)
        raw = info.dli_sname;
    if (raw && (name = cache_put(func, raw))) return name;
    snprintf(alt, 24, "?0x%" PRIxPTR, (uintptr_t)func);
    return NULL;
}

/* "cudaGraphExec#<n>": the n-th distinct executable graph this process launched (stable across runs of
 * a deterministic program, unlike the handle). */
static const char *graph_name(const void *exec, char alt[24]) {
    static _Atomic int graphs;
    const char *name = cache_get(exec);
    if (name) return name;
    char raw[40];
    snprintf(raw, sizeof raw, "cudaGraphExec#%d", atomic_fetch_add(&graphs, 1));
    if ((name = cache_put(exec, raw))) return name;
    snprintf(alt, 24, "?0x%" PRIxPTR, (uintptr_t)exec);
    return NULL;
}

/* ------------------------------------------------------------------ replies (tiny JSON reader) */
typedef struct {
    int v;
    char t[32], code[32];
    long long pid, seq;
    int has_pid, has_seq, open;
} reply_t;

static const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Parse a JSON string at p (at '"'); copy up to cap-1 raw characters into out (may be NULL). */
static const char *read_str(const char *p, const char *e, char *out, size_t cap) {
    size_t j = 0;
    if (p >= e || *p != '"') return NULL;
    for (p++; p < e; p++) {
        if (*p == '"') {
            if (out) out[j] = 0;
            return p + 1;
        }
        if (*p == '\\') {
            if (++p >= e) return NULL;
        }
        if (out && j + 1 < cap) out[j++] = *p;
    }
    return NULL;
}

/* Skip any JSON value (bounded by e). */
static const char *skip_value(const char *p, const char *e) {
    int depth = 0;
    while (p < e) {
        if (*p == '"') {
            p = read_str(p, e, NULL, 0);
            if (!p) return NULL;
            if (depth == 0) return p;
            continue;
        }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') {
            if (depth == 0) return p;
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && (*p == ',')) return p;
        p++;
    }
    return depth == 0 ? p : NULL;
}

static int parse_reply(const char *buf, size_t n, reply_t *r) {
    const char *p = buf, *e = buf + n;
    memset(r, 0, sizeof *r);
    p = skip_ws(p, e);
    if (p >= e || *p++ != '{') return 0;
    for (;;) {
        char key[16];
        p = skip_ws(p, e);
        if (p < e && *p == '}') break;
        if (!(p = read_str(p, e, key, sizeof key))) return 0;
        p = skip_ws(p, e);
        if (p >= e || *p++ != ':') return 0;
        p = skip_ws(p, e);
        if (p >= e) return 0;
        if (*p == '"') {
            char val[32];
            if (!(p = read_str(p, e, val, sizeof val))) return 0;
            if (!strcmp(key, "t")) memcpy(r->t, val, sizeof val);
            else if (!strcmp(key, "code")) memcpy(r->code, val, sizeof val);
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            char num[32];
            size_t j = 0;
            int integral = 1;
            while (p < e && j + 1 < sizeof num && *p && strchr("+-0123456789.eE", *p)) {
                if (*p == '.' || *p == 'e' || *p == 'E') integral = 0;
                num[j++] = *p++;
            }
            num[j] = 0;
            long long x = strtoll(num, NULL, 10);
            if (integral && !strcmp(key, "v")) r->v = (int)x;
            else if (integral && !strcmp(key, "pid")) r->pid = x, r->has_pid = 1;
            else if (integral && !strcmp(key, "seq")) r->seq = x, r->has_seq = 1;
        } else if (e - p >= 4 && !strncmp(p, "true", 4)) {
            if (!strcmp(key, "open")) r->open = 1;
            p += 4;
        } else if (!(p = skip_value(p, e))) return 0;
        p = skip_ws(p, e);
        if (p < e && *p == ',') {
            p++;
            continue;
        }
        if (p < e && *p == '}') break;
        return 0;
    }
    return r->v == 1 && r->t[0];
}


/* ------------------------------------------------------------------ launching threads */
enum { K_FUNC, K_HOST, K_GRAPH };

typedef struct {
    int kind; /* what handle is: a CUfunction/CUkernel, a runtime host stub or kernel, a CUgraphExec */
    const void *handle;
    unsigned g[3], b[3];
    CUstream stream;
    int ptsz;
} fk_launch;

typedef struct {
    pthread_mutex_t *lock;
    fk_rec rec;
    int requested, report, events;
    CUstream ev_stream;
} fk_ticket;

static __thread long cached_tid;

static void init_stream_locks(void) {
    for (int i = 0; i < FK_STREAM_LOCKS; i++) pthread_mutex_init(&S.stream_mu[i], NULL);
}

static pthread_mutex_t *stream_lock(CUstream s) {
    pthread_once(&streams_once, init_stream_locks);
    return &S.stream_mu[((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull >> 58 & (FK_STREAM_LOCKS - 1)];
}

static CUevent event_get(CUcontext ctx, int timing) {
    CUevent e = NULL;
    pthread_mutex_lock(&S.ev_mu);
    for (int i = ev_pool_n - 1; i >= 0; i--)
        if (ev_pool[i].ctx == ctx && ev_pool[i].timing == timing) {
            e = ev_pool[i].ev;
            ev_pool[i] = ev_pool[--ev_pool_n];
            break;
        }
    pthread_mutex_unlock(&S.ev_mu);
    if (!e && D.ev_create(&e, timing ? 0 : FK_EVENT_DISABLE_TIMING) != FK_OK) e = NULL;
    return e;
}

static void event_put(CUevent e, CUcontext ctx, int timing) {
    if (!e) return;
    pthread_mutex_lock(&S.ev_mu);
    int kept = ev_pool_n < FK_EVENT_POOL;
    if (kept) ev_pool[ev_pool_n].ev = e, ev_pool[ev_pool_n].ctx = ctx, ev_pool[ev_pool_n++].timing = timing;
    pthread_mutex_unlock(&S.ev_mu);
    if (!kept) D.ev_destroy(e);
}

/* Share mode's completions: one event per stream, re-recorded after every gated launch on it. When the agent
 * finds it complete, every launch on that stream up to the seq recorded before the query has ended (a stream
 * runs in order), so each gets its done. A launch costs one cuEventRecord and nothing else: no event from a
 * pool, no lock shared with other streams, and the agent queries streams, not launches. (An event per launch,
 * before: 4 threads launching empty kernels on an H100 paid about 20 us more per launch than without the
 * shim, from the event churn and per-event queries contending in the driver.) Measure mode keeps an event pair
 * per launch: it times each kernel. */
#define FK_STREAM_SLOTS 256
static struct {
    _Atomic(CUstream) key;
    _Atomic int used;
    CUcontext ctx;
    CUevent ev;
    _Atomic uint64_t recorded; /* the seq of the last launch the event was recorded after */
} streams[FK_STREAM_SLOTS];
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;

/* The slot of stream s in context ctx, made on first use; -1 when the table is full or no event can be made
 * (the launch then gets an event of its own). Called with s's stream lock held. */
static int stream_slot(CUstream s, CUcontext ctx) {
    unsigned h = (unsigned)(((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull >> 56) & (FK_STREAM_SLOTS - 1);
    for (unsigned i = 0; i < FK_STREAM_SLOTS; i++) {
        unsigned k = (h + i) & (FK_STREAM_SLOTS - 1);
        if (!atomic_load(&streams[k].used)) break;
        if (atomic_load(&streams[k].key) == s && streams[k].ctx == ctx) return (int)k;
    }
    pthread_mutex_lock(&streams_mu);
    int found = -1;
    for (unsigned i = 0; i < FK_STREAM_SLOTS && found < 0; i++) {
        unsigned k = (h + i) & (FK_STREAM_SLOTS - 1);
        if (atomic_load(&streams[k].used)) {
            if (atomic_load(&streams[k].key) == s && streams[k].ctx == ctx) found = (int)k;
            continue;
        }
        CUevent e = NULL;
        if (D.ev_create(&e, FK_EVENT_DISABLE_TIMING) != FK_OK || !e) break;
        streams[k].ctx = ctx;
        streams[k].ev = e;
        atomic_store(&streams[k].recorded, 0);
        atomic_store(&streams[k].key, s);
        atomic_store(&streams[k].used, 1);
        found = (int)k;
    }
    pthread_mutex_unlock(&streams_mu);
    return found;
}

static void *agent_main(void *arg);

static void ensure_agent(void) {
    if (atomic_load_explicit(&S.agent_running, memory_order_acquire)) return;
    pthread_mutex_lock(&S.start_mu);
    if (!atomic_load(&S.agent_running)) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the agent never runs the program's signal handlers */
        S.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        atomic_store(&S.stop, 0);
        if (S.wake_fd >= 0 && pthread_create(&S.agent, NULL, agent_main, NULL) == 0)
            atomic_store_explicit(&S.agent_running, 1, memory_order_release);
        else
            warn("cannot start the agent thread: launches are not gated");
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&S.start_mu);
}

static void push(const fk_rec *r) {
    pthread_mutex_lock(&S.q_mu);
    int ok = vec_push(&S.queue, r);
    pthread_mutex_unlock(&S.q_mu);
    if (ok && atomic_load(&S.agent_idle)) {
        uint64_t one = 1;
        if (write(S.wake_fd, &one, sizeof one) < 0) { /* counter full: the agent is awake anyway */
        }
    }
}

/* Block until the agent has this seq's go, or the process is open, failed open or has no agent. */
static void wait_go(uint64_t seq) {
    for (;;) {
        int gen = atomic_load(&S.go_gen);
        if (atomic_load(&S.go_slot[seq & (FK_GO_SLOTS - 1)]) == seq || atomic_load(&S.open) ||
            atomic_load(&S.fail_open) || !atomic_load(&S.agent_running))
            return;
        futex_wait(&S.go_gen, gen, 100000000L);
    }
}

static const char *launch_name(const fk_launch *L, char alt[24]) {
    if (L->kind == K_GRAPH) return graph_name(L->handle, alt);
    if (L->kind == K_HOST) return host_stub_name(L->handle, alt);
    return driver_name(L->handle, alt);
}

/* Decide whether this launch is gated; if so, wait for permission (closed process only). Returns 1 when
 * gate_exit must follow the real launch. */
static int gate_enter(const fk_launch *L, fk_ticket *T) {
    if (in_launch || !gating_enabled()) return 0;
    int networked = S.networked && !atomic_load(&S.fail_open);
    if (!networked && !S.measure) return 0;
    resolve_driver();
    int capture = 0;
    if (D.capturing && D.capturing(L->stream, &capture) == FK_OK && capture != 0) return 0; /* runs at graph launch */
    memset(T, 0, sizeof *T);
    fk_rec *r = &T->rec;
    r->slot = -1;
    r->name = launch_name(L, r->alt);
    memcpy(r->g, L->g, sizeof r->g);
    memcpy(r->b, L->b, sizeof r->b);
    r->tid = cached_tid ? cached_tid : (cached_tid = (long)syscall(SYS_gettid));
    r->t_ns = mono_ns();
    T->report = networked;
    T->events = have_events() && (S.measure || (networked && S.completions));
    T->ev_stream = !L->stream && L->ptsz ? FK_STREAM_PER_THREAD : L->stream;
    T->lock = stream_lock(L->stream);
    pthread_mutex_lock(T->lock); /* launches on one stream reach the driver in seq order */
    r->seq = atomic_fetch_add(&S.seq, 1) + 1;
    ensure_agent();
    if (T->events && D.ctx_get(&r->ctx) == FK_OK && S.measure && (r->ev_start = event_get(r->ctx, 1)))
        D.ev_record(r->ev_start, T->ev_stream);
    if (networked && !atomic_load(&S.open)) {
        r->kind = REC_REQUEST;
        push(r);
        wait_go(r->seq);
        T->requested = 1;
    }
    in_launch++;
    return 1;
}

static void gate_exit(fk_ticket *T, int launched) {
    fk_rec *r = &T->rec;
    in_launch--;
    if (T->events && launched && !S.measure && (r->slot = stream_slot(T->ev_stream, r->ctx)) >= 0) {
        if (D.ev_record(streams[r->slot].ev, T->ev_stream) == FK_OK)
            atomic_store(&streams[r->slot].recorded, r->seq); /* under the stream lock: in seq order */
        else
            r->slot = -1;
    }
    if (T->events && launched && r->slot < 0 && (r->ev_end = event_get(r->ctx, S.measure)) &&
        D.ev_record(r->ev_end, T->ev_stream) != FK_OK) {
        event_put(r->ev_end, r->ctx, S.measure);
        r->ev_end = NULL;
    }
    if (!r->ev_end && r->ev_start) {
        event_put(r->ev_start, r->ctx, 1);
        r->ev_start = NULL;
    }
    if (launched && (r->ev_end || r->slot >= 0 || (T->report && !T->requested))) {
        r->kind = T->requested ? REC_EVENTS : REC_LAUNCHED;
        if (!T->report) r->kind = REC_EVENTS;
        push(r);
    }
    pthread_mutex_unlock(T->lock);
}

/* ------------------------------------------------------------------ agent thread (owns the socket) */
#define FK_NOT_READY 600 /* CUDA_ERROR_NOT_READY */

typedef struct {
    char *kid;
    double dur, gap;
} fk_measured;

static struct {
    int fd, registered, silent;
    int refused; /* the server answered our register with an error: it does not hold us */
    uint64_t deadline_ns, next_probe_ns;
    fk_vec waiting;     /* requests not released yet: re-sent on silence and after re-registering */
    fk_vec outstanding; /* launches whose end event is not complete yet, in queue order */
    fk_vec on_streams;  /* share mode: launches waiting for their stream's event (stream_slot), in queue order */
    fk_rec prev;        /* measure: the last completed launch; its gap ends at the next launch's start */
    int have_prev;
    fk_measured *measured;
    size_t m_n, m_cap;
} A = {.fd = -1};

static void send_msg(const char *msg, int n) {
    if (A.fd >= 0 && n > 0 && n < FK_MAX_DATAGRAM && send(A.fd, msg, (size_t)n, 0) < 0) { /* lost: retried */
    }
}

static void send_register(void) {
    char msg[512];
    send_msg(msg, snprintf(msg, sizeof msg,
                           "{\"v\":1,\"t\":\"register\",\"task_key\":\"%s\",\"pid\":%d,\"priority\":%d,\"mode\":\"%s\"%s}",
                           S.task_key, (int)S.pid, S.priority, S.mode, S.tok));
}

/* The kernel ID of r, JSON-escaped when json is set. */
static void format_kid(const fk_rec *r, char *out, size_t cap, int json) {
    const char *name = r->name ? r->name : r->alt;
    size_t j = 0;
    for (const char *p = name; *p && j + 2 < cap; p++) {
        if (json && (*p == '"' || *p == '\\')) out[j++] = '\\';
        out[j++] = *p;
    }
    snprintf(out + j, cap - j, "|b%u,%u,%u|g%u,%u,%u", r->b[0], r->b[1], r->b[2], r->g[0], r->g[1], r->g[2]);
}

static void send_launch(const fk_rec *r) {
    char kid[2 * FK_ID_MAX], msg[FK_MAX_DATAGRAM];
    format_kid(r, kid, sizeof kid, 1);
    send_msg(msg, snprintf(msg, sizeof msg,
                           "{\"v\":1,\"t\":\"launch\",\"pid\":%d,\"tid\":%ld,\"seq\":%" PRIu64 ",\"kernel_id\":\"%s\","
                           "\"t_client_ns\":%" PRIu64 "%s}",
                           (int)S.pid, r->tid < 0 ? 0 : r->tid, r->seq, kid, r->t_ns, S.tok));
    if (S.verbose) {
        format_kid(r, kid, sizeof kid, 0);
        warn("launch %" PRIu64 " %s", r->seq, kid);
    }
}

static void send_done(uint64_t seq, uint64_t t_ns) {
    char msg[384]; /* room for the token */
    send_msg(msg, snprintf(msg, sizeof msg,
                           "{\"v\":1,\"t\":\"done\",\"pid\":%d,\"seq\":%" PRIu64 ",\"t_client_ns\":%" PRIu64 "%s}",
                           (int)S.pid, seq, t_ns, S.tok));
}

static void fail_open(const char *why, uint64_t now) {
    if (!atomic_load(&S.fail_open))
        warn("FIKIT scheduler %s unreachable (%s): failing open, launches are not gated; re-probing every %d ms",
             S.server, why, S.reprobe_ms);
    atomic_store(&S.fail_open, 1);
    atomic_store(&S.open, 0);
    A.registered = 0;
    A.waiting.n = 0;
    A.silent = 0;
    A.deadline_ns = 0;
    A.next_probe_ns = now + (uint64_t)S.reprobe_ms * 1000000ull;
    futex_wake_all(&S.go_gen);
}

static void release(uint64_t seq) {
    atomic_store(&S.go_slot[seq & (FK_GO_SLOTS - 1)], seq);
    for (size_t i = 0; i < A.waiting.n; i++)
        if (A.waiting.v[i].seq == seq) {
            A.waiting.v[i] = A.waiting.v[--A.waiting.n];
            break;
        }
}

static void on_registered(void) {
    A.registered = 1;
    A.refused = 0;
    if (atomic_exchange(&S.fail_open, 0)) warn("FIKIT scheduler %s answers again: launches are gated", S.server);
    else if (S.verbose) warn("registered (pid %d)", (int)S.pid);
    for (size_t i = 0; i < A.waiting.n; i++) send_launch(&A.waiting.v[i]);
}

static void on_reply(const reply_t *m, uint64_t now) {
    int ours = m->has_pid && m->pid == (long long)S.pid;
    A.silent = 0;
    A.deadline_ns = now + (uint64_t)S.timeout_ms * 1000000ull;
    if (!strcmp(m->t, "register_ack") && ours) on_registered();
    else if (!strcmp(m->t, "go") && ours && m->has_seq) {
        release((uint64_t)m->seq);
        futex_wake_all(&S.go_gen);
    } else if (!strcmp(m->t, "gate") && ours) {
        atomic_store(&S.open, m->open);
        if (m->open) futex_wake_all(&S.go_gen);
    } else if (!strcmp(m->t, "error") && !strcmp(m->code, "unknown_pid") && ours) {
        A.registered = 0; /* the server restarted or dropped us: register again, then re-send what waits */
        atomic_store(&S.open, 0);
        send_register();
    } else if (!strcmp(m->t, "error") && !A.registered && !m->has_seq) {
        A.refused = 1;
        fail_open("registration refused", now);
    }
}

static void read_socket(uint64_t now) {
    char buf[FK_MAX_DATAGRAM + 1];
    for (;;) {
        ssize_t n = recv(A.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return; /* EAGAIN, or ECONNREFUSED: nobody listens (counted as silence) */
        reply_t m;
        if (n <= FK_MAX_DATAGRAM && parse_reply(buf, (size_t)n, &m)) on_reply(&m, now);
    }
}

/* New records from launching threads: requests and launches go to the server, events are watched. */
static void take_queue(void) {
    pthread_mutex_lock(&S.q_mu);
    fk_vec q = S.queue;
    S.queue = (fk_vec){0};
    pthread_mutex_unlock(&S.q_mu);
    int online = A.registered && !atomic_load(&S.fail_open);
    for (size_t i = 0; i < q.n; i++) {
        fk_rec *r = &q.v[i];
        if (r->kind == REC_REQUEST) {
            if (atomic_load(&S.fail_open)) continue; /* its thread has been let go already */
            vec_push(&A.waiting, r);
            if (online) send_launch(r);
            if (!A.deadline_ns) A.deadline_ns = mono_ns() + (uint64_t)S.timeout_ms * 1000000ull;
        } else if (r->kind == REC_LAUNCHED && online) {
            send_launch(r);
        }
        if (r->ev_end) vec_push(&A.outstanding, r);
        else if (r->slot >= 0) vec_push(&A.on_streams, r);
    }
    free(q.v);
}

/* Silence handling: re-send what awaits an answer every FIKIT_TIMEOUT_MS, fail open after FIKIT_RETRIES
 * silent timeouts in a row, re-probe (register) every FIKIT_REPROBE_MS while failed open. */
static void tick(uint64_t now) {
    if (atomic_load(&S.fail_open)) {
        if (now >= A.next_probe_ns) {
            send_register();
            A.next_probe_ns = now + (uint64_t)S.reprobe_ms * 1000000ull;
        }
        return;
    }
    if (A.registered && !A.waiting.n) {
        A.deadline_ns = 0;
        A.silent = 0;
        return;
    }
    if (!A.deadline_ns) A.deadline_ns = now + (uint64_t)S.timeout_ms * 1000000ull;
    if (now < A.deadline_ns) return;
    if (++A.silent >= S.retries) {
        fail_open(A.registered ? "no answer to a launch" : "no answer to register", now);
        return;
    }
    A.deadline_ns = now + (uint64_t)S.timeout_ms * 1000000ull;
    if (!A.registered) send_register();
    else
        for (size_t i = 0; i < A.waiting.n; i++) send_launch(&A.waiting.v[i]);
}

static void add_measured(const fk_rec *r, double dur, double gap) {
    char kid[FK_ID_MAX + 8];
    if (A.m_n == A.m_cap) {
        size_t cap = A.m_cap ? A.m_cap * 2 : 1024;
        fk_measured *v = realloc(A.measured, cap * sizeof *v);
        if (!v) return;
        A.measured = v, A.m_cap = cap;
    }
    format_kid(r, kid, sizeof kid, 0);
    if ((A.measured[A.m_n].kid = strdup(kid))) {
        A.measured[A.m_n].dur = dur;
        A.measured[A.m_n++].gap = gap;
    }
}

static void drop_events(fk_rec *r) {
    event_put(r->ev_start, r->ctx, 1);
    event_put(r->ev_end, r->ctx, S.measure);
    r->ev_start = r->ev_end = NULL;
}

static double prev_dur;

/* measure: duration = elapsed(start, end); the previous launch's gap = elapsed(its end, this start), >= 0. */
static void measure_step(fk_rec *r) {
    float dur = 0.0f, gap = 0.0f;
    if (D.ev_elapsed(&dur, r->ev_start, r->ev_end) != FK_OK || dur < 0) dur = 0.0f;
    if (A.have_prev) {
        if (A.prev.ctx != r->ctx || D.ev_elapsed(&gap, A.prev.ev_end, r->ev_start) != FK_OK || gap < 0) gap = 0.0f;
        add_measured(&A.prev, prev_dur, gap);
        drop_events(&A.prev);
    }
    A.prev = *r;
    prev_dur = dur;
    A.have_prev = 1;
}

#define FK_CAPTURE_MODE_RELAXED 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */

/* The agent's event queries must not break the program's CUDA graph captures. While any thread captures in
 * the default (global) mode, a "potentially unsafe" call such as cuEventQuery from another thread invalidates
 * that capture (cudaStreamEndCapture fails; seen with PyTorch's CUDA graphs and a plain capture on an H100).
 * The agent runs no captures of its own, so it declares itself relaxed, once, before its first query. */
static void agent_relax_capture(void) {
    static __thread int done; /* per thread: a forked child's new agent relaxes itself again */
    if (done || !D.capture_mode) return;
    int mode = FK_CAPTURE_MODE_RELAXED;
    done = D.capture_mode(&mode) == FK_OK;
}

static void poll_events(uint64_t now) {
    size_t k = 0;
    CUcontext cur = NULL;
    agent_relax_capture();
    for (; k < A.outstanding.n; k++) {
        fk_rec *r = &A.outstanding.v[k];
        if (k == 0 || r->ctx != cur) D.ctx_set(cur = r->ctx);
        CUresult q = D.ev_query(r->ev_end);
        if (q == FK_NOT_READY) break;
        if (q == FK_OK && S.networked && A.registered && !atomic_load(&S.fail_open)) send_done(r->seq, now);
        if (q == FK_OK && S.measure && r->ev_start) measure_step(r);
        else drop_events(r);
    }
    memmove(A.outstanding.v, A.outstanding.v + k, (A.outstanding.n - k) * sizeof *A.outstanding.v);
    A.outstanding.n -= k;
}

/* One query per stream with launches waiting: a complete event ends every launch recorded before it. */
static void poll_streams(uint64_t now) {
    static unsigned char state[FK_STREAM_SLOTS]; /* per poll: 0 not asked, 1 complete, 2 not yet, 3 failed */
    static uint64_t upto[FK_STREAM_SLOTS];
    agent_relax_capture();
    memset(state, 0, sizeof state);
    int online = S.networked && A.registered && !atomic_load(&S.fail_open);
    CUcontext cur = NULL;
    size_t kept = 0;
    for (size_t i = 0; i < A.on_streams.n; i++) {
        fk_rec *r = &A.on_streams.v[i];
        int k = r->slot;
        if (!state[k]) {
            upto[k] = atomic_load(&streams[k].recorded); /* read before the query: never ahead of it */
            if (streams[k].ctx != cur) D.ctx_set(cur = streams[k].ctx);
            CUresult q = D.ev_query(streams[k].ev);
            state[k] = q == FK_OK ? 1 : q == FK_NOT_READY ? 2 : 3;
        }
        if (state[k] == 1 && r->seq <= upto[k]) {
            if (online) send_done(r->seq, now);
        } else if (state[k] != 3) {
            A.on_streams.v[kept++] = *r;
        }
    }
    A.on_streams.n = kept;
}

static void agent_sleep(uint64_t now) {
    long long wait_ns = -1;
    if (A.outstanding.n || A.on_streams.n) wait_ns = 200000; /* completions are noticed within 0.2 ms */
    else if (A.fd >= 0 && atomic_load(&S.fail_open)) wait_ns = (long long)(A.next_probe_ns - now);
    else if (A.fd >= 0 && A.deadline_ns) wait_ns = (long long)(A.deadline_ns - now);
    if (wait_ns < -1 || (wait_ns >= 0 && wait_ns < 1000)) wait_ns = 1000;
    atomic_store(&S.agent_idle, 1);
    pthread_mutex_lock(&S.q_mu);
    int queued = S.queue.n > 0;
    pthread_mutex_unlock(&S.q_mu);
    if (!queued && !atomic_load(&S.stop)) {
        struct pollfd p[2] = {{S.wake_fd, POLLIN, 0}, {A.fd, POLLIN, 0}};
        struct timespec ts = {wait_ns / 1000000000LL, wait_ns % 1000000000LL};
        ppoll(p, A.fd >= 0 ? 2 : 1, wait_ns < 0 ? NULL : &ts, NULL);
        uint64_t drained;
        if (read(S.wake_fd, &drained, sizeof drained) < 0) { /* nothing to drain */
        }
    }
    atomic_store(&S.agent_idle, 0);
}

static void open_socket(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&S.addr, sizeof S.addr) != 0) {
        close(fd);
        fd = -1;
    }
    __atomic_store_n(&A.fd, fd, __ATOMIC_RELEASE); /* the exit handler reads it if the agent does not finish */
    if (fd < 0) fail_open("cannot open a UDP socket", mono_ns());
    else send_register();
}

/* At exit: unregister, re-sent every FIKIT_TIMEOUT_MS until acknowledged, FIKIT_RETRIES times at most (the rule
 * that declares a silent server gone) and within FK_EXIT_BUDGET_MS, so the server frees the task now. Re-sending
 * matters: a burst of launch reports just before exit can fill the server's socket buffer on a loaded machine, and
 * a datagram that finds it full is dropped. The budget stays under the destructor's 2 s join. */
#define FK_EXIT_BUDGET_MS 1500
static int unregister_msg(char *msg, size_t cap) {
    return snprintf(msg, cap, "{\"v\":1,\"t\":\"unregister\",\"pid\":%d%s}", (int)S.pid, S.tok);
}

static void unregister(void) {
    char msg[256], buf[FK_MAX_DATAGRAM + 1];
    int n = unregister_msg(msg, sizeof msg);
    uint64_t budget_end = mono_ns() + (uint64_t)FK_EXIT_BUDGET_MS * 1000000ull;
    for (int attempt = 0; attempt < S.retries && mono_ns() < budget_end; attempt++) {
        send_msg(msg, n);
        uint64_t end = mono_ns() + (uint64_t)S.timeout_ms * 1000000ull;
        if (end > budget_end) end = budget_end;
        for (uint64_t now = mono_ns(); now < end; now = mono_ns()) {
            struct pollfd p = {A.fd, POLLIN, 0};
            if (poll(&p, 1, (int)((end - now) / 1000000ull) + 1) <= 0) continue;
            ssize_t got = recv(A.fd, buf, sizeof buf, MSG_DONTWAIT);
            reply_t m;
            if (got > 0 && got <= FK_MAX_DATAGRAM && parse_reply(buf, (size_t)got, &m) &&
                !strcmp(m.t, "unregister_ack") && m.has_pid && m.pid == (long long)S.pid) {
                if (S.verbose) warn("exit: unregistered after %d send(s)", attempt + 1);
                return;
            }
        }
    }
    if (S.verbose) warn("exit: unregister not acknowledged");
}

static void *agent_main(void *arg) {
    (void)arg;
    if (S.networked) open_socket();
    while (!atomic_load(&S.stop)) {
        uint64_t now = mono_ns();
        if (A.fd >= 0) read_socket(now);
        take_queue();
        if (A.outstanding.n) poll_events(now);
        if (A.on_streams.n) poll_streams(now);
        if (A.fd >= 0) tick(now);
        agent_sleep(now);
    }
    take_queue();
    if (A.outstanding.n) poll_events(mono_ns());
    if (A.on_streams.n) poll_streams(mono_ns());
    if (A.have_prev) add_measured(&A.prev, prev_dur, 0.0);
    if (A.fd >= 0 && A.registered) {
        unregister();
    } else if (A.fd >= 0 && !A.refused) {
        /* A register was sent (open_socket sends one) but not acknowledged: the server may hold us all the same
         * (its answer late, or lost). One unregister, not awaited (a server that is gone must not delay the exit);
         * the server answers an unregister of a pid it does not know without complaint. */
        char msg[256];
        send_msg(msg, unregister_msg(msg, sizeof msg));
        if (S.verbose) warn("exit: not registered (no answer yet): unregister sent once, not awaited");
    } else if (S.verbose && S.networked) {
        warn("exit: %s: no unregister sent", A.fd >= 0 ? "registration refused" : "no socket");
    }
    return NULL;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* measure: the run as a kernel-gap trace (gpuweave.kernel.trace_format), written atomically. */
static void write_measure(void) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", S.measure_out, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        warn("cannot write FIKIT_MEASURE_OUT %s: %s", S.measure_out, strerror(errno));
        return;
    }
    fprintf(f, "{\"format\": \"gpuweave.kernel.trace\", \"version\": 1, \"name\": \"%s\", \"kernels\": [", S.task_key);
    for (size_t i = 0; i < A.m_n; i++) {
        fputs(i ? ",\n  {\"id\": " : "\n  {\"id\": ", f);
        json_str(f, A.measured[i].kid);
        fprintf(f, ", \"dur\": %.9g, \"gap_after\": %.9g}", A.measured[i].dur, A.measured[i].gap);
    }
    fputs("\n]}\n", f);
    if (fclose(f) != 0 || rename(tmp, S.measure_out) != 0) {
        warn("cannot write FIKIT_MEASURE_OUT %s: %s", S.measure_out, strerror(errno));
        unlink(tmp);
    } else if (S.verbose) {
        warn("measured %zu kernels -> %s", A.m_n, S.measure_out);
    }
}

/* ------------------------------------------------------------------ hooks: driver launches */
#define FK_DIMS(L, gx, gy, gz, bx, by, bz) \
    (L).g[0] = (gx), (L).g[1] = (gy), (L).g[2] = (gz), (L).b[0] = (bx), (L).b[1] = (by), (L).b[2] = (bz)

static CUresult gated_cuLaunchKernel(cuLaunchKernel_fn real, int ptsz, CUfunction f, unsigned gx, unsigned gy,
                                     unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                     void **params, void **extra) {
    fk_launch L = {.kind = K_FUNC, .handle = f, .stream = s, .ptsz = ptsz};
    fk_ticket T;
    FK_DIMS(L, gx, gy, gz, bx, by, bz);
    if (!real) return FK_ERR_UNKNOWN;
    if (!gate_enter(&L, &T)) return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    gate_exit(&T, r == FK_OK);
    return r;
}

static CUresult gated_cuLaunchCooperativeKernel(cuLaunchCooperativeKernel_fn real, int ptsz, CUfunction f,
                                                unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                                unsigned bz, unsigned shmem, CUstream s, void **params) {
    fk_launch L = {.kind = K_FUNC, .handle = f, .stream = s, .ptsz = ptsz};
    fk_ticket T;
    FK_DIMS(L, gx, gy, gz, bx, by, bz);
    if (!real) return FK_ERR_UNKNOWN;
    if (!gate_enter(&L, &T)) return real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
    gate_exit(&T, r == FK_OK);
    return r;
}

static CUresult gated_cuLaunchKernelEx(cuLaunchKernelEx_fn real, int ptsz, const fk_launch_config *c, CUfunction f,
                                       void **params, void **extra) {
    fk_launch L = {.kind = K_FUNC, .handle = f, .stream = c ? c->hStream : NULL, .ptsz = ptsz};
    fk_ticket T;
    if (!real) return FK_ERR_UNKNOWN;
    if (!c) return real(c, f, params, extra);
    FK_DIMS(L, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ);
    if (!gate_enter(&L, &T)) return real(c, f, params, extra);
    CUresult r = real(c, f, params, extra);
    gate_exit(&T, r == FK_OK);
    return r;
}

static CUresult gated_cuGraphLaunch(cuGraphLaunch_fn real, int ptsz, CUgraphExec g, CUstream s) {
    fk_launch L = {.kind = K_GRAPH, .handle = g, .stream = s, .ptsz = ptsz, .g = {1, 1, 1}, .b = {1, 1, 1}};
    fk_ticket T;
    if (!real) return FK_ERR_UNKNOWN;
    if (!gate_enter(&L, &T)) return real(g, s);
    CUresult r = real(g, s);
    gate_exit(&T, r == FK_OK);
    return r;
}

/* Trampolines: FK_SLOTS per function, each bound to one real pointer handed out by the driver. */
#define FK_TRAMP(NAME, I, RET, PARAMS, ...)                                                                     \
    static RET NAME##_t##I PARAMS {                                                                             \
        return gated_##NAME((NAME##_fn)atomic_load(&NAME##_slot[I]), atomic_load(&NAME##_slotptsz[I]), __VA_ARGS__); \
    }
#define FK_TRAMPS(NAME, RET, PARAMS, ...)                               \
    static _Atomic(void *) NAME##_slot[FK_SLOTS];                       \
    static _Atomic int NAME##_slotptsz[FK_SLOTS];                           \
    FK_TRAMP(NAME, 0, RET, PARAMS, __VA_ARGS__)                         \
    FK_TRAMP(NAME, 1, RET, PARAMS, __VA_ARGS__)                         \
    FK_TRAMP(NAME, 2, RET, PARAMS, __VA_ARGS__)                         \
    FK_TRAMP(NAME, 3, RET, PARAMS, __VA_ARGS__)                         \
    static void *const NAME##_tramp[FK_SLOTS] = {(void *)NAME##_t0, (void *)NAME##_t1, (void *)NAME##_t2, \
                                                 (void *)NAME##_t3};

#define FK_LAUNCH_PARAMS                                                                                        \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, \
     CUstream s, void **params, void **extra)
#define FK_COOP_PARAMS                                                                                          \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, \
     CUstream s, void **params)

FK_TRAMPS(cuLaunchKernel, CUresult, FK_LAUNCH_PARAMS, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
FK_TRAMPS(cuLaunchCooperativeKernel, CUresult, FK_COOP_PARAMS, f, gx, gy, gz, bx, by, bz, shmem, s, params)
FK_TRAMPS(cuLaunchKernelEx, CUresult, (const fk_launch_config *c, CUfunction f, void **params, void **extra), c, f,
          params, extra)
FK_TRAMPS(cuGraphLaunch, CUresult, (CUgraphExec g, CUstream s), g, s)

/* Exported for direct callers (programs linked against libcuda); the real function is the next one. */
#define FK_DIRECT(NAME, SYM, PTSZ, PARAMS, ...)                                                            \
    FK_EXPORT CUresult SYM PARAMS {                                                                        \
        static _Atomic(void *) real;                                                                       \
        void *p = atomic_load(&real);                                                                      \
        if (!p) atomic_store(&real, p = lib_lookup(DRIVER_LIBS, #SYM, (const void *)SYM));               \
        return gated_##NAME((NAME##_fn)p, PTSZ, __VA_ARGS__);                                              \
    }

FK_EXPORT CUresult cuLaunchKernel FK_LAUNCH_PARAMS;
FK_EXPORT CUresult cuLaunchKernel_ptsz FK_LAUNCH_PARAMS;
FK_EXPORT CUresult cuLaunchCooperativeKernel FK_COOP_PARAMS;
FK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz FK_COOP_PARAMS;
FK_EXPORT CUresult cuLaunchKernelEx(const fk_launch_config *c, CUfunction f, void **params, void **extra);
FK_EXPORT CUresult cuLaunchKernelEx_ptsz(const fk_launch_config *c, CUfunction f, void **params, void **extra);
FK_EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s);
FK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s);

FK_DIRECT(cuLaunchKernel, cuLaunchKernel, 0, FK_LAUNCH_PARAMS, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
FK_DIRECT(cuLaunchKernel, cuLaunchKernel_ptsz, 1, FK_LAUNCH_PARAMS, f, gx, gy, gz, bx, by, bz, shmem, s, params,
          extra)
FK_DIRECT(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 0, FK_COOP_PARAMS, f, gx, gy, gz, bx, by, bz, shmem,
          s, params)
FK_DIRECT(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, 1, FK_COOP_PARAMS, f, gx, gy, gz, bx, by, bz,
          shmem, s, params)
FK_DIRECT(cuLaunchKernelEx, cuLaunchKernelEx, 0, (const fk_launch_config *c, CUfunction f, void **params, void **extra),
          c, f, params, extra)
FK_DIRECT(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, 1,
          (const fk_launch_config *c, CUfunction f, void **params, void **extra), c, f, params, extra)
FK_DIRECT(cuGraphLaunch, cuGraphLaunch, 0, (CUgraphExec g, CUstream s), g, s)
FK_DIRECT(cuGraphLaunch, cuGraphLaunch_ptsz, 1, (CUgraphExec g, CUstream s), g, s)

typedef struct {
    const char *name;
    _Atomic(void *) *slot;
    _Atomic int *ptsz;
    void *const *tramp;
    const void *direct, *direct_ptsz;
} fk_hooked;

static const fk_hooked HOOKED[] = {
    {"cuLaunchKernel", cuLaunchKernel_slot, cuLaunchKernel_slotptsz, cuLaunchKernel_tramp, (const void *)cuLaunchKernel,
     (const void *)cuLaunchKernel_ptsz},
    {"cuLaunchKernelEx", cuLaunchKernelEx_slot, cuLaunchKernelEx_slotptsz, cuLaunchKernelEx_tramp,
     (const void *)cuLaunchKernelEx, (const void *)cuLaunchKernelEx_ptsz},
    {"cuLaunchCooperativeKernel", cuLaunchCooperativeKernel_slot, cuLaunchCooperativeKernel_slotptsz,
     cuLaunchCooperativeKernel_tramp, (const void *)cuLaunchCooperativeKernel,
     (const void *)cuLaunchCooperativeKernel_ptsz},
    {"cuGraphLaunch", cuGraphLaunch_slot, cuGraphLaunch_slotptsz, cuGraphLaunch_tramp, (const void *)cuGraphLaunch,
     (const void *)cuGraphLaunch_ptsz},
};

/* The gated stand-in for the real driver function `real` named sym (with or without "_ptsz"). */
static void *wrap_launch(const char *sym, void *real, int ptsz) {
    size_t n = strlen(sym);
    if (n > 5 && !strcmp(sym + n - 5, "_ptsz")) n -= 5, ptsz = 1;
    for (size_t h = 0; h < sizeof HOOKED / sizeof *HOOKED; h++) {
        const fk_hooked *k = &HOOKED[h];
        if (strlen(k->name) != n || strncmp(k->name, sym, n) != 0) continue;
        if (real == k->direct || real == k->direct_ptsz) return real;
        for (int i = 0; i < FK_SLOTS; i++) {
            if (real == k->tramp[i]) return real;
            void *cur = atomic_load(&k->slot[i]);
            if (cur == real) return k->tramp[i];
            if (!cur && atomic_compare_exchange_strong(&k->slot[i], &cur, real)) {
                atomic_store(&k->ptsz[i], ptsz);
                return k->tramp[i];
            }
            if (cur == real) return k->tramp[i];
        }
        warn("more than %d distinct %s entry points: this one is not gated", FK_SLOTS, k->name);
        return real;
    }
    return real;
}

/* ------------------------------------------------------------------ hooks: how libraries find the driver */
#define FK_GET_PROC_PER_THREAD 0x2 /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */

FK_EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags);
FK_EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status);
static _Atomic(void *) real_getproc_v1, real_getproc_v2;

/* What a lookup of sym (dlsym or cuGetProcAddress) returns: our gate, or the real pointer. */
static void *intercept(const char *sym, void *real, int ptsz, int v2_abi) {
    if (!real || !sym || strncmp(sym, "cu", 2) != 0) return real;
    if (!strcmp(sym, "cuGetProcAddress") || !strcmp(sym, "cuGetProcAddress_v2")) {
        void *ours = v2_abi ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
        if (real != (void *)cuGetProcAddress && real != (void *)cuGetProcAddress_v2)
            atomic_store(v2_abi ? &real_getproc_v2 : &real_getproc_v1, real);
        return ours;
    }
    return wrap_launch(sym, real, ptsz);
}

static void *real_getproc(_Atomic(void *) *slot, const char *sym, const void *self) {
    void *p = atomic_load(slot);
    if (!p) atomic_store(slot, p = lib_lookup(DRIVER_LIBS, sym, self));
    return p;
}

FK_EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status) {
    getproc_v2_fn real = (getproc_v2_fn)real_getproc(&real_getproc_v2, "cuGetProcAddress_v2",
                                                     (const void *)cuGetProcAddress_v2);
    if (!real) return FK_ERR_UNKNOWN;
    CUresult r = real(sym, pfn, version, flags, status);
    /* "cuGetProcAddress" asked for at CUDA >= 12.0 is the 5-argument (v2) entry point */
    if (r == FK_OK && pfn) *pfn = intercept(sym, *pfn, (flags & FK_GET_PROC_PER_THREAD) != 0, version >= 12000);
    return r;
}

FK_EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags) {
    getproc_v1_fn real = (getproc_v1_fn)real_getproc(&real_getproc_v1, "cuGetProcAddress",
                                                     (const void *)cuGetProcAddress);
    if (!real) return FK_ERR_UNKNOWN;
    CUresult r = real(sym, pfn, version, flags);
    if (r == FK_OK && pfn) *pfn = intercept(sym, *pfn, (flags & FK_GET_PROC_PER_THREAD) != 0, version >= 12000);
    return r;
}

/* dlsym: libraries that dlopen libcuda (cudart, cuBLAS, cuDNN, NCCL, Triton) find cuGetProcAddress here. */
FK_EXPORT void *dlsym(void *handle, const char *name) {
    void *p = handle == RTLD_NEXT ? next_after(__builtin_return_address(0), name) : rdlsym(handle, name);
    if (!p) return p;
    return intercept(name, p, 0, !strcmp(name, "cuGetProcAddress_v2"));
}

/* ------------------------------------------------------------------ hooks: runtime launches (shared libcudart) */
static cudaError_t rt_gate(void *real, int kind, const void *func, dim3 g, dim3 b, cudaStream_t s, int ptsz,
                           void **args, size_t shmem, const fk_rt_launch_config *cfg) {
    fk_launch L = {.kind = kind, .handle = func, .stream = s, .ptsz = ptsz};
    fk_ticket T;
    FK_DIMS(L, g.x, g.y, g.z, b.x, b.y, b.z);
    if (!real) return FK_ERR_UNKNOWN;
    int gated = gate_enter(&L, &T);
    cudaError_t r = cfg ? ((rt_launch_ex_fn)real)(cfg, func, args)
                        : ((rt_launch_fn)real)(func, g, b, args, shmem, s);
    if (gated) gate_exit(&T, r == FK_OK);
    return r;
}

#define FK_RT_LAUNCH(SYM, KIND, PTSZ)                                                                             \
    FK_EXPORT cudaError_t SYM(const void *f, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s);         \
    FK_EXPORT cudaError_t SYM(const void *f, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s) {        \
        static _Atomic(void *) real;                                                                              \
        void *p = atomic_load(&real);                                                                             \
        if (!p) atomic_store(&real, p = lib_lookup(RUNTIME_LIBS, #SYM, (const void *)SYM));                     \
        return rt_gate(p, KIND, f, g, b, s, PTSZ, args, shmem, NULL);                                             \
    }
#define FK_RT_LAUNCH_EX(SYM, PTSZ)                                                                                \
    FK_EXPORT cudaError_t SYM(const fk_rt_launch_config *c, const void *f, void **args);                          \
    FK_EXPORT cudaError_t SYM(const fk_rt_launch_config *c, const void *f, void **args) {                         \
        static _Atomic(void *) real;                                                                              \
        void *p = atomic_load(&real);                                                                             \
        if (!p) atomic_store(&real, p = lib_lookup(RUNTIME_LIBS, #SYM, (const void *)SYM));                     \
        if (!c) return p ? ((rt_launch_ex_fn)p)(c, f, args) : FK_ERR_UNKNOWN;                                     \
        return rt_gate(p, K_HOST, f, c->gridDim, c->blockDim, c->stream, PTSZ, args, 0, c);                       \
    }

FK_RT_LAUNCH(cudaLaunchKernel, K_HOST, 0)
FK_RT_LAUNCH(cudaLaunchKernel_ptsz, K_HOST, 1)
FK_RT_LAUNCH(__cudaLaunchKernel, K_FUNC, 0)      /* cudaKernel_t: a CUkernel, named by cuKernelGetName */
FK_RT_LAUNCH(__cudaLaunchKernel_ptsz, K_FUNC, 1)
FK_RT_LAUNCH_EX(cudaLaunchKernelExC, 0)
FK_RT_LAUNCH_EX(cudaLaunchKernelExC_ptsz, 1)

/* ------------------------------------------------------------------ fork and exit */
static void atfork_child(void) {
    /* only this thread exists now: whatever other threads held (stream, queue, cache locks) is reset */
    pthread_mutex_init(&S.q_mu, NULL);
    pthread_mutex_init(&S.start_mu, NULL);
    pthread_mutex_init(&S.ev_mu, NULL);
    pthread_mutex_init(&S.cache_mu, NULL);
    init_stream_locks();
    S.queue = (fk_vec){0};
    if (S.wake_fd >= 0) close(S.wake_fd);
    if (A.fd >= 0) close(A.fd);
    S.wake_fd = -1;
    A.fd = -1;
    A.registered = A.silent = A.have_prev = A.refused = 0;
    A.deadline_ns = A.next_probe_ns = 0;
    A.waiting = A.outstanding = A.on_streams = (fk_vec){0};
    pthread_mutex_init(&streams_mu, NULL);
    for (int k = 0; k < FK_STREAM_SLOTS; k++) atomic_store(&streams[k].used, 0); /* parent's events are gone */
    A.m_n = 0;
    ev_pool_n = 0; /* the parent's contexts are not usable in the child */
    atomic_store(&S.agent_running, 0);
    atomic_store(&S.agent_idle, 0);
    atomic_store(&S.open, 0);
    atomic_store(&S.fail_open, 0);
    atomic_store(&S.seq, 0);
    for (int i = 0; i < FK_GO_SLOTS; i++) atomic_store(&S.go_slot[i], 0);
    S.pid = getpid();
    cached_tid = 0;
}

__attribute__((constructor)) static void shim_init(void) {
    pthread_once(&streams_once, init_stream_locks);
    pthread_atfork(NULL, NULL, atfork_child);
}

__attribute__((destructor)) static void shim_fini(void) {
    if (!atomic_load(&S.agent_running) || S.pid != getpid()) return;
    atomic_store(&S.stop, 1);
    uint64_t one = 1;
    if (write(S.wake_fd, &one, sizeof one) < 0) { /* the agent also wakes on its own timeout */
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    if (pthread_timedjoin_np(S.agent, NULL, &ts) != 0) {
        /* The agent is stuck or starved (a loaded machine): the process exits without it, so tell the server here,
         * once, not awaited. Sending on the agent's socket from this thread is safe (one datagram per call); if
         * the agent unregisters after all, the server answers the second unregister as it did the first. */
        int fd = __atomic_load_n(&A.fd, __ATOMIC_ACQUIRE);
        char msg[256];
        int n = unregister_msg(msg, sizeof msg);
        if (fd >= 0 && n > 0 && n < (int)sizeof msg && send(fd, msg, (size_t)n, 0) < 0) { /* best effort */
        }
        if (S.verbose)
            warn("exit: the agent did not finish within 2 s (it stops with the process); unregister sent %s",
                 fd >= 0 ? "once from the exit handler" : "by nobody (no socket)");
        return;
    }
    atomic_store(&S.agent_running, 0);
    futex_wake_all(&S.go_gen);
    if (S.measure && S.measure_out[0]) write_measure();
}
