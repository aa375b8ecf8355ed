//! The standard-ABI entry layer, generated from the MPICH-ABI prototypes.
//!
//! The C prototype of a function is the same text in both ABIs; what
//! differs is what its types and constants are. For each prototype the
//! MPICH entry layer declares, this writes an `extern "C"` function taking
//! the standard ABI's types that translates each argument by its C type
//! (and, for integers with special values, by its name), calls the MPICH
//! entry function, and translates the outputs and the error code back.
//! Functions that need more (arrays of handles or statuses whose length
//! is another argument, application callbacks) are written by hand in
//! `src/std_abi`; this skips every name defined there.

use std::collections::BTreeSet;
use std::fmt::Write as _;

include!("../src/std_abi/dropped.rs");

const HANDLES: &[&str] = &[
    "MPI_Comm",
    "MPI_Group",
    "MPI_Datatype",
    "MPI_Op",
    "MPI_Request",
    "MPI_Errhandler",
    "MPI_Info",
    "MPI_Win",
    "MPI_Session",
    "MPI_Message",
];

/// How one parameter crosses: its Rust type in the standard ABI, what
/// runs before the call, the argument passed, what runs after.
struct Crossing {
    ty: String,
    before: String,
    arg: String,
    after: String,
}

impl Crossing {
    fn plain(ty: &str, name: &str) -> Self {
        Self::with(ty, String::new(), format!("{name} as _"), String::new())
    }

    fn with(ty: &str, before: String, arg: String, after: String) -> Self {
        Self {
            ty: ty.to_owned(),
            before,
            arg,
            after,
        }
    }
}

/// The translation of an integer argument with special values, by name.
fn int_domain(function: &str, name: &str) -> Option<&'static str> {
    Some(match name {
        "dest" | "source" | "root" | "rank" | "target_rank" => "rank",
        "tag" | "sendtag" | "recvtag" => "tag",
        "errorcode" | "errorclass" if function != "MPI_Abort" => "code",
        // `MPI_Status_set_error`: the value of a status's `MPI_ERROR`.
        "error" => "code",
        "keyval" | "comm_keyval" | "type_keyval" | "win_keyval" => "keyval",
        "required" => "thread",
        "split_type" => "split_type",
        "order" => "order",
        "typeclass" => "typeclass",
        "lock_type" => "lock_type",
        "assert" => "mode",
        _ => return None,
    })
}

/// The translation of an integer output with special values.
fn int_out_domain(function: &str, name: &str) -> Option<&'static str> {
    Some(match (function, name) {
        (_, "result") if function.ends_with("_compare") => "compare",
        ("MPI_Topo_test", "status") => "topo",
        (_, "provided") => "thread",
        ("MPI_Cart_shift", _) => "rank",
        (_, "combiner") => "combiner",
        (_, "errorclass" | "errorcode") => "code",
        // The fields of a status (`MPI_Status_get_source`, `_tag`, `_error`).
        ("MPI_Status_get_source", "source") => "rank",
        ("MPI_Status_get_tag", "tag") => "tag",
        ("MPI_Status_get_error", "error") => "code",
        (_, "comm_keyval" | "type_keyval" | "win_keyval" | "keyval") => "keyval",
        _ => return None,
    })
}

/// Rust types of the standard ABI for a C type, where the value passes
/// unchanged.
fn plain_type(c: &str) -> Option<&'static str> {
    Some(match c {
        "int" | "const int" => "c_int",
        "int *" | "int []" | "int [][3]" => "*mut c_int",
        "const int []" | "const int *" => "*const c_int",
        "void *" => "*mut c_void",
        "const void *" => "*const c_void",
        "void **" => "*mut *mut c_void",
        "char *" => "*mut c_char",
        "const char *" | "const char []" => "*const c_char",
        "char * []" => "*mut *mut c_char",
        "char ***" | "char ** []" => "*mut *mut *mut c_char",
        "MPI_Aint" => "MPI_Aint",
        "MPI_Aint *" | "MPI_Aint []" => "*mut MPI_Aint",
        "const MPI_Aint []" => "*const MPI_Aint",
        "MPI_Count" => "MPI_Count",
        "MPI_Count *" | "MPI_Count []" => "*mut MPI_Count",
        "const MPI_Count []" => "*const MPI_Count",
        "MPI_Offset" => "MPI_Offset",
        "MPI_Offset *" => "*mut MPI_Offset",
        "MPI_T_cb_safety" => "c_int",
        "MPI_T_enum"
        | "MPI_T_cvar_handle"
        | "MPI_T_pvar_session"
        | "MPI_T_event_registration"
        | "MPI_T_event_instance"
        | "MPI_File" => "*mut c_void",
        "MPI_T_enum *"
        | "MPI_T_cvar_handle *"
        | "MPI_T_pvar_handle *"
        | "MPI_T_pvar_session *"
        | "MPI_T_event_registration *"
        | "MPI_File *" => "*mut *mut c_void",
        "MPI_T_source_order *" => "*mut c_int",
        _ => return None,
    })
}

fn crossing(function: &str, inert: bool, c: &str, name: &str) -> Crossing {
    if HANDLES.contains(&c) {
        return Crossing::with(
            "Handle",
            String::new(),
            format!("handle_in({name})"),
            String::new(),
        );
    }
    if let Some(base) = c.strip_suffix(" *")
        && HANDLES.contains(&base)
    {
        return Crossing::with(
            "*mut Handle",
            format!("let mut {name}_l = handle_ptr_in({name});"),
            format!("if {name}.is_null() {{ core::ptr::null_mut() }} else {{ &mut {name}_l }}"),
            if base == "MPI_Message" {
                format!("message_ptr_out({name}, {name}_l);")
            } else {
                format!("handle_ptr_out({name}, {name}_l);")
            },
        );
    }
    match c {
        "MPI_Status *" => {
            return Crossing::with(
                "*mut MPI_Status",
                format!("let mut {name}_l = status_in({name});"),
                format!("if {name}.is_null() {{ status_ignore() }} else {{ &mut {name}_l }}"),
                format!("status_out({name}, &{name}_l);"),
            );
        }
        "const MPI_Status *" => {
            return Crossing::with(
                "*const MPI_Status",
                format!("let {name}_l = status_in({name});"),
                format!("if {name}.is_null() {{ status_ignore() }} else {{ &{name}_l }}"),
                String::new(),
            );
        }
        _ => {}
    }
    if c == "MPI_T_pvar_handle" {
        // `MPI_T_PVAR_ALL_HANDLES` is 1 here, an address in the library.
        return Crossing::with(
            "*mut c_void",
            String::new(),
            format!("pvar_handle_in({name})"),
            String::new(),
        );
    }
    if c.ends_with("_function *") || c.ends_with("_function") {
        assert!(
            inert,
            "{function}: callback {name} needs a hand-written entry"
        );
        return Crossing::with(
            "*const c_void",
            String::new(),
            // SAFETY (in the generated code's block): a function pointer
            // or null, passed on without a call.
            format!("core::mem::transmute::<*const c_void, _>({name})"),
            String::new(),
        );
    }
    let Some(ty) = plain_type(c) else {
        assert!(inert, "{function}: no translation for {c} {name}");
        return Crossing::plain("*mut c_void", name);
    };
    match (c, name) {
        ("int" | "const int", _) => match int_domain(function, name) {
            Some(d) => Crossing::with(ty, String::new(), format!("{d}_in({name})"), String::new()),
            None => Crossing::plain(ty, name),
        },
        ("int *", _) => match int_out_domain(function, name) {
            Some(d) => Crossing::with(
                ty,
                format!("int_ptr_in({name}, {d}_in);"),
                name.to_owned(),
                format!("int_ptr_out({name}, {d}_out);"),
            ),
            None => Crossing::plain(ty, name),
        },
        // Any message buffer may be `MPI_IN_PLACE`: where the standard
        // allows it (`sendbuf`, `recvbuf`) and where the library must
        // refuse it (`buffer` of `MPI_Bcast`, `inbuf` of `MPI_Reduce_local`).
        ("const void *" | "void *", _) if name.ends_with("buf") || name == "buffer" => {
            Crossing::with(
                ty,
                String::new(),
                format!("in_place_in({name} as *const c_void) as _"),
                String::new(),
            )
        }
        (_, "weights" | "sourceweights" | "destweights") => Crossing::with(
            ty,
            String::new(),
            format!("weights_in({name} as *const c_int) as _"),
            String::new(),
        ),
        _ => Crossing::plain(ty, name),
    }
}

/// Splits `"int MPI_Send(const void *buf, ...)"` into its return type,
/// name and `(C type, name)` parameters.
fn parse(prototype: &str) -> (String, String, Vec<(String, String)>) {
    let open = prototype.find('(').unwrap();
    let head = &prototype[..open];
    let start = head.rfind([' ', '*']).unwrap() + 1;
    let name = head[start..].to_owned();
    let ret = head[..start].trim().to_owned();
    let inner = &prototype[open + 1..prototype.rfind(')').unwrap()];
    let mut params = Vec::new();
    for p in inner.split(',').map(str::trim) {
        if p == "void" || p == "..." {
            continue;
        }
        let (p, array) = match (p.strip_suffix("[][3]"), p.strip_suffix("[]")) {
            (Some(p), _) => (p, "[][3]"),
            (None, Some(p)) => (p, "[]"),
            (None, None) => (p, ""),
        };
        let split = p.rfind([' ', '*']).unwrap() + 1;
        let mut ty = p[..split].trim().to_owned();
        if ty.ends_with('*') && !ty.ends_with(" *") && !ty.ends_with("**") {
            ty.insert(ty.len() - 1, ' ');
        }
        if !array.is_empty() {
            ty.push(' ');
            ty.push_str(array);
        }
        params.push((ty, p[split..].to_owned()));
    }
    (ret, name, params)
}

/// The generated entry functions, given the MPICH prototypes, the names
/// of the inert ones (which report an error without using their
/// arguments), and the names written by hand.
pub fn generate(
    prototypes: &[String],
    inert: &BTreeSet<String>,
    by_hand: &BTreeSet<String>,
) -> String {
    let mut out = String::from("// Generated by build.rs from the MPICH-ABI prototypes.\n");
    for p in prototypes {
        let (ret, name, params) = parse(p);
        if by_hand.contains(&name) || NOT_IN_STANDARD_ABI.contains(&name.as_str()) {
            continue;
        }
        let crossings: Vec<Crossing> = params
            .iter()
            .map(|(c, n)| crossing(&name, inert.contains(&name), c, n))
            .collect();
        let sig: Vec<String> = params
            .iter()
            .zip(&crossings)
            .map(|((_, n), x)| format!("{n}: {}", x.ty))
            .collect();
        let (rty, finish) = match ret.as_str() {
            "int" => ("c_int", "code_out(rc)"),
            "double" => ("f64", "rc"),
            "MPI_Aint" => ("MPI_Aint", "rc as MPI_Aint"),
            other => panic!("{name}: return type {other}"),
        };
        let _ = writeln!(
            out,
            "\n#[doc = \"`{name}` of the standard ABI.\"]\n#[allow(unused_unsafe, clippy::unnecessary_cast, clippy::let_and_return, clippy::missing_transmute_annotations)]\n#[cfg_attr(tessel_std_abi, unsafe(no_mangle))]\n\
             pub unsafe extern \"C\" fn {name}({}) -> {rty} {{",
            sig.join(", ")
        );
        let _ = writeln!(
            out,
            "    // SAFETY: the caller's arguments under `{name}`'s contract; each crosses\n    \
             // translated (`std_abi`), pointers as the caller gave them or to locals.\n    unsafe {{"
        );
        for x in &crossings {
            if !x.before.is_empty() {
                let _ = writeln!(out, "        {}", x.before);
            }
        }
        let args: Vec<&str> = crossings.iter().map(|x| x.arg.as_str()).collect();
        let _ = writeln!(
            out,
            "        let rc = entries::{name}({});",
            args.join(", ")
        );
        for x in &crossings {
            if !x.after.is_empty() {
                let _ = writeln!(out, "        {}", x.after);
            }
        }
        let _ = writeln!(out, "        {finish}\n    }}\n}}");
    }
    out
}
