/* Test program for the FIKIT shim: launches "kernels" through cudaLaunchKernel (stub runtime).
 *
 * usage: launch_prog N [T]   -- T threads (default 1), each launching N kernels.
 * Thread t, launch i: function funcs[(t + i) % 3], grid (i+1, t+1, 1), block (32 * (1 + i % 4), 1, 1).
 * Two functions are exported (link with -rdynamic so dladdr names them; one has a mangled C++ name),
 * one is static (no dynamic symbol: the shim must fall back to "?0x<ptr>"). Prints "hidden=<ptr>"
 * first and "done <count>" last; exits 3 if a launch failed or an error is left in cudaGetLastError.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct { unsigned int x, y, z; } dim3;

extern cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t);
extern cudaError_t cudaGetLastError(void);

__attribute__((noinline)) void fk_alpha_kernel(float *x) { if (x) x[0] += 1.0f; }
__attribute__((noinline)) void _Z12fk_beta_tilePfS_i(float *a, float *b, int n) { if (a && b) a[n] = b[n]; }
__attribute__((noinline)) static void fk_hidden_kernel(int *x) { if (x) x[0]++; }

static const void *funcs[3] = {(const void *)fk_alpha_kernel, (const void *)_Z12fk_beta_tilePfS_i,
                               (const void *)fk_hidden_kernel};
static int n_launch, failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    int t = (int)(long)arg, bad = 0;
    for (int i = 0; i < n_launch; i++) {
        dim3 grid = {(unsigned)i + 1, (unsigned)t + 1, 1}, block = {32u * (1 + (unsigned)i % 4), 1, 1};
        void *args[1] = {0};
        if (cudaLaunchKernel(funcs[(t + i) % 3], grid, block, args, 0, 0) != 0) bad++;
    }
    pthread_mutex_lock(&mu);
    failures += bad;
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    n_launch = atoi(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (n_launch < 0 || n_launch > 100000 || threads < 1 || threads > 64) return 2;
    printf("hidden=%p\n", (void *)fk_hidden_kernel);
    fflush(stdout);
    pthread_t tids[64];
    if (threads == 1) worker((void *)0L);
    else {
        for (int t = 0; t < threads; t++) pthread_create(&tids[t], NULL, worker, (void *)(long)t);
        for (int t = 0; t < threads; t++) pthread_join(tids[t], NULL);
    }
    cudaError_t e = cudaGetLastError();
    printf("done %d\n", n_launch * threads);
    return failures || e ? 3 : 0;
}
