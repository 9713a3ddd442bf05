/*
 * A stand-in libnvidia-ml.so.1 for the MIG executor's tests: NVML's real C signatures, struct layouts and error
 * codes (nvml.h of driver 580 / nvidia-ml-py 13.580), one GPU whose MIG state lives in memory.
 *
 * Loaded by the real pynvml wrappers through ctypes (CDLL("libnvidia-ml.so.1") found via LD_LIBRARY_PATH), so an
 * argument passed the wrong way (a struct by value where nvml.h takes a pointer) reaches this code exactly as it
 * would reach the driver: the placement pointer below is dereferenced, and a struct passed by value (its 8 bytes
 * arrive as the pointer value) faults.
 *
 * What it models, set by environment variables read at nvmlInitWithFlags:
 *   STUB_NVML_GPU       A100 (default, "NVIDIA A100-SXM4-40GB"), A30, H100 ("NVIDIA H100 80GB HBM3"),
 *                       H100NVL ("NVIDIA H100 NVL", H100 geometry), T4 (no MIG)
 *   STUB_NVML_NAME      the name nvmlDeviceGetName reports instead of the model's (a GPU the catalog lacks)
 *   STUB_NVML_MIG       0: MIG mode disabled (default 1)
 *   STUB_NVML_EXISTING  GPU instances that exist before the run, "constant@memstart,..." (e.g. "1@0,0@6");
 *                       each gets a full compute instance
 *   STUB_NVML_FAIL_CI   n: the n-th compute-instance create answers INSUFFICIENT_RESOURCES
 *   STUB_NVML_CI_IN_USE compute-instance destroy answers IN_USE this many times per instance first (default 1)
 *   STUB_NVML_GI_STUCK  1: every GPU-instance destroy answers UNKNOWN (instances survive)
 *   STUB_NVML_STALE     n: the n-th MIG device handle handed out is invalidated at once, as if its instance had
 *                       been destroyed by another thread mid-scan (later calls on it answer INVALID_ARGUMENT)
 *   STUB_NVML_NO_PERM   1: creating instances answers NO_PERMISSION
 *   STUB_NVML_LOG       file to append one line per state-changing call to, and "exit live_gi=G live_ci=C"
 *                       when the process ends; a call made after nvmlShutdown is logged as "after-shutdown NAME"
 *
 * Memory slices: a GPU instance occupies memory slices [start, start + size) of its placement; placements are
 * checked against the profile's allowed starts and size (INVALID_ARGUMENT) and against live instances
 * (INSUFFICIENT_RESOURCES). A GPU instance with a compute instance answers IN_USE on destroy. Handles are
 * pointers into fixed slot arrays; a destroyed instance's handle is invalid (INVALID_ARGUMENT) until the slot is
 * reused by a later create, as NVML handles may be.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_IN_USE = 19, NVML_ERROR_INSUFFICIENT_RESOURCES = 23, NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};
#define GI_PROFILE_INFO_V2 0x02000098u
#define CI_PROFILE_INFO_V2 0x02000088u
#define NAME_LEN 96
#define MAX_GI 8
#define MAX_PROFILES 5  /* NVML_GPU_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE = 0..4 */
#define MAX_STARTS 8

typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;
typedef struct { unsigned int start, size; } nvmlComputeInstancePlacement_t;
typedef struct nvmlDevice_st { int mig; int slot; } *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[NAME_LEN];
} nvmlGpuInstanceProfileInfo_v2_t;

typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
    char name[NAME_LEN];
} nvmlComputeInstanceProfileInfo_v2_t;

typedef struct {
    nvmlDevice_t device;
    unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id, profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct {
    int supported;
    unsigned int id, slices, mem_slices, nstarts, starts[MAX_STARTS];
} Profile;

typedef struct {
    const char *key, *name;
    int mig_capable;
    unsigned int mem_slices, max_mig;
    Profile profiles[MAX_PROFILES];
} Gpu;

/* `nvidia-smi mig -lgip` / `-lgipp` of each GPU: profile IDs, compute slices, memory slices, starts. */
static const Gpu GPUS[] = {
    {"A100", "NVIDIA A100-SXM4-40GB", 1, 8, 7,
     {{1, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}}, {1, 14, 2, 2, 3, {0, 2, 4}}, {1, 9, 3, 4, 2, {0, 4}},
      {1, 5, 4, 4, 1, {0}}, {1, 0, 7, 8, 1, {0}}}},
    {"H100", "NVIDIA H100 80GB HBM3", 1, 8, 7,
     {{1, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}}, {1, 14, 2, 2, 3, {0, 2, 4}}, {1, 9, 3, 4, 2, {0, 4}},
      {1, 5, 4, 4, 1, {0}}, {1, 0, 7, 8, 1, {0}}}},
    {"H100NVL", "NVIDIA H100 NVL", 1, 8, 7,
     {{1, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}}, {1, 14, 2, 2, 3, {0, 2, 4}}, {1, 9, 3, 4, 2, {0, 4}},
      {1, 5, 4, 4, 1, {0}}, {1, 0, 7, 8, 1, {0}}}},
    {"A30", "NVIDIA A30", 1, 4, 4,
     {{1, 14, 1, 1, 4, {0, 1, 2, 3}}, {1, 5, 2, 2, 2, {0, 2}}, {0}, {1, 0, 4, 4, 1, {0}}, {0}}},
    {"T4", "Tesla T4", 0, 0, 0, {{0}}},
};

struct nvmlGpuInstance_st {
    int live, profile, ci_live, ci_in_use_left;
    unsigned int id, start;
};
struct nvmlComputeInstance_st { int slot; };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const Gpu *gpu;
static const char *gpu_name;
static int initialized, ever_initialized, mig_mode = 1, fail_ci_at, ci_in_use = 1, gi_stuck, stale_at, no_perm;
static int ci_creates, mig_handles;
static struct nvmlDevice_st parent = {0, -1};
static struct nvmlDevice_st mig_dev[MAX_GI];
static struct nvmlGpuInstance_st gis[MAX_GI];
static struct nvmlComputeInstance_st cis[MAX_GI];
static FILE *logf;

static void note(const char *fmt, ...) {
    if (!logf) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(logf, fmt, ap);
    va_end(ap);
    fputc('\n', logf);
    fflush(logf);
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* Every entry point but init: refuse (and log) a call made while the library is not initialised. */
#define ENTER(fname)                                  \
    pthread_mutex_lock(&lock);                        \
    if (!initialized) {                               \
        if (ever_initialized) note("after-shutdown %s", fname); \
        pthread_mutex_unlock(&lock);                  \
        return NVML_ERROR_UNINITIALIZED;              \
    }
#define LEAVE(ret) do { pthread_mutex_unlock(&lock); return (ret); } while (0)

static int gi_slot(nvmlGpuInstance_t gi) {
    long i = gi - gis;
    return gi && i >= 0 && i < MAX_GI && gis[i].live ? (int)i : -1;
}

static int ci_slot(nvmlComputeInstance_t ci) {
    long i = ci - cis;
    return ci && i >= 0 && i < MAX_GI && gis[i].live && gis[i].ci_live ? (int)i : -1;
}

static const Profile *profile_by_id(unsigned int id, int *constant) {
    for (int p = 0; p < MAX_PROFILES; p++)
        if (gpu->profiles[p].supported && gpu->profiles[p].id == id) {
            if (constant) *constant = p;
            return &gpu->profiles[p];
        }
    return NULL;
}

static int overlaps(unsigned int start, unsigned int size) {
    for (int i = 0; i < MAX_GI; i++) {
        if (!gis[i].live) continue;
        const Profile *p = &gpu->profiles[gis[i].profile];
        if (start < gis[i].start + p->mem_slices && gis[i].start < start + size) return 1;
    }
    return 0;
}

static unsigned int free_gi_id(void) {
    for (unsigned int id = 1;; id++) {
        int used = 0;
        for (int i = 0; i < MAX_GI; i++) used |= gis[i].live && gis[i].id == id;
        if (!used) return id;
    }
}

/* Create a GPU instance of profile constant `p` at memory slice `start`; the caller holds the lock. */
static nvmlReturn_t create_gi(int p, unsigned int start, unsigned int size, int *slot_out) {
    const Profile *prof = &gpu->profiles[p];
    int ok = 0;
    for (unsigned int s = 0; s < prof->nstarts; s++) ok |= prof->starts[s] == start;
    if (!ok || size != prof->mem_slices) return NVML_ERROR_INVALID_ARGUMENT;
    if (overlaps(start, size)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    for (int i = 0; i < MAX_GI; i++)
        if (!gis[i].live) {
            gis[i] = (struct nvmlGpuInstance_st){1, p, 0, 0, free_gi_id(), start};
            *slot_out = i;
            return NVML_SUCCESS;
        }
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

static void add_existing(const char *spec) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int p, start, slot;
        if (sscanf(tok, "%d@%d", &p, &start) != 2 || p < 0 || p >= MAX_PROFILES) continue;
        if (create_gi(p, (unsigned int)start, gpu->profiles[p].mem_slices, &slot) == NVML_SUCCESS) {
            gis[slot].ci_live = 1;
            gis[slot].ci_in_use_left = ci_in_use;
            note("existing gi=%u", gis[slot].id);
        }
    }
}

static void at_exit(void) {
    int live_gi = 0, live_ci = 0;
    for (int i = 0; i < MAX_GI; i++) {
        live_gi += gis[i].live;
        live_ci += gis[i].live && gis[i].ci_live;
    }
    note("exit live_gi=%d live_ci=%d", live_gi, live_ci);
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    if (!ever_initialized) {
        const char *key = getenv("STUB_NVML_GPU"), *path = getenv("STUB_NVML_LOG");
        gpu = &GPUS[0];
        for (size_t g = 0; key && g < sizeof GPUS / sizeof GPUS[0]; g++)
            if (!strcmp(GPUS[g].key, key)) gpu = &GPUS[g];
        logf = path && *path ? fopen(path, "a") : NULL;
        gpu_name = getenv("STUB_NVML_NAME") && *getenv("STUB_NVML_NAME") ? getenv("STUB_NVML_NAME") : gpu->name;
        mig_mode = gpu->mig_capable && env_int("STUB_NVML_MIG", 1);
        fail_ci_at = env_int("STUB_NVML_FAIL_CI", 0);
        ci_in_use = env_int("STUB_NVML_CI_IN_USE", 1);
        gi_stuck = env_int("STUB_NVML_GI_STUCK", 0);
        stale_at = env_int("STUB_NVML_STALE", 0);
        no_perm = env_int("STUB_NVML_NO_PERM", 0);
        ever_initialized = 1;
        if (getenv("STUB_NVML_EXISTING") && mig_mode) add_existing(getenv("STUB_NVML_EXISTING"));
        atexit(at_exit);
    }
    initialized++;
    note("init");
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    ENTER("nvmlShutdown");
    initialized--;
    note("shutdown");
    LEAVE(NVML_SUCCESS);
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    ENTER("nvmlDeviceGetCount_v2");
    if (!count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *count = 1;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByIndex_v2");
    if (index != 0 || !device) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *device = &parent;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    ENTER("nvmlDeviceGetName");
    if (device != &parent || !name) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (length < strlen(gpu_name) + 1) LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
    strcpy(name, gpu_name);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
    ENTER("nvmlDeviceGetMigMode");
    if (device != &parent || !currentMode || !pendingMode) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!gpu->mig_capable) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *currentMode = *pendingMode = (unsigned int)mig_mode;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info) {
    ENTER("nvmlDeviceGetGpuInstanceProfileInfoV");
    if (device != &parent || !info) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (info->version != GI_PROFILE_INFO_V2) LEAVE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (!mig_mode) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    if (profile >= MAX_PROFILES || !gpu->profiles[profile].supported) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    const Profile *p = &gpu->profiles[profile];
    memset((char *)info + sizeof info->version, 0, sizeof *info - sizeof info->version);
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->nstarts;
    snprintf(info->name, NAME_LEN, "MIG %ug", p->slices);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count) {
    ENTER("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    const Profile *p = profile_by_id(profileId, NULL);
    if (device != &parent || !count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!p) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    if (placements) {
        if (*count < p->nstarts) LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
        for (unsigned int s = 0; s < p->nstarts; s++)
            placements[s] = (nvmlGpuInstancePlacement_t){p->starts[s], p->mem_slices};
    }
    *count = p->nstarts;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance) {
    ENTER("nvmlDeviceCreateGpuInstanceWithPlacement");
    int constant, slot;
    const Profile *p = profile_by_id(profileId, &constant);
    if (device != &parent || !gpuInstance || !placement || !p) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int start = placement->start, size = placement->size; /* the driver reads through the pointer */
    if (no_perm) LEAVE(NVML_ERROR_NO_PERMISSION);
    nvmlReturn_t ret = create_gi(constant, start, size, &slot);
    note("create-gi start=%u size=%u ret=%d", start, size, ret);
    if (ret == NVML_SUCCESS) {
        gis[slot].ci_in_use_left = ci_in_use;
        *gpuInstance = &gis[slot];
    }
    LEAVE(ret);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
    ENTER("nvmlGpuInstanceDestroy");
    int i = gi_slot(gpuInstance);
    if (i < 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (gis[i].ci_live) LEAVE(NVML_ERROR_IN_USE);
    if (gi_stuck) {
        note("destroy-gi id=%u ret=%d", gis[i].id, NVML_ERROR_UNKNOWN);
        LEAVE(NVML_ERROR_UNKNOWN);
    }
    gis[i].live = 0;
    mig_dev[i].slot = -1;
    note("destroy-gi id=%u ret=0", gis[i].id);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstances,
                                       unsigned int *count) {
    ENTER("nvmlDeviceGetGpuInstances");
    int constant;
    if (device != &parent || !count || !gpuInstances || !profile_by_id(profileId, &constant))
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int n = 0;
    for (int i = 0; i < MAX_GI; i++)
        if (gis[i].live && gis[i].profile == constant) {
            if (n >= *count) LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
            gpuInstances[n++] = &gis[i];
        }
    *count = n;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info) {
    ENTER("nvmlGpuInstanceGetInfo");
    int i = gi_slot(gpuInstance);
    if (i < 0 || !info) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    const Profile *p = &gpu->profiles[gis[i].profile];
    *info = (nvmlGpuInstanceInfo_t){&parent, gis[i].id, p->id, {gis[i].start, p->mem_slices}};
    LEAVE(NVML_SUCCESS);
}

/* Compute-instance profiles: constant c (0..4) = c-th of {1,2,3,4,7} slices, its ID equal to the constant. */
static const unsigned int CI_SLICES[MAX_PROFILES] = {1, 2, 3, 4, 7};

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                           unsigned int engProfile,
                                                           nvmlComputeInstanceProfileInfo_v2_t *info) {
    ENTER("nvmlGpuInstanceGetComputeInstanceProfileInfoV");
    int i = gi_slot(gpuInstance);
    if (i < 0 || !info || engProfile != 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (info->version != CI_PROFILE_INFO_V2) LEAVE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (profile >= MAX_PROFILES || CI_SLICES[profile] > gpu->profiles[gis[i].profile].slices)
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    memset((char *)info + sizeof info->version, 0, sizeof *info - sizeof info->version);
    info->id = profile;
    info->sliceCount = CI_SLICES[profile];
    info->instanceCount = gpu->profiles[gis[i].profile].slices / CI_SLICES[profile];
    snprintf(info->name, NAME_LEN, "MIG %uc", CI_SLICES[profile]);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance) {
    ENTER("nvmlGpuInstanceCreateComputeInstance");
    int i = gi_slot(gpuInstance);
    if (i < 0 || !computeInstance || profileId >= MAX_PROFILES) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (CI_SLICES[profileId] > gpu->profiles[gis[i].profile].slices) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    ci_creates++;
    if (gis[i].ci_live || ci_creates == fail_ci_at) {
        note("create-ci gi=%u ret=%d", gis[i].id, NVML_ERROR_INSUFFICIENT_RESOURCES);
        LEAVE(NVML_ERROR_INSUFFICIENT_RESOURCES);
    }
    gis[i].ci_live = 1;
    cis[i].slot = i;
    *computeInstance = &cis[i];
    note("create-ci gi=%u ret=0", gis[i].id);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
    ENTER("nvmlComputeInstanceDestroy");
    int i = ci_slot(computeInstance);
    if (i < 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (gis[i].ci_in_use_left > 0) {
        gis[i].ci_in_use_left--;
        note("destroy-ci gi=%u ret=%d", gis[i].id, NVML_ERROR_IN_USE);
        LEAVE(NVML_ERROR_IN_USE);
    }
    gis[i].ci_live = 0;
    note("destroy-ci gi=%u ret=0", gis[i].id);
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances, unsigned int *count) {
    ENTER("nvmlGpuInstanceGetComputeInstances");
    int i = gi_slot(gpuInstance);
    if (i < 0 || !count || !computeInstances || profileId >= MAX_PROFILES) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int full = 0;
    while (full + 1 < MAX_PROFILES && CI_SLICES[full + 1] <= gpu->profiles[gis[i].profile].slices) full++;
    unsigned int n = 0;
    if (gis[i].ci_live && profileId == full) {  /* existing compute instances are full ones */
        if (*count < 1) LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
        cis[i].slot = i;
        computeInstances[n++] = &cis[i];
    }
    *count = n;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info) {
    ENTER("nvmlComputeInstanceGetInfo_v2");
    int i = ci_slot(computeInstance);
    if (i < 0 || !info) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *info = (nvmlComputeInstanceInfo_t){&parent, &gis[i], 0, 0, {0, gpu->profiles[gis[i].profile].slices}};
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    ENTER("nvmlDeviceGetMaxMigDeviceCount");
    if (device != &parent || !count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *count = gpu->max_mig;
    LEAVE(NVML_SUCCESS);
}

/* The index-th MIG device (a live compute instance, slot order): indices shift when instances go away. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice) {
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex");
    if (device != &parent || !migDevice || index >= gpu->max_mig) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int n = 0;
    for (int i = 0; i < MAX_GI; i++) {
        if (!(gis[i].live && gis[i].ci_live) || n++ != index) continue;
        mig_dev[i] = (struct nvmlDevice_st){1, i};
        *migDevice = &mig_dev[i];
        if (++mig_handles == stale_at) {
            mig_dev[i].slot = -1;
            note("stale mig handle index=%u", index);
        }
        LEAVE(NVML_SUCCESS);
    }
    LEAVE(NVML_ERROR_NOT_FOUND);
}

static int mig_slot(nvmlDevice_t device) {
    long i = device - mig_dev;
    if (!device || i < 0 || i >= MAX_GI || !device->mig) return -1;
    int s = device->slot;
    return s >= 0 && gis[s].live && gis[s].ci_live ? s : -1;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    ENTER("nvmlDeviceGetGpuInstanceId");
    if (device == &parent) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    int i = mig_slot(device);
    if (i < 0 || !id) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *id = gis[i].id;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    ENTER("nvmlDeviceGetComputeInstanceId");
    if (device == &parent) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    int i = mig_slot(device);
    if (i < 0 || !id) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *id = 0;
    LEAVE(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    ENTER("nvmlDeviceGetUUID");
    if (!uuid) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (device == &parent) {
        snprintf(uuid, length, "GPU-stub-0000");
        LEAVE(NVML_SUCCESS);
    }
    int i = mig_slot(device);
    if (i < 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    snprintf(uuid, length, "MIG-stub-gi%u-s%u", gis[i].id, gis[i].start);
    LEAVE(NVML_SUCCESS);
}
