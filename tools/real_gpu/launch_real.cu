// A real CUDA program for checking the FIKIT shim on a real GPU (tools/real_gpu/check.py builds and runs it).
//
//   launch_real check R      -- R launches through each entry point below, then prints one JSON line of counts
//   launch_real bench N T    -- T threads, each N launches of an empty kernel (<<<>>>) on its own stream;
//                               prints {"ns_per_launch": wall / N} (per thread, threads overlapping)
//   launch_real idle S       -- one launch, then S seconds asleep (a registered client that launches nothing)
//
// Entry points of `check` (each R times):
//   chevron   saxpy<<<>>>                 (CUDA 13 nvcc: __cudaGetKernel + __cudaLaunchKernel; older: cudaLaunchKernel)
//   runtime   cudaLaunchKernel(plain)
//   ex        cudaLaunchKernelExC(tile<4>)
//   coop      cudaLaunchCooperativeKernel(plain)
//   driver    cuLaunchKernel on cudaGetFuncBySymbol(saxpy)   (the program links libcuda directly)
//   graph     cudaGraphLaunch of a captured graph of 3 kernels (gated once per launch, as one unit)
//   cublas    cublasSgemm 256x256 (cuBLAS reaches the driver through cuGetProcAddress; >= 1 kernel each)
// Built twice by check.py: with a shared libcudart (-cudart shared) and a static one (nvcc's default).
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(3);                                                                \
        }                                                                           \
    } while (0)

__global__ void saxpy(float a, float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void plain(int *p) { atomicAdd(p, 1); }
template <int K> __global__ void tile(int *p) { atomicAdd(p, K); }
__global__ void empty_kernel() {}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int check(int R) {
    const int n = 1 << 16;
    float *x, *y;
    int *p;
    cudaStream_t s;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMalloc(&p, sizeof(int)));
    CK(cudaMemset(x, 0, n * sizeof(float)));
    CK(cudaMemset(y, 0, n * sizeof(float)));
    CK(cudaStreamCreate(&s));
    float a = 2.0f;
    int nn = n;
    for (int i = 0; i < R; i++) saxpy<<<n / 256, 256, 0, s>>>(a, x, y, n);
    void *pargs[] = {&p};
    for (int i = 0; i < R; i++) CK(cudaLaunchKernel((void *)plain, dim3(2), dim3(32), pargs, 0, s));
    for (int i = 0; i < R; i++) {
        cudaLaunchConfig_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3(3);
        cfg.blockDim = dim3(64);
        cfg.stream = s;
        CK(cudaLaunchKernelExC(&cfg, (const void *)tile<4>, pargs));
    }
    for (int i = 0; i < R; i++) CK(cudaLaunchCooperativeKernel((void *)plain, dim3(1), dim3(32), pargs, 0, s));
    CUfunction f;
    CK(cudaGetFuncBySymbol(&f, (const void *)saxpy));
    void *sargs[] = {&a, &x, &y, &nn};
    for (int i = 0; i < R; i++) {
        CUresult r = cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, (CUstream)s, sargs, NULL);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "cuLaunchKernel: %d\n", (int)r);
            return 3;
        }
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    saxpy<<<n / 256, 256, 0, s>>>(a, x, y, n);
    plain<<<1, 32, 0, s>>>(p);
    tile<2><<<1, 32, 0, s>>>(p);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < R; i++) CK(cudaGraphLaunch(ge, s));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 3;
    cublasSetStream(h, s);
    float *A, *B, *C, one = 1.0f, zero = 0.0f;
    const int m = 256;
    CK(cudaMalloc(&A, m * m * sizeof(float)));
    CK(cudaMalloc(&B, m * m * sizeof(float)));
    CK(cudaMalloc(&C, m * m * sizeof(float)));
    CK(cudaMemset(A, 0, m * m * sizeof(float)));
    CK(cudaMemset(B, 0, m * m * sizeof(float)));
    for (int i = 0; i < R; i++)
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, A, m, B, m, &zero, C, m) != CUBLAS_STATUS_SUCCESS)
            return 3;
    CK(cudaStreamSynchronize(s));
    cublasDestroy(h);
    printf("{\"chevron\": %d, \"runtime\": %d, \"ex\": %d, \"coop\": %d, \"driver\": %d, \"graph\": %d, "
           "\"cublas_calls\": %d}\n",
           R, R, R, R, R, R, R);
    return 0;
}

struct bench_arg {
    int n;
};

static void *bench_thread(void *arg) {
    int n = ((struct bench_arg *)arg)->n;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < n; i++) empty_kernel<<<1, 32, 0, s>>>();
    CK(cudaStreamSynchronize(s));
    return NULL;
}

static int bench(int n, int threads) {
    CK(cudaFree(0));
    empty_kernel<<<1, 32>>>();  // warm up: module load, first launch
    CK(cudaDeviceSynchronize());
    pthread_t t[64];
    struct bench_arg a = {n};
    if (threads > 64) threads = 64;
    double t0 = now_s();
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, bench_thread, &a);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double dt = now_s() - t0;
    printf("{\"ns_per_launch\": %.1f, \"threads\": %d, \"launches_per_thread\": %d}\n", 1e9 * dt / n, threads, n);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "check")) return check(atoi(argv[2]));
    if (argc >= 4 && !strcmp(argv[1], "bench")) return bench(atoi(argv[2]), atoi(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "idle")) {
        empty_kernel<<<1, 32>>>();
        CK(cudaDeviceSynchronize());
        sleep(atoi(argv[2]));
        return 0;
    }
    fprintf(stderr, "usage: launch_real check R | bench N T | idle S\n");
    return 2;
}
