/* The UCX header the plugin binds (bindgen input, see build.rs). */
#include <ucp/api/ucp.h>
