/* A stand-in libcudart for testing the FIKIT shim without a GPU (spec §4.5).
 *
 * Built by the tests as libcudart.so.12 (soname libcudart.so.12). cudaLaunchKernel appends one line
 * per call to $STUB_LOG with a single write(2) (O_APPEND, so lines from threads never interleave):
 *     "<name> g<x>,<y>,<z> b<x>,<y>,<z> t<CLOCK_MONOTONIC ns>\n"
 * where name is the dladdr symbol of the host function (or ?0x<ptr>). cudaFuncGetName fails with
 * error 98 and sets the last error, unless STUB_FUNCNAME=1: then it returns "rt_<symbol>"; with
 * STUB_FUNCNAME=odd it returns, for fk_alpha_kernel only, an over-long name with '|', '"' and
 * non-ASCII bytes (the shim must sanitise and shorten it). The last-error functions mimic the
 * runtime's (get resets, peek does not).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct { unsigned int x, y, z; } dim3;

static __thread cudaError_t last_error;

cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = 0; return e; }
cudaError_t cudaPeekAtLastError(void) { return last_error; }

static const char *symbol(const void *func) {
    Dl_info info;
    if (dladdr(func, &info) && info.dli_sname && info.dli_saddr == func) return info.dli_sname;
    return NULL;
}

cudaError_t cudaFuncGetName(const char **name, const void *func) {
    static char names[64][256];
    static char odd[2048];
    static int used;
    const char *s = symbol(func);
    const char *on = getenv("STUB_FUNCNAME");
    if (on && !strcmp(on, "odd") && s && !strcmp(s, "fk_alpha_kernel")) {
        snprintf(odd, sizeof odd, "odd|na\"me\xc3\xa9_");
        size_t n = strlen(odd);
        memset(odd + n, 'x', 1500);
        odd[n + 1500] = 0;
        *name = odd;
        return 0;
    }
    if (!on || strcmp(on, "1") != 0 || !s || used >= 64) {
        last_error = 98; /* cudaErrorInvalidDeviceFunction */
        return 98;
    }
    snprintf(names[used], sizeof names[used], "rt_%s", s);
    *name = names[used++];
    return 0;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream) {
    (void)args, (void)shmem, (void)stream;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char line[512], name[64];
    const char *s = symbol(func);
    if (!s) {
        snprintf(name, sizeof name, "?0x%" PRIxPTR, (uintptr_t)func);
        s = name;
    }
    int n = snprintf(line, sizeof line, "%s g%u,%u,%u b%u,%u,%u t%" PRIu64 "\n", s, grid.x, grid.y, grid.z, block.x,
                     block.y, block.z, (uint64_t)((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec));
    const char *path = getenv("STUB_LOG");
    if (path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) return 999;
        ssize_t w = write(fd, line, (size_t)n);
        close(fd);
        if (w != n) return 999;
    }
    return 0;
}
