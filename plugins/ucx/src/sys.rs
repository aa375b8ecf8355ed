//! The UCP API as bindgen generated it from `<ucp/api/ucp.h>` (see
//! `build.rs`), plus Rust versions of the few macros the plugin needs:
//! `UCS_PTR_IS_ERR`/`UCS_PTR_STATUS` (as [`classify`]) and
//! `ucp_dt_make_iov` (contiguous payloads use UCP's default datatype,
//! `ucp_dt_make_contig(1)`).

use std::ffi::{CStr, c_void};

plugin_api::bindings!("ucp.rs");

/// What a `ucs_status_ptr_t` returned by a `*_nbx` call says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Started {
    /// `NULL`: the operation completed at once.
    Done,
    /// An error code (`UCS_PTR_IS_ERR`).
    Failed(ucs_status_t),
    /// A request handle: the operation completes later.
    Request(*mut c_void),
}

/// Classify a status pointer as `UCS_PTR_IS_ERR` and `UCS_PTR_STATUS` do:
/// the top 100 addresses are the negated error codes.
pub(crate) fn classify(ptr: ucs_status_ptr_t) -> Started {
    let raw = ptr as usize;
    if raw == 0 {
        Started::Done
    } else if raw >= UCS_ERR_LAST as isize as usize {
        Started::Failed(raw as isize as ucs_status_t)
    } else {
        Started::Request(ptr)
    }
}

/// `ucp_dt_make_iov()`.
pub(crate) const fn dt_iov() -> ucp_datatype_t {
    UCP_DATATYPE_IOV as ucp_datatype_t
}

/// UCX's text for a status code.
pub(crate) fn status_text(status: ucs_status_t) -> String {
    // SAFETY: `ucs_status_string` accepts any value and returns a static
    // NUL-terminated string (or "Unknown error" for codes it does not know).
    let p = unsafe { ucs_status_string(status) };
    if p.is_null() {
        return format!("UCX status {status}");
    }
    // SAFETY: non-null, static and NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Whether a status says the peer (its process or the connection to it)
/// is gone, rather than a local fault.
pub(crate) fn is_peer_failure(status: ucs_status_t) -> bool {
    status == UCS_ERR_UNREACHABLE
        || status == UCS_ERR_CONNECTION_RESET
        || status == UCS_ERR_ENDPOINT_TIMEOUT
        || (UCS_ERR_LAST_ENDPOINT_FAILURE..=UCS_ERR_FIRST_ENDPOINT_FAILURE).contains(&status)
        || (UCS_ERR_LAST_LINK_FAILURE..=UCS_ERR_FIRST_LINK_FAILURE).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_pointers_classify_like_the_macros() {
        assert_eq!(classify(std::ptr::null_mut()), Started::Done);
        let err = UCS_ERR_NO_RESOURCE as isize as usize as ucs_status_ptr_t;
        assert_eq!(classify(err), Started::Failed(UCS_ERR_NO_RESOURCE));
        let last = UCS_ERR_LAST as isize as usize as ucs_status_ptr_t;
        assert_eq!(classify(last), Started::Failed(UCS_ERR_LAST));
        let req = 0x1000 as ucs_status_ptr_t;
        assert_eq!(classify(req), Started::Request(req));
    }

    #[test]
    fn the_iov_datatype_matches_the_macro() {
        assert_eq!(dt_iov(), 2);
    }

    #[test]
    fn peer_failures_are_told_apart() {
        assert!(is_peer_failure(UCS_ERR_CONNECTION_RESET));
        assert!(is_peer_failure(UCS_ERR_ENDPOINT_TIMEOUT));
        assert!(!is_peer_failure(UCS_ERR_NO_MEMORY));
        assert!(!is_peer_failure(UCS_ERR_CANCELED));
        assert!(status_text(UCS_OK).contains("Success"));
    }
}
