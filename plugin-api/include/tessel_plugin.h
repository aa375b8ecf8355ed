/* Tessel network plugin ABI, version 1.0: the C view of plugin-api/src/lib.rs
 * (which documents every field and rule). A plugin is a shared object named
 * libtessel_plugin_NAME.so exporting tessel_plugin_descriptor(). */
#ifndef TESSEL_PLUGIN_H
#define TESSEL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define TESSEL_PLUGIN_ABI_MAJOR 1
#define TESSEL_PLUGIN_ABI_MINOR 0

enum {
    TESSEL_OK = 0,
    TESSEL_IN_PROGRESS = 1,
    TESSEL_ERR_AGAIN = -1,
    TESSEL_ERR_NO_DEVICE = -2,
    TESSEL_ERR_UNREACHABLE = -3,
    TESSEL_ERR_INVALID = -4,
    TESSEL_ERR_PEER_FAILED = -5,
    TESSEL_ERR_TRANSPORT = -6,
    TESSEL_ERR_CANCELLED = -7,
};

#define TESSEL_ATTR_WAKE_FD 1u
#define TESSEL_ATTR_RMA_READ 2u
#define TESSEL_ARRIVED_DATA 1u
#define TESSEL_ARRIVED_TOKEN 2u

typedef struct tessel_context tessel_context;

typedef struct tessel_iov {
    void *base;
    size_t len;
} tessel_iov;

typedef struct tessel_attr {
    uint32_t struct_size;
    uint32_t flags;
    uint64_t max_header, inline_max, eager_max, max_message;
    uint64_t latency_ns, bandwidth_mbs;
    char device[64];
} tessel_attr;

typedef struct tessel_callbacks {
    uint32_t struct_size, reserved;
    void *engine;
    int (*put)(void *engine, const char *key, const uint8_t *value, size_t len);
    int (*get)(void *engine, const char *key, uint8_t *buf, size_t cap, size_t *len);
    void (*arrived)(void *engine, uint32_t peer, const uint8_t *header, size_t header_len,
                    const uint8_t *data, size_t len, uint64_t token, uint32_t flags);
    void (*completed)(void *engine, uint64_t cookie, int status);
    void (*failed)(void *engine, uint32_t peer, int status, const char *message);
} tessel_callbacks;

typedef struct tessel_open_args {
    uint32_t struct_size, rank, size, reserved;
    const tessel_callbacks *callbacks;
} tessel_open_args;

typedef struct tessel_ops {
    uint32_t struct_size, reserved;
    /* required */
    int (*open)(const tessel_open_args *args, tessel_context **ctx, tessel_attr *attr,
                char *err, size_t errlen);
    int (*send)(tessel_context *ctx, uint32_t peer, const uint8_t *header, size_t header_len,
                const tessel_iov *iov, size_t iov_count, uint64_t cookie);
    int (*fetch)(tessel_context *ctx, uint64_t token, const tessel_iov *iov, size_t iov_count,
                 uint64_t cookie);
    void (*discard)(tessel_context *ctx, uint64_t token);
    int (*progress)(tessel_context *ctx, uint32_t budget);
    void (*close)(tessel_context *ctx);
    /* optional (ABI 1.0) */
    int (*wake_fd)(tessel_context *ctx);
    int (*arm)(tessel_context *ctx);
} tessel_ops;

typedef struct tessel_descriptor {
    uint32_t abi_major, abi_minor, struct_size, reserved;
    const char *name;
    const char *version;
    uint32_t preference, reserved2;
    const tessel_ops *ops;
} tessel_descriptor;

const tessel_descriptor *tessel_plugin_descriptor(void);

#endif
