// A stand-in for libcupti with the real C API (cupti.h's declarations and record structs), for
// running skillbase's CUPTI timer (skillbase/harness/cupti_timer.cpp) on a machine without a GPU.
// The test drives it through fake_* functions: API calls entering on this or another thread (the
// subscriber's callback fires with their correlation IDs), and the kernel / memset records the
// next cuptiActivityFlushAll hands to the client in a buffer the client's own callback provided.
#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

constexpr size_t SLOT = 512;   // each fake record takes one slot of the client's buffer

struct Pending {
    CUpti_ActivityKind kind;
    uint32_t correlation, stream;
    uint64_t start, end;
    const char* name;
};

CUpti_CallbackFunc g_callback = nullptr;
bool g_subscribed = false;
bool g_domains[8] = {};
bool g_kinds[64] = {};
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::vector<Pending> g_pending;
size_t g_dropped = 0;
CUptiResult g_subscribe_result = CUPTI_SUCCESS;
int g_flushes = 0;
std::mutex g_lock;

}  // namespace

extern "C" {

// -- what the test drives ------------------------------------------------------------------------

void fake_cupti_fail_subscribe(int result) { g_subscribe_result = (CUptiResult)result; }
CUptiResult g_unsubscribe_result = CUPTI_SUCCESS;
void fake_cupti_fail_unsubscribe(int result) { g_unsubscribe_result = (CUptiResult)result; }

int fake_cupti_flushes(void) { return g_flushes; }

int fake_cupti_enabled(int kind) { return g_kinds[kind] ? 1 : 0; }

void fake_cupti_api(int domain, uint32_t correlation) {
    if (!g_subscribed || !g_domains[domain]) return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.functionName = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cudaLaunchKernel" : "cuLaunchKernel";
    data.correlationId = correlation;
    data.callbackSite = CUPTI_API_ENTER;
    g_callback(nullptr, (CUpti_CallbackDomain)domain, 0, &data);
    data.callbackSite = CUPTI_API_EXIT;
    g_callback(nullptr, (CUpti_CallbackDomain)domain, 0, &data);
}

// One callback of an API call named `name` at `site` (CUPTI_API_ENTER 0, _EXIT 1): a runtime call and the
// driver calls it makes nest as ENTER runtime, ENTER/EXIT driver, EXIT runtime.
void fake_cupti_call(int domain, uint32_t correlation, const char* name, int site) {
    if (!g_subscribed || !g_domains[domain]) return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.functionName = name;
    data.correlationId = correlation;
    data.callbackSite = (CUpti_ApiCallbackSite)site;
    g_callback(nullptr, (CUpti_CallbackDomain)domain, 0, &data);
}

void fake_cupti_record(int kind, uint32_t correlation, uint32_t stream, uint64_t start, uint64_t end,
                       const char* name) {
    std::lock_guard<std::mutex> guard(g_lock);
    // Kernel names live as long as CUPTI's records say: keep a copy for the life of the process.
    char* kept = name ? strdup(name) : nullptr;
    g_pending.push_back({(CUpti_ActivityKind)kind, correlation, stream, start, end, kept});
}

void fake_cupti_drop(unsigned long long count) { g_dropped += count; }

// -- the CUPTI API the timer calls ----------------------------------------------------------------

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
    *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                                    : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void*) {
    if (g_subscribe_result != CUPTI_SUCCESS) return g_subscribe_result;
    if (g_subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    g_callback = callback;
    g_subscribed = true;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_callback);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
    if (g_unsubscribe_result != CUPTI_SUCCESS) return g_unsubscribe_result;
    g_subscribed = false;
    g_callback = nullptr;
    memset(g_domains, 0, sizeof g_domains);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
    g_domains[domain] = enable != 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
    if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
    g_request = request;
    g_complete = complete;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    g_kinds[kind] = true;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    g_kinds[kind] = false;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
    *dropped = g_dropped;
    g_dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    uint8_t* next = *record == nullptr ? buffer : reinterpret_cast<uint8_t*>(*record) + SLOT;
    if (next + SLOT > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(next);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
    std::vector<Pending> pending;
    {
        std::lock_guard<std::mutex> guard(g_lock);
        pending.swap(g_pending);
        ++g_flushes;
    }
    if (pending.empty() && g_dropped == 0) return CUPTI_SUCCESS;
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    g_request(&buffer, &size, &max_records);
    if (!buffer || size < pending.size() * SLOT) return CUPTI_ERROR_UNKNOWN;
    memset(buffer, 0, pending.size() * SLOT);
    for (size_t i = 0; i < pending.size(); ++i) {
        const Pending& p = pending[i];
        uint8_t* slot = buffer + i * SLOT;
        if (p.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || p.kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(slot);
            k->kind = p.kind;
            k->correlationId = p.correlation;
            k->streamId = p.stream;
            k->start = p.start;
            k->end = p.end;
            k->deviceId = 0;
            k->name = p.name;
        } else if (p.kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(slot);
            m->kind = p.kind;
            m->correlationId = p.correlation;
            m->streamId = p.stream;
            m->start = p.start;
            m->end = p.end;
        } else {
            auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(slot);
            m->kind = p.kind;
            m->correlationId = p.correlation;
            m->streamId = p.stream;
            m->start = p.start;
            m->end = p.end;
        }
    }
    g_complete(nullptr, 0, buffer, size, pending.size() * SLOT);
    return CUPTI_SUCCESS;
}

}  // extern "C"
