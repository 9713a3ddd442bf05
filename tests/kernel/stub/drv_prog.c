/* Test program for the FIKIT shim: launches through every way a library reaches the driver.
 *
 * usage: drv_prog N T [bench|capture]   -- T threads, each launching N kernels on its own stream, then syncing
 * (capture: see capture() below).
 * Launch i of a thread uses function funcs[i % 3] with grid (1 + i % 4, 1, 1), block (64, 1, 1), through
 * entry point i % 7:
 *   0 cuLaunchKernel called directly (linked)       4 cuLaunchKernelEx from cuGetProcAddress_v2
 *   1 cuLaunchKernel from dlsym(libcuda)            5 cuLaunchCooperativeKernel from dlsym(libcuda)
 *   2 cuLaunchKernel from cuGetProcAddress_v2       6 cuGraphLaunch called directly (grid/block 1)
 *   3 cuLaunchKernel from cuGetProcAddress (v1, CUDA 11.0, per-thread default stream flag)
 * cuGetProcAddress_v2 and cuGetProcAddress are themselves found with dlsym. With "bench", every launch
 * goes through entry point 2 and the program prints "ns_per_launch=<mean>" (wall clock over all
 * threads' launches, divided by launches per thread). Prints "done <count>" last; exits 3 on a failed
 * call.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#undef cuGetProcAddress

typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void **);
typedef CUresult (*getproc_v2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_t)(const char *, void **, int, cuuint64_t);

static const char *names[3] = {"_Z10fk_saxpy_fPfS_f", "fk_plain_c", "_ZN2fk4tileILi4EEEvPi"};
static CUfunction funcs[3];
static launch_t by_dlsym, by_getproc, by_getproc_v1;
static launch_ex_t ex_by_getproc;
static coop_t coop_by_dlsym;
static CUgraphExec graph;
static int n_launch, bench, failures;

static CUresult launch(int path, int i, CUstream s) {
    CUfunction f = funcs[i % 3];
    unsigned gx = 1 + (unsigned)i % 4;
    CUlaunchConfig cfg = {gx, 1, 1, 64, 1, 1, 0, s, NULL, 0};
    switch (path) {
    case 0: return cuLaunchKernel(f, gx, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    case 1: return by_dlsym(f, gx, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    case 2: return by_getproc(f, gx, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    case 3: return by_getproc_v1(f, gx, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    case 4: return ex_by_getproc(&cfg, f, NULL, NULL);
    case 5: return coop_by_dlsym(f, gx, 1, 1, 64, 1, 1, 0, s, NULL);
    default: return cuGraphLaunch(graph, s);
    }
}

static void *worker(void *arg) {
    (void)arg;
    CUstream s;
    int bad = cuStreamCreate(&s, 0) != CUDA_SUCCESS;
    for (int i = 0; i < n_launch; i++) bad += launch(bench ? 2 : i % 7, i, s) != CUDA_SUCCESS;
    bad += cuStreamSynchronize(s) != CUDA_SUCCESS;
    __atomic_fetch_add(&failures, bad, __ATOMIC_RELAXED);
    return NULL;
}

static int resolve(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    getproc_v2_t gp2 = (getproc_v2_t)dlsym(h, "cuGetProcAddress_v2");
    getproc_v1_t gp1 = (getproc_v1_t)dlsym(h, "cuGetProcAddress");
    CUdriverProcAddressQueryResult st;
    by_dlsym = (launch_t)dlsym(h, "cuLaunchKernel");
    coop_by_dlsym = (coop_t)dlsym(h, "cuLaunchCooperativeKernel");
    return gp2 && gp1 && by_dlsym && coop_by_dlsym &&
           gp2("cuLaunchKernel", (void **)&by_getproc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
           gp2("cuLaunchKernelEx", (void **)&ex_by_getproc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
           gp1("cuLaunchKernel", (void **)&by_getproc_v1, 11000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
               CUDA_SUCCESS;
}

/* "capture": N launches on one stream (their completion events still outstanding), then a global-mode capture
 * of 3 launches on another stream while the shim's agent polls those events; exits 5 if the capture broke. */
static int capture(void) {
    CUstream s, c;
    CUgraph g;
    if (cuStreamCreate(&s, 0) != CUDA_SUCCESS || cuStreamCreate(&c, 0) != CUDA_SUCCESS) return 3;
    for (int i = 0; i < n_launch; i++) launch(0, i, s);
    if (cuStreamBeginCapture(c, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) return 3;
    for (int i = 0; i < 3; i++) launch(0, i, c);
    struct timespec pause = {0, 20 * 1000 * 1000}; /* the agent polls every 0.2 ms meanwhile */
    nanosleep(&pause, NULL);
    CUresult r = cuStreamEndCapture(c, &g);
    cuStreamSynchronize(s);
    printf("capture %s\n", r == CUDA_SUCCESS ? "ok" : "invalidated");
    printf("done %d\n", n_launch);
    return r == CUDA_SUCCESS ? 0 : 5;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    n_launch = atoi(argv[1]);
    int threads = atoi(argv[2]);
    bench = argc > 3 && !strcmp(argv[3], "bench");
    int capturing = argc > 3 && !strcmp(argv[3], "capture");
    if (n_launch < 0 || threads < 1 || threads > 64) return 2;
    if (cuInit(0) != CUDA_SUCCESS || !resolve()) return 4;
    for (int k = 0; k < 3; k++) cuModuleGetFunction(&funcs[k], NULL, names[k]);
    cuGraphInstantiateWithFlags(&graph, NULL, 0);
    if (capturing) return capture();
    pthread_t tids[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int t = 0; t < threads; t++) pthread_create(&tids[t], NULL, worker, NULL);
    for (int t = 0; t < threads; t++) pthread_join(tids[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (bench)
        printf("ns_per_launch=%.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n_launch);
    printf("done %d\n", n_launch * threads);
    return failures ? 3 : 0;
}
