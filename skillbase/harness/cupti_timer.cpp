// skillbase's CUPTI timer: the device start/end of every kernel, memcpy and memset that a window of
// host calls issued, on any stream. Built once per machine by skillbase.harness.cupti (nvcc, linked
// against the toolkit's libcupti) and loaded with ctypes into the worker process.
//
// A *window* brackets host calls (a launcher call, the harness's hold kernel). While a window is
// open, a CUPTI callback on every runtime and driver API entry notes the call's correlation ID;
// CUPTI gives each API call a process-wide increasing ID, and every kernel/memcpy/memset record
// carries the ID of the call that issued it, so a record belongs to window w exactly when its ID lies
// in [first ID seen in w, last ID seen in w]. Calls from a thread other than the one that opened the
// window are counted too (a launcher may not start threads).
//
// The same callback counts the window's memory allocation and free calls by the API function's name
// (cudaMalloc*, cuMemAlloc*, cuMemCreate, pools, host and managed memory; the frees and releases
// apart): the verdict on a launcher that allocates, which the device's free memory cannot give on a
// GPU other processes share (a neighbour's free hides a leak). A runtime call and the driver calls it
// makes count once: while a runtime allocation or free runs on a thread, its driver calls are not
// counted again.
//
// C interface (every function returns 0 or a CUptiResult; skb_cupti_error() says which call failed):
//   skb_cupti_start()                      subscribe, enable the callbacks and the activity kinds
//   skb_cupti_open(&window) / _close()     one window (at most SKB_MAX_WINDOWS between two collects)
//   skb_cupti_collect(records, capacity, &count, windows, &window_count, &dropped)
//                                          flush CUPTI (the caller synchronised the device first),
//                                          copy the records out, forget them and the windows
//   skb_cupti_discard()                    flush and forget everything recorded so far
//   skb_cupti_record_size() / _window_size()   the structs' sizes, for the caller's layout check
//   skb_cupti_stop()                       disable everything and unsubscribe
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <vector>

#define SKB_MAX_WINDOWS 4096
#define SKB_NAME 64
#define SKB_BUFFER_BYTES (8u << 20)
#define SKB_ALIGN 8

extern "C" {

typedef struct {
    uint32_t kind;            // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL / _MEMCPY / _MEMSET
    uint32_t stream_id;
    uint32_t correlation_id;
    uint32_t device_id;
    uint64_t start_ns;
    uint64_t end_ns;
    char name[SKB_NAME];      // the kernel's (mangled) name, "memcpy" or "memset"
} skb_record;

typedef struct {
    uint32_t first_correlation;   // 0: no API call was seen in the window
    uint32_t last_correlation;
    uint32_t calls;               // runtime + driver API calls seen
    uint32_t foreign_calls;       // ... of them from another thread than the one that opened it
    uint32_t allocations;         // memory allocation API calls (a runtime call and its driver calls: one)
    uint32_t frees;               // memory free / release API calls, counted the same way
    char allocation_name[SKB_NAME];   // the first allocation call's function name, "" when none
} skb_window;

}  // extern "C"

namespace {

std::mutex g_records_lock;
std::vector<skb_record> g_records;
std::atomic<uint64_t> g_dropped{0};

std::atomic<int> g_current{-1};        // the open window, -1 when none
std::atomic<int> g_window_count{0};
pthread_t g_window_thread;
std::atomic<uint32_t> g_first[SKB_MAX_WINDOWS];
std::atomic<uint32_t> g_last[SKB_MAX_WINDOWS];
std::atomic<uint32_t> g_calls[SKB_MAX_WINDOWS];
std::atomic<uint32_t> g_foreign[SKB_MAX_WINDOWS];
std::atomic<uint32_t> g_allocs[SKB_MAX_WINDOWS];
std::atomic<uint32_t> g_frees[SKB_MAX_WINDOWS];
std::atomic<int> g_named[SKB_MAX_WINDOWS];   // 1 once a window's allocation_name is claimed
char g_alloc_name[SKB_MAX_WINDOWS][SKB_NAME];
thread_local int t_runtime_memory = 0;       // runtime allocations / frees running on this thread

CUpti_SubscriberHandle g_subscriber = nullptr;
bool g_started = false;
char g_error[512] = "";

const CUpti_ActivityKind KINDS[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                    CUPTI_ACTIVITY_KIND_MEMSET};

int fail(const char* call, CUptiResult result) {
    const char* text = nullptr;
    if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
    snprintf(g_error, sizeof g_error, "%s: %s (CUPTI error %d)", call, text, (int)result);
    return (int)result;
}

// Base names (without the _v2 / _v3020 / _ptsz suffixes CUPTI's function names carry), from
// cupti_driver_cbid.h and cupti_runtime_cbid.h. Registering host memory and reserving address
// space are not allocations of device memory; arrays, pools and graph allocation nodes are.
const char* const ALLOCATIONS[] = {
    "cuMemAlloc", "cu64MemAlloc", "cuMemAllocPitch", "cu64MemAllocPitch", "cuMemAllocHost", "cuMemHostAlloc",
    "cu64MemHostAlloc", "cuMemAllocManaged", "cuMemCreate", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
    "cuMemPoolCreate", "cuArrayCreate", "cuArray3DCreate", "cuMipmappedArrayCreate", "cuGraphAddMemAllocNode",
    "cudaMalloc", "cudaMallocPitch", "cudaMallocArray", "cudaMallocHost", "cudaHostAlloc", "cudaMalloc3D",
    "cudaMalloc3DArray", "cudaMallocMipmappedArray", "cudaMallocManaged", "cudaMallocAsync",
    "cudaMallocFromPoolAsync", "cudaMemPoolCreate", "cudaGraphAddMemAllocNode"};
const char* const FREES[] = {
    "cuMemFree", "cu64MemFree", "cuMemFreeHost", "cuMemRelease", "cuMemFreeAsync", "cuMemPoolDestroy",
    "cuArrayDestroy", "cuMipmappedArrayDestroy", "cudaFree", "cudaFreeArray", "cudaFreeHost",
    "cudaFreeMipmappedArray", "cudaFreeAsync", "cudaMemPoolDestroy"};

enum Memory { OTHER = 0, ALLOCATION = 1, FREE = 2 };

// The length of `name` without its version / per-thread-stream suffixes (_v2, _v3020, _ptsz).
size_t base_length(const char* name) {
    size_t n = strlen(name);
    for (;;) {
        size_t cut = n;
        while (cut > 0 && name[cut - 1] >= '0' && name[cut - 1] <= '9') --cut;
        if (cut < n && cut >= 2 && name[cut - 1] == 'v' && name[cut - 2] == '_') {
            n = cut - 2;
        } else if (n >= 5 && strncmp(name + n - 5, "_ptsz", 5) == 0) {
            n -= 5;
        } else {
            return n;
        }
    }
}

Memory classify(const char* name) {
    // Every name in the tables starts "cu" and holds "Mem", "lloc", "Free" or "Array": most API
    // calls (launches, syncs, queries) leave here without a table lookup.
    if (name == nullptr || name[0] != 'c' || name[1] != 'u') return OTHER;
    if (!strstr(name, "Mem") && !strstr(name, "lloc") && !strstr(name, "Free") && !strstr(name, "Array"))
        return OTHER;
    size_t n = base_length(name);
    for (const char* a : ALLOCATIONS)
        if (strlen(a) == n && strncmp(a, name, n) == 0) return ALLOCATION;
    for (const char* f : FREES)
        if (strlen(f) == n && strncmp(f, name, n) == 0) return FREE;
    return OTHER;
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData* info = static_cast<const CUpti_CallbackData*>(data);
    Memory memory = classify(info->functionName);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && memory != OTHER) {
        // Tracked in and out of windows: a runtime call entered before a window opened still
        // owns the driver calls it makes inside it.
        if (info->callbackSite == CUPTI_API_EXIT) {
            if (t_runtime_memory > 0) --t_runtime_memory;
            return;
        }
        ++t_runtime_memory;
    }
    if (info->callbackSite != CUPTI_API_ENTER) return;
    int w = g_current.load(std::memory_order_acquire);
    if (w < 0) return;
    g_calls[w].fetch_add(1);
    bool counted = memory != OTHER && (domain == CUPTI_CB_DOMAIN_RUNTIME_API || t_runtime_memory == 0);
    if (counted && memory == FREE) g_frees[w].fetch_add(1);
    if (counted && memory == ALLOCATION) {
        g_allocs[w].fetch_add(1);
        int unclaimed = 0;
        if (g_named[w].compare_exchange_strong(unclaimed, 1))
            strncpy(g_alloc_name[w], info->functionName, SKB_NAME - 1);
    }
    if (!pthread_equal(pthread_self(), g_window_thread)) g_foreign[w].fetch_add(1);
    // Calls that can issue no device work may carry no correlation ID (0): they bound nothing.
    uint32_t id = info->correlationId;
    if (id == 0) return;
    uint32_t seen = g_first[w].load();
    while ((seen == 0 || id < seen) && !g_first[w].compare_exchange_weak(seen, id)) {
    }
    seen = g_last[w].load();
    while (id > seen && !g_last[w].compare_exchange_weak(seen, id)) {
    }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    void* block = nullptr;
    if (posix_memalign(&block, SKB_ALIGN, SKB_BUFFER_BYTES) != 0) block = nullptr;
    *buffer = static_cast<uint8_t*>(block);
    *size = block ? SKB_BUFFER_BYTES : 0;
    *max_records = 0;
}

void keep(uint32_t kind, uint32_t stream, uint32_t correlation, uint32_t device, uint64_t start, uint64_t end,
          const char* name, std::vector<skb_record>& out) {
    skb_record r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.stream_id = stream;
    r.correlation_id = correlation;
    r.device_id = device;
    r.start_ns = start;
    r.end_ns = end;
    if (name) strncpy(r.name, name, SKB_NAME - 1);
    out.push_back(r);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    std::vector<skb_record> found;
    CUpti_Activity* record = nullptr;
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            case CUPTI_ACTIVITY_KIND_KERNEL: {
                const CUpti_ActivityKernel10* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
                keep(record->kind, k->streamId, k->correlationId, k->deviceId, k->start, k->end, k->name, found);
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMCPY: {
                const CUpti_ActivityMemcpy6* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
                keep(record->kind, m->streamId, m->correlationId, m->deviceId, m->start, m->end, "memcpy", found);
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMSET: {
                const CUpti_ActivityMemset4* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
                keep(record->kind, m->streamId, m->correlationId, m->deviceId, m->start, m->end, "memset", found);
                break;
            }
            default:
                break;
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped.fetch_add(dropped);
    free(buffer);
    std::lock_guard<std::mutex> guard(g_records_lock);
    g_records.insert(g_records.end(), found.begin(), found.end());
}

void clear_window(int w) {
    g_first[w] = 0;
    g_last[w] = 0;
    g_calls[w] = 0;
    g_foreign[w] = 0;
    g_allocs[w] = 0;
    g_frees[w] = 0;
    memset(g_alloc_name[w], 0, SKB_NAME);
    g_named[w] = 0;
}

void reset_windows() {
    int count = std::min(g_window_count.load(), SKB_MAX_WINDOWS);
    for (int w = 0; w < count; ++w) {
        clear_window(w);
    }
    g_window_count = 0;
}

}  // namespace

extern "C" {

const char* skb_cupti_error(void) { return g_error; }

int skb_cupti_record_size(void) { return (int)sizeof(skb_record); }

int skb_cupti_window_size(void) { return (int)sizeof(skb_window); }

int skb_cupti_start(void) {
    if (g_started) return 0;
    g_error[0] = 0;
    CUptiResult r = cuptiSubscribe(&g_subscriber, (CUpti_CallbackFunc)on_api, nullptr);
    // Another subscriber (ncu, nsys, a sanitizer) already attached: the caller falls back to events.
    if (r != CUPTI_SUCCESS) {
        g_subscriber = nullptr;
        return fail("cuptiSubscribe", r);
    }
    if ((r = cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API)) != CUPTI_SUCCESS ||
        (r = cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API)) != CUPTI_SUCCESS) {
        int code = fail("cuptiEnableDomain", r);
        cuptiUnsubscribe(g_subscriber);
        g_subscriber = nullptr;
        return code;
    }
    if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        int code = fail("cuptiActivityRegisterCallbacks", r);
        cuptiUnsubscribe(g_subscriber);
        g_subscriber = nullptr;
        return code;
    }
    for (CUpti_ActivityKind kind : KINDS) {
        if ((r = cuptiActivityEnable(kind)) != CUPTI_SUCCESS) {
            int code = fail("cuptiActivityEnable", r);
            for (CUpti_ActivityKind k : KINDS) cuptiActivityDisable(k);
            cuptiUnsubscribe(g_subscriber);
            g_subscriber = nullptr;
            return code;
        }
    }
    g_started = true;
    return 0;
}

int skb_cupti_open(int* window) {
    if (!g_started) {
        snprintf(g_error, sizeof g_error, "skb_cupti_open: the timer is not started");
        return -1;
    }
    if (g_current.load() >= 0) {
        snprintf(g_error, sizeof g_error, "skb_cupti_open: window %d is still open", g_current.load());
        return -1;
    }
    int w = g_window_count.load();
    if (w >= SKB_MAX_WINDOWS) {
        snprintf(g_error, sizeof g_error, "skb_cupti_open: more than %d windows without a collect", SKB_MAX_WINDOWS);
        return -1;
    }
    clear_window(w);
    g_window_thread = pthread_self();
    g_window_count = w + 1;
    *window = w;
    g_current.store(w, std::memory_order_release);
    return 0;
}

int skb_cupti_close(void) {
    if (g_current.load() < 0) {
        snprintf(g_error, sizeof g_error, "skb_cupti_close: no window is open");
        return -1;
    }
    g_current.store(-1, std::memory_order_release);
    return 0;
}

int skb_cupti_collect(skb_record* records, int capacity, int* count, skb_window* windows, int* window_count,
                      unsigned long long* dropped) {
    if (!g_started) {
        snprintf(g_error, sizeof g_error, "skb_cupti_collect: the timer is not started");
        return -1;
    }
    if (g_current.load() >= 0) {
        snprintf(g_error, sizeof g_error, "skb_cupti_collect: window %d is still open", g_current.load());
        return -1;
    }
    // Forced: also the buffers CUPTI still fills. The caller synchronised the device, so every
    // record in them is complete; a record without timestamps is passed on for the caller to see.
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityFlushAll", r);
    int n = 0;
    {
        std::lock_guard<std::mutex> guard(g_records_lock);
        n = (int)g_records.size();
        if (n > capacity) {
            snprintf(g_error, sizeof g_error, "skb_cupti_collect: %d records, room for %d", n, capacity);
            g_records.clear();
            reset_windows();
            return -2;
        }
        if (n) memcpy(records, g_records.data(), n * sizeof(skb_record));
        g_records.clear();
    }
    int w = std::min(g_window_count.load(), SKB_MAX_WINDOWS);
    for (int i = 0; i < w; ++i) {
        windows[i].first_correlation = g_first[i].load();
        windows[i].last_correlation = g_last[i].load();
        windows[i].calls = g_calls[i].load();
        windows[i].foreign_calls = g_foreign[i].load();
        windows[i].allocations = g_allocs[i].load();
        windows[i].frees = g_frees[i].load();
        memcpy(windows[i].allocation_name, g_alloc_name[i], SKB_NAME);
        windows[i].allocation_name[SKB_NAME - 1] = 0;
    }
    reset_windows();
    *count = n;
    *window_count = w;
    *dropped = g_dropped.exchange(0);
    return 0;
}

int skb_cupti_discard(void) {
    if (!g_started) return 0;
    if (g_current.load() >= 0) {
        snprintf(g_error, sizeof g_error, "skb_cupti_discard: window %d is still open", g_current.load());
        return -1;
    }
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    {
        std::lock_guard<std::mutex> guard(g_records_lock);
        g_records.clear();
    }
    reset_windows();
    g_dropped = 0;
    return r == CUPTI_SUCCESS ? 0 : fail("cuptiActivityFlushAll", r);
}

int skb_cupti_stop(void) {
    if (!g_started) return 0;
    g_current = -1;
    for (CUpti_ActivityKind kind : KINDS) cuptiActivityDisable(kind);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CUptiResult r = cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
    g_started = false;
    {
        std::lock_guard<std::mutex> guard(g_records_lock);
        g_records.clear();
    }
    reset_windows();
    return r == CUPTI_SUCCESS ? 0 : fail("cuptiUnsubscribe", r);
}

}  // extern "C"
