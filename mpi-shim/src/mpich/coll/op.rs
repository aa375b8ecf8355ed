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
fn predefined_op(op: MPI_Op) -> Option<Op> {
    PREDEFINED_OPS
        .iter()
        .find(|(h, _)| *h == op)
        .map(|&(_, o)| o)
}

fn invalid_op(op: MPI_Op) -> MpiError {
    err(abi::MPI_ERR_OP, format!("invalid operation {op:#x}"))
}

/// The operation `op` bound to datatype `handle`.
pub(super) fn reduction(rt: &Runtime, op: MPI_Op, handle: MPI_Datatype) -> MpiResult<Reduction> {
    let dt = super::datatype(rt, handle)?;
    match abi::direct_index(Kind::Op, op) {
        Some(i) => {
            let &op = rt.ops.get(i).ok_or_else(|| invalid_op(op))?;
            Ok(Reduction::User { op, handle, dt })
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
                    UserBuf::new(rt, inbuf, count.get(), datatype)?,
                    UserBuf::new(rt, inoutbuf, count.get(), datatype)?,
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
            user_fn.map(UserFunction::Int),
            commute,
            op,
            ops::DatatypeArg::Int,
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
            user_fn.map(UserFunction::Large),
            commute,
            op,
            ops::DatatypeArg::Int,
        )
    }
}

/// `MPI_Op_create` for an entry layer whose functions take the datatype
/// handle as `datatype` says.
///
/// # Safety
/// `op` is null or writable.
pub(crate) unsafe fn op_create(
    name: &str,
    user_fn: Option<UserFunction>,
    commute: c_int,
    op: *mut MPI_Op,
    datatype: ops::DatatypeArg,
) -> c_int {
    call(name, abi::MPI_COMM_WORLD, |rt| {
        let f = user_fn.ok_or_else(|| err(abi::MPI_ERR_ARG, "null user function"))?;
        if op.is_null() {
            return Err(err(abi::MPI_ERR_ARG, "null output argument"));
        }
        let i = rt.ops.insert(UserOp {
            f,
            commute: commute != 0,
            datatype,
        });
        // SAFETY: non-null output argument.
        unsafe { out(op, abi::direct_handle(Kind::Op, i)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    call("MPI_Op_free", abi::MPI_COMM_WORLD, |rt| {
        if op.is_null() {
            return Err(err(abi::MPI_ERR_ARG, "null operation pointer"));
        }
        // SAFETY: non-null pointer to the caller's handle.
        let h = unsafe { *op };
        let freed = abi::direct_index(Kind::Op, h).and_then(|i| rt.ops.remove(i));
        if freed.is_none() {
            return Err(err(
                abi::MPI_ERR_OP,
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
