//! Bindings to the system UCX (UCP): pkg-config finds and links it, bindgen
//! reads `<ucp/api/ucp.h>`. Only the functions, types and constants the
//! plugin uses are generated. UCX's version (from its pkg-config file, the
//! same text `ucp_get_version_string` returns for that build) becomes
//! `TESSEL_UCX_VERSION` for the descriptor.

include!("../build_common.rs");

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    let lib = probe("ucx", "1.12", "libucx-dev");
    println!("cargo:rustc-env=TESSEL_UCX_VERSION={}", lib.version);

    let builder = builder(&lib)
        .header("wrapper.h")
        .allowlist_function(
            "ucp_(init_version|cleanup|context_print_info|worker_create|worker_destroy\
             |worker_query|worker_release_address|worker_progress|worker_get_efd\
             |worker_arm|worker_flush_nbx|worker_set_am_recv_handler|ep_create\
             |ep_close_nbx|am_send_nbx|am_recv_data_nbx|am_data_release\
             |request_check_status|request_free|request_cancel|get_version_string)",
        )
        .allowlist_function("ucs_status_string")
        .allowlist_type("ucs_status_t")
        .allowlist_type(
            "ucp_(params_t|worker_params_t|worker_attr_t|ep_params_t|request_param_t\
             |am_handler_param_t|am_recv_param_t|dt_iov_t|datatype_t)",
        )
        .allowlist_var("UCP_.*")
        .allowlist_var("UCS_.*")
        .allowlist_type(
            "ucp_(feature|params_field|worker_params_field|worker_attr_field\
             |ep_params_field|ep_close_flags_t|err_handling_mode_t|op_attr_t\
             |am_handler_param_field|am_cb_flags|send_am_flags|am_recv_attr_t|dt_type)",
        )
        .allowlist_type("ucs_thread_mode_t")
        // `FILE` is libc's (the plugin passes streams from `open_memstream`).
        .blocklist_type("FILE|_IO_.*")
        .raw_line("pub use libc::FILE;");
    generate(builder, "<ucp/api/ucp.h>", "ucp.rs");
}
