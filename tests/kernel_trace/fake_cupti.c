/* A stand-in libcupti for testing libkjudge_kernel_trace.so where no GPU exists: the four CUPTI
 * functions the recorder binds, plus fake_fire(), which calls the subscribed callback as the
 * driver or runtime would on a launch. Built by tests/python/harness/test_kernel_trace_lib.py. */
#include <stdint.h>
#include <string.h>

typedef void (*callback_t)(void*, int, uint32_t, const void*);

typedef struct {
  int callbackSite;
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;
  void* context;
  uint32_t contextUid;
  uint64_t* correlationData;
  uint32_t correlationId;
} CallbackData;

static callback_t g_callback;
static void* g_userdata;
static int g_subscribed;
static int g_subscribe_result;
static unsigned char g_enabled[3][1024];

int cuptiSubscribe(void** subscriber, callback_t callback, void* userdata) {
  if (g_subscribe_result) return g_subscribe_result;
  if (g_subscribed) return 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
  g_callback = callback;
  g_userdata = userdata;
  g_subscribed = 1;
  *subscriber = &g_subscribed;
  return 0;
}

int cuptiEnableCallback(uint32_t enable, void* subscriber, int domain, uint32_t cbid) {
  if (subscriber != &g_subscribed || domain < 1 || domain > 2 || cbid >= 1024) return 1;
  g_enabled[domain][cbid] = (unsigned char)enable;
  return 0;
}

int cuptiUnsubscribe(void* subscriber) {
  if (subscriber != &g_subscribed || !g_subscribed) return 1;
  g_subscribed = 0;
  memset(g_enabled, 0, sizeof g_enabled);
  return 0;
}

int cuptiGetResultString(int result, const char** text) {
  *text = result == 39 ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" : "FAKE_CUPTI_ERROR";
  return 0;
}

/* Test hooks. */
void fake_set_subscribe_result(int result) { g_subscribe_result = result; }

int fake_fire(int domain, uint32_t cbid, int site, const char* symbol, const void* params, uint64_t* corr) {
  if (!g_subscribed || domain < 1 || domain > 2 || cbid >= 1024 || !g_enabled[domain][cbid]) return 0;
  CallbackData d = {site, "fake", params, 0, symbol, 0, 0, corr, 0};
  g_callback(g_userdata, domain, cbid, &d);
  return 1;
}
