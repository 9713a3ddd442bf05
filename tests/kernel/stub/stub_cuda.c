/* A stand-in libcuda.so.1 for testing the FIKIT shim without a GPU (spec §4.5), with the real driver
 * signatures (it includes the CUDA toolkit's cuda.h, so a signature that drifts fails to compile).
 *
 * A "device" with a virtual clock: a kernel of function f with grid (gx,..) and block (bx,..) runs for
 * STUB_MS_PER_BLOCK (default 2) ms x gx on its stream, starting when both the stream is free and the
 * host has launched it (CLOCK_MONOTONIC); events take the stream's time when recorded, are complete
 * once the host clock passes it, and cuEventElapsedTime subtracts. Every launch is appended to $STUB_LOG
 * (one write(2), O_APPEND) as "<api> <name> g<x>,<y>,<z> b<x>,<y>,<z> t<host ns>"; graphs are named
 * "graph". cuFuncGetName returns the name given to cuModuleGetFunction (mangled), unless
 * STUB_NO_FUNCNAME=1. STUB_LAUNCH_US=n makes every launch call take n microseconds of host time;
 * STUB_QUERY_MS=n makes every cuEventQuery take n milliseconds (the shim's agent, which polls events, stuck).
 * cuStreamIsCapturing reports "active" for streams made with flags 0x40 (a test convention standing for a stream
 * under capture) and for a stream between cuStreamBeginCapture_v2 and cuStreamEndCapture. cuGetProcAddress(_v2)
 * returns the stub's own entry points (the _ptsz one with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), like the
 * real driver.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#undef cuGetProcAddress
#define STUB_CAPTURING_FLAG 0x40

struct CUfunc_st { char name[256]; };
struct CUstream_st { double free_ms; unsigned flags; };
struct CUevent_st { double t_ms; };
struct CUgraphExec_st { int id; };
struct CUctx_st { int id; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st legacy_stream, per_thread_stream;
static struct CUctx_st primary_ctx;
static __thread CUcontext current;

static double host_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct CUstream_st *stream_of(CUstream s) {
    if (s == NULL || s == CU_STREAM_LEGACY) return &legacy_stream;
    if (s == CU_STREAM_PER_THREAD) return &per_thread_stream;
    return s;
}

static void log_launch(const char *api, const char *name, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz) {
    const char *path = getenv("STUB_LOG");
    if (!path) return;
    char line[512];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int n = snprintf(line, sizeof line, "%s %s g%u,%u,%u b%u,%u,%u t%" PRIu64 "\n", api, name, gx, gy, gz, bx, by, bz,
                     (uint64_t)((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n) abort();
        close(fd);
    }
}

static CUresult run(const char *api, const char *name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, CUstream s) {
    const char *per = getenv("STUB_MS_PER_BLOCK"), *host_us = getenv("STUB_LAUNCH_US");
    if (host_us) usleep((useconds_t)atoi(host_us)); /* a slow host: launches spread over time */
    double ms = (per ? atof(per) : 2.0) * gx;
    pthread_mutex_lock(&mu);
    struct CUstream_st *st = stream_of(s);
    double now = host_ms();
    st->free_ms = (st->free_ms > now ? st->free_ms : now) + ms;
    pthread_mutex_unlock(&mu);
    log_launch(api, name, gx, gy, gz, bx, by, bz);
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current ? current : &primary_ctx; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    (void)m;
    struct CUfunc_st *fn = calloc(1, sizeof *fn);
    snprintf(fn->name, sizeof fn->name, "%s", name);
    *f = fn;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction f) {
    if (getenv("STUB_NO_FUNCNAME") || !f) return CUDA_ERROR_NOT_SUPPORTED;
    *name = f->name;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel k) { (void)name, (void)k; return CUDA_ERROR_INVALID_HANDLE; }

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra) {
    (void)shmem, (void)params, (void)extra;
    return run("cuLaunchKernel", f->name, gx, gy, gz, bx, by, bz, s);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
    (void)shmem, (void)params, (void)extra;
    return run("cuLaunchKernel_ptsz", f->name, gx, gy, gz, bx, by, bz, s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    (void)params, (void)extra;
    return run("cuLaunchKernelEx", f->name, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
               c->blockDimZ, c->hStream);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shmem, CUstream s, void **params) {
    (void)shmem, (void)params;
    return run("cuLaunchCooperativeKernel", f->name, gx, gy, gz, bx, by, bz, s);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
    static int n;
    (void)g, (void)flags;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    e->id = n++;
    *exec = e;
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec g, CUstream s) {
    (void)g;
    return run("cuGraphLaunch", "graph", 1, 1, 1, 1, 1, 1, s);
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    struct CUstream_st *st = calloc(1, sizeof *st);
    st->flags = flags;
    *s = st;
    return CUDA_SUCCESS;
}

/* Global-mode capture as the real driver polices it: while cuStreamBeginCapture_v2(s, GLOBAL) runs, a
 * "potentially unsafe" call (here cuEventQuery) from any thread that has not exchanged its capture mode to
 * RELAXED invalidates the capture, and cuStreamEndCapture fails (an H100 did this to a program under an
 * earlier shim whose agent polled events during the program's capture). */
static CUstream capture_stream;
static int capture_global, capture_invalid;
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    pthread_mutex_lock(&mu);
    capture_stream = s;
    capture_global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    capture_invalid = 0;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *graph) {
    pthread_mutex_lock(&mu);
    int bad = capture_invalid || capture_stream != s;
    capture_stream = NULL;
    pthread_mutex_unlock(&mu);
    *graph = NULL;
    return bad ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
    pthread_mutex_lock(&mu);
    int active = (stream_of(s)->flags & STUB_CAPTURING_FLAG) || (capture_stream && capture_stream == s);
    pthread_mutex_unlock(&mu);
    *status = active ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

static void sleep_until(double t_ms) {
    double left = t_ms - host_ms();
    if (left > 0) {
        struct timespec ts = {(time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6)};
        nanosleep(&ts, NULL);
    }
}

CUresult cuStreamSynchronize(CUstream s) {
    pthread_mutex_lock(&mu);
    double t = stream_of(s)->free_ms;
    pthread_mutex_unlock(&mu);
    sleep_until(t);
    return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
    cuStreamSynchronize(s);
    fn(data);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    (void)flags;
    *e = calloc(1, sizeof **e);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
    pthread_mutex_lock(&mu);
    struct CUstream_st *st = stream_of(s);
    double now = host_ms();
    e->t_ms = st->free_ms > now ? st->free_ms : now;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e) {
    const char *query_ms = getenv("STUB_QUERY_MS");
    if (query_ms) {
        long ms = atol(query_ms);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&mu);
    int unsafe = capture_stream && capture_global && thread_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    if (unsafe) capture_invalid = 1;
    pthread_mutex_unlock(&mu);
    if (unsafe) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return host_ms() >= e->t_ms ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult cuEventSynchronize(CUevent e) { sleep_until(e->t_ms); return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { *ms = (float)(b->t_ms - a->t_ms); return CUDA_SUCCESS; }
CUresult cuEventDestroy_v2(CUevent e) { free(e); return CUDA_SUCCESS; }

/* Entry points by name, as the driver's table: the stub's own exported functions. */
static CUresult lookup(const char *sym, void **pfn, int version, cuuint64_t flags) {
    char name[128];
    if (!strcmp(sym, "cuGetProcAddress") && version >= 12000) sym = "cuGetProcAddress_v2";
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && !strcmp(sym, "cuLaunchKernel");
    snprintf(name, sizeof name, "%s%s", sym, ptsz ? "_ptsz" : "");
    Dl_info self;
    dladdr((void *)lookup, &self);
    void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    *pfn = h ? dlsym(h, name) : NULL;
    if (h) dlclose(h);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags) {
    return lookup(sym, pfn, version, flags);
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    CUresult r = lookup(sym, pfn, version, flags);
    if (status) *status = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return r;
}
