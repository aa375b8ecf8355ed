/* Plugins that must be refused or skipped, built by tools/tests/network.rs
 * with one of -DWRONG_ABI, -DMISSING_ENTRY, -DNO_DEVICE, against the C view
 * of the plugin ABI (plugin-api/include/tessel_plugin.h). */
#include <tessel_plugin.h>
#include <string.h>

static int open_no_device(const tessel_open_args *args, tessel_context **ctx, tessel_attr *attr,
                          char *err, size_t errlen) {
    (void)args; (void)ctx; (void)attr;
    strncpy(err, "no faulty device on this machine", errlen - 1);
    err[errlen - 1] = 0;
    return TESSEL_ERR_NO_DEVICE;
}
__attribute__((unused)) static int send_never(tessel_context *c, uint32_t p, const uint8_t *h, size_t hl,
                      const tessel_iov *v, size_t n, uint64_t k) {
    (void)c; (void)p; (void)h; (void)hl; (void)v; (void)n; (void)k;
    return TESSEL_ERR_TRANSPORT;
}
static int fetch_never(tessel_context *c, uint64_t t, const tessel_iov *v, size_t n, uint64_t k) {
    (void)c; (void)t; (void)v; (void)n; (void)k;
    return TESSEL_ERR_INVALID;
}
static void discard_none(tessel_context *c, uint64_t t) { (void)c; (void)t; }
static int progress_none(tessel_context *c, uint32_t b) { (void)c; (void)b; return 0; }
static void close_none(tessel_context *c) { (void)c; }

static const tessel_ops ops = {
    .struct_size = sizeof(tessel_ops),
    .open = open_no_device,
#ifndef MISSING_ENTRY
    .send = send_never,
#endif
    .fetch = fetch_never,
    .discard = discard_none,
    .progress = progress_none,
    .close = close_none,
};

static const tessel_descriptor descriptor = {
#ifdef WRONG_ABI
    .abi_major = TESSEL_PLUGIN_ABI_MAJOR + 1,
#else
    .abi_major = TESSEL_PLUGIN_ABI_MAJOR,
#endif
    .abi_minor = TESSEL_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(tessel_descriptor),
    .name = "faulty",
    .version = "test",
    .preference = 1000,
    .ops = &ops,
};

const tessel_descriptor *tessel_plugin_descriptor(void) { return &descriptor; }
