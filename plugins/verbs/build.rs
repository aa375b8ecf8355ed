//! Bindings to the system libibverbs (rdma-core): pkg-config finds and
//! links it, bindgen reads `<infiniband/verbs.h>`. Only the exported
//! functions and the types and constants the plugin uses are generated.
//! The data-path verbs (`ibv_post_send`, `ibv_post_recv`, `ibv_poll_cq`,
//! `ibv_req_notify_cq`) are `static inline` calls through
//! `context->ops`; `src/sys.rs` makes them through the generated
//! function-pointer fields.

include!("../build_common.rs");

fn main() {
    let lib = probe("libibverbs", "1.8", "libibverbs-dev");

    let builder = builder(&lib)
        .header_contents("tessel_verbs.h", "#include <infiniband/verbs.h>\n")
        .allowlist_function(
            "ibv_(get_device_list|free_device_list|get_device_name|open_device|close_device\
             |query_device|query_port|query_gid|alloc_pd|dealloc_pd|reg_mr|dereg_mr\
             |create_comp_channel|destroy_comp_channel|create_cq|destroy_cq|get_cq_event\
             |ack_cq_events|create_qp|modify_qp|destroy_qp|get_async_event|ack_async_event\
             |wc_status_str|port_state_str|event_type_str)",
        )
        .allowlist_function("_ibv_query_gid_ex")
        .allowlist_type(
            "ibv_(send_wr|recv_wr|sge|wc|qp_attr|qp_init_attr|port_attr|device_attr\
             |gid_entry|async_event|context_ops|context|device|comp_channel|cq|qp|pd|mr)",
        )
        .allowlist_var("IBV_.*")
        .allowlist_type(
            "ibv_(qp_state|qp_type|mtu|port_state|wc_status|wc_opcode|wr_opcode\
             |send_flags|access_flags|qp_attr_mask|event_type|gid_type|node_type)",
        );
    generate(builder, "<infiniband/verbs.h>", "verbs.rs");
}
