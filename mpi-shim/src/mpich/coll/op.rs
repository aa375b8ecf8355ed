//! Reduction operations (MPI-4.0 §6.9): the predefined ones by handle,
//! those `MPI_Op_create` makes, and `MPI_Reduce_local`.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

/// The predefined operations by handle.
const PREDEFINED_OPS: [(MPI_Op, Op); 14] = [
    (abi::MPI_MAX, Op::Max),
    (abi::MPI_MIN, Op::Min),
    (abi::MPI_SUM, Op::Sum),
    (abi::MPI_PROD, Op::Prod),
    (abi::MPI_LAND, Op::Land),
    (abi::MPI_BAND, Op::Band),
    (abi::MPI_LOR, Op::Lor),
    (abi::MPI_BOR, Op::Bor),
    (abi::MPI_LXOR, Op::Lxor),
    (abi::MPI_BXOR, Op::Bxor),
    (abi::MPI_MINLOC, Op::Minloc),
    (abi::MPI_MAXLOC, Op::Maxloc),
    (abi::MPI_REPLACE, Op::Replace),
    (abi::MPI_NO_OP, Op::NoOp),
];

/// The predefined operation of handle `op`, if it is one.
pub(crate) fn predefined_op(op: MPI_Op) -> Option<Op> {
    PREDEFINED_OPS
        .iter()
        .find(|(h, _)| *h == op)
        .map(|&(_, o)| o)
}

fn invalid_op(op: MPI_Op) -> MpiError {
    err(Class::Op, format!("invalid operation {op:#x}"))
}

/// `MPI_User_function`: `(invec, inoutvec, len, datatype)`.
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
/// `MPI_User_function_c`: the same with an `MPI_Count` length
/// (`MPI_Op_create_c`, MPI-4.0 §6.9.5).
pub type UserFnC =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);

/// An operation of `MPI_Op_create`.
pub(crate) fn int_op(f: UserFn, commute: bool) -> UserOp {
    UserOp {
        f: f as usize,
        call: call_int,
        max_len: c_int::MAX as usize,
        commute,
    }
}

/// An operation of `MPI_Op_create_c`.
pub(crate) fn large_op(f: UserFnC, commute: bool) -> UserOp {
    UserOp {
        f: f as usize,
        call: call_large,
        max_len: MPI_Count::MAX as usize,
        commute,
    }
}

/// # Safety
/// [`crate::ops::UserCaller`]'s: `f` is a [`UserFn`] ([`int_op`] stored it).
unsafe fn call_int(f: usize, invec: *mut c_void, inoutvec: *mut c_void, len: usize, dt: u64) {
    // SAFETY: `f` is the address of a `UserFn`.
    let f = unsafe { std::mem::transmute::<usize, UserFn>(f) };
    let (mut len, mut dt) = (len as c_int, dt as MPI_Datatype);
    // SAFETY: the buffers hold `len` elements of `dt` (the caller's).
    unsafe { f(invec, inoutvec, &mut len, &mut dt) }
}

/// # Safety
/// [`crate::ops::UserCaller`]'s: `f` is a [`UserFnC`] ([`large_op`] stored it).
unsafe fn call_large(f: usize, invec: *mut c_void, inoutvec: *mut c_void, len: usize, dt: u64) {
    // SAFETY: `f` is the address of a `UserFnC`.
    let f = unsafe { std::mem::transmute::<usize, UserFnC>(f) };
    let (mut len, mut dt) = (len as MPI_Count, dt as MPI_Datatype);
    // SAFETY: the buffers hold `len` elements of `dt` (the caller's).
    unsafe { f(invec, inoutvec, &mut len, &mut dt) }
}

/// The operation `op` bound to datatype `handle`.
pub(super) fn reduction(rt: &Runtime, op: MPI_Op, handle: MPI_Datatype) -> MpiResult<Reduction> {
    reduction_of(rt, op, handle, super::datatype(rt, handle)?)
}

/// [`reduction`] of a datatype already decoded: `dt` is `handle`'s.
pub(super) fn reduction_of(
    rt: &Runtime,
    op: MPI_Op,
    handle: MPI_Datatype,
    dt: TypeRef,
) -> MpiResult<Reduction> {
    match abi::direct_index(Kind::Op, op) {
        Some(i) => {
            let &op = rt.ops.get(i).ok_or_else(|| invalid_op(op))?;
            Ok(Reduction::User {
                op,
                handle: handle as u32 as u64,
                dt,
            })
        }
        None => Reduction::predefined(predefined_op(op).ok_or_else(|| invalid_op(op))?, &dt),
    }
}

// ---------------------------------------------------------------------
// Local reduction and operation objects (MPI-4.0 §6.9.5, §6.9.7).

large_count! {
    fn MPI_Reduce_local / MPI_Reduce_local_c(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        op: MPI_Op,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            if abi::is_in_place(inbuf) || abi::is_in_place(inoutbuf.cast_const()) {
                return Err(in_place_error("in MPI_Reduce_local"));
            }
            let red = reduction(rt, op, datatype)?;
            // SAFETY: both buffers hold `count` elements (MPI contract).
            let (a, b) = unsafe {
                (
                    user_buf(rt, inbuf, count.get(), datatype)?,
                    user_buf(rt, inoutbuf, count.get(), datatype)?,
                )
            };
            // SAFETY: as above; both are readable.
            let (input, mut acc) = unsafe { (packed(&a), packed(&b)) };
            red.apply(&input, &mut acc);
            // SAFETY: `inoutbuf` is writable.
            unsafe { b.unpack(&acc) };
            Ok(())
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_create(
    user_fn: Option<UserFn>,
    commute: c_int,
    op: *mut MPI_Op,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe {
        op_create(
            "MPI_Op_create",
            user_fn.map(|f| int_op(f, commute != 0)),
            op,
        )
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_create_c(
    user_fn: Option<UserFnC>,
    commute: c_int,
    op: *mut MPI_Op,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe {
        op_create(
            "MPI_Op_create_c",
            user_fn.map(|f| large_op(f, commute != 0)),
            op,
        )
    }
}

/// `MPI_Op_create` for an entry layer: `user` is the operation on the
/// application's function, `None` for a null one.
///
/// # Safety
/// `op` is null or writable.
pub(crate) unsafe fn op_create(name: &str, user: Option<UserOp>, op: *mut MPI_Op) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let user = user.ok_or_else(|| err(Class::Arg, "null user function"))?;
        if op.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        let i = rt.ops.insert(user);
        // SAFETY: non-null output argument.
        unsafe { out(op, abi::direct_handle(Kind::Op, i)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    call("MPI_Op_free", abi::MPI_COMM_WORLD, |rt| {
        if op.is_null() {
            return Err(err(Class::Arg, "null operation pointer"));
        }
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *op };
        let freed = abi::direct_index(Kind::Op, h).and_then(|i| rt.ops.remove(i));
        if freed.is_none() {
            return Err(err(
                Class::Op,
                format!("{h:#x} is not an operation MPI_Op_create made"),
            ));
        }
        // SAFETY: as above.
        unsafe { *op = abi::MPI_OP_NULL };
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    call("MPI_Op_commutative", abi::MPI_COMM_WORLD, |rt| {
        let c = match abi::direct_index(Kind::Op, op) {
            Some(i) => rt.ops.get(i).ok_or_else(|| invalid_op(op))?.commute,
            None => !matches!(
                predefined_op(op).ok_or_else(|| invalid_op(op))?,
                Op::Replace | Op::NoOp
            ),
        };
        // SAFETY: output argument.
        unsafe { out(commute, c_int::from(c)) }
    })
}
