// Counts a process's CUDA driver API calls and the wall time spent in them, per function, through
// CUPTI's driver-API callbacks; loaded by the driver itself at cuInit (CUDA_INJECTION64_PATH), so
// the process needs no change. Every KJDC_PERIOD_MS (default 500) and at exit it writes
// $KJDC_DIR/<KJDC_ROLE>-<pid>.json: {"pid", "role", "t" (unix s), "calls": {name: [count, ns]}},
// cumulative since cuInit; a reader takes the difference of two snapshots.
// libcupti is opened at run time (KJDC_CUPTI, else libcupti.so.13 / libcupti.so on the loader's
// path), so one build serves any install of it.
// Build: bench/driver_calls/build (gcc, CUPTI's headers).
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCB CUPTI_DRIVER_TRACE_CBID_SIZE

static uint64_t counts[NCB], nanos[NCB];
static char out_path[4096], tmp_path[4200];
static int period_ms = 500;
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

typedef CUptiResult (*subscribe_t)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
typedef CUptiResult (*enable_domain_t)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
typedef CUptiResult (*callback_name_t)(CUpti_CallbackDomain, uint32_t, const char**);
static callback_name_t callback_name;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI on_call(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  (void)userdata;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= NCB) return;
  const CUpti_CallbackData* d = (const CUpti_CallbackData*)data;
  if (d->callbackSite == CUPTI_API_ENTER) {
    *d->correlationData = now_ns();
  } else {
    uint64_t spent = now_ns() - *d->correlationData;
    __atomic_fetch_add(&counts[cbid], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&nanos[cbid], spent, __ATOMIC_RELAXED);
  }
}

static void dump(void) {
  if (!out_path[0]) return;
  pthread_mutex_lock(&dump_lock);
  FILE* f = fopen(tmp_path, "w");
  if (f) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const char* role = getenv("KJDC_ROLE");
    fprintf(f, "{\"pid\": %d, \"role\": \"%s\", \"t\": %.3f, \"calls\": {", (int)getpid(), role ? role : "",
            ts.tv_sec + ts.tv_nsec / 1e9);
    int first = 1;
    for (int i = 0; i < NCB; ++i) {
      uint64_t c = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
      if (!c) continue;
      const char* name = NULL;
      if (!callback_name || callback_name(CUPTI_CB_DOMAIN_DRIVER_API, (uint32_t)i, &name) != CUPTI_SUCCESS || !name)
        name = NULL;
      if (name)
        fprintf(f, "%s\"%s\": [%llu, %llu]", first ? "" : ", ", name, (unsigned long long)c,
                (unsigned long long)__atomic_load_n(&nanos[i], __ATOMIC_RELAXED));
      else
        fprintf(f, "%s\"cbid_%d\": [%llu, %llu]", first ? "" : ", ", i, (unsigned long long)c,
                (unsigned long long)__atomic_load_n(&nanos[i], __ATOMIC_RELAXED));
      first = 0;
    }
    fprintf(f, "}}\n");
    if (fclose(f) == 0) rename(tmp_path, out_path);
  }
  pthread_mutex_unlock(&dump_lock);
}

static void* dumper(void* arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    dump();
  }
  return NULL;
}

static void* open_cupti(void) {
  const char* names[] = {getenv("KJDC_CUPTI"), "libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (!names[i] || !names[i][0]) continue;
    void* h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
  }
  return NULL;
}

int InitializeInjection(void) {
  static int done = 0;
  if (__atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST)) return 1;
  const char* dir = getenv("KJDC_DIR");
  const char* role = getenv("KJDC_ROLE");
  if (!dir) dir = "/tmp";
  snprintf(out_path, sizeof out_path, "%s/%s-%d.json", dir, role ? role : "proc", (int)getpid());
  snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
  if (getenv("KJDC_PERIOD_MS")) period_ms = atoi(getenv("KJDC_PERIOD_MS"));
  if (period_ms < 50) period_ms = 50;
  void* lib = open_cupti();
  if (!lib) {
    fprintf(stderr, "kjdc: no libcupti (%s): counting nothing\n", dlerror());
    return 1;
  }
  subscribe_t subscribe = (subscribe_t)dlsym(lib, "cuptiSubscribe");
  enable_domain_t enable_domain = (enable_domain_t)dlsym(lib, "cuptiEnableDomain");
  callback_name = (callback_name_t)dlsym(lib, "cuptiGetCallbackName");
  CUpti_SubscriberHandle sub;
  if (!subscribe || !enable_domain || subscribe(&sub, (CUpti_CallbackFunc)on_call, NULL) != CUPTI_SUCCESS ||
      enable_domain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    fprintf(stderr, "kjdc: CUPTI would not subscribe to the driver API: counting nothing\n");
    return 1;
  }
  atexit(dump);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_create(&t, &attr, dumper, NULL);
  pthread_attr_destroy(&attr);
  return 1;
}
