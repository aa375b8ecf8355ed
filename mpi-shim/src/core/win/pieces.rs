//! The byte pieces an operation touches in window memory, as (offset,
//! length) or (address, length): a list that keeps a single piece without
//! allocating (a contiguous target type, so every atomic operation), and
//! the reads and combines over such pieces that both ends of a window use.

use std::ops::Deref;

use crate::ops::{Elem, Op, kernel};

/// One operation's pieces, in order.
#[derive(Debug)]
pub(super) enum Pieces<T> {
    One([T; 1]),
    Many(Vec<T>),
}

impl<T> Pieces<T> {
    /// No pieces (an operation without data).
    pub(super) fn none() -> Self {
        Self::Many(Vec::new())
    }

    /// The pieces `f` makes of these, in order.
    pub(super) fn map<U>(&self, mut f: impl FnMut(&T) -> U) -> Pieces<U> {
        match self {
            Self::One([x]) => Pieces::One([f(x)]),
            Self::Many(v) => Pieces::Many(v.iter().map(f).collect()),
        }
    }
}

impl<T> Deref for Pieces<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Self::One(one) => one,
            Self::Many(many) => many,
        }
    }
}

/// `f` on the bytes of `pieces`, in order: read in place when there is
/// one piece, gathered into a copy otherwise.
pub(super) fn with_bytes<R>(pieces: &[(*mut u8, usize)], f: impl FnOnce(&[u8]) -> R) -> R {
    match pieces {
        // SAFETY: checked window memory (`local_range`, or
        // `target_pieces` for a mapped peer), which the caller does not
        // write while `f` runs.
        [(p, len)] => f(unsafe { std::slice::from_raw_parts(*p, *len) }),
        _ => f(&gather(pieces)),
    }
}

/// The bytes of `pieces`, in order.
pub(super) fn gather(pieces: &[(*mut u8, usize)]) -> Vec<u8> {
    let mut out = vec![0; pieces.iter().map(|p| p.1).sum()];
    copy_out(pieces, &mut out);
    out
}

/// Copy the bytes of `pieces`, in order, into `dst`, which holds them
/// all.
pub(super) fn copy_out(pieces: &[(*mut u8, usize)], dst: &mut [u8]) {
    let mut at = 0;
    for &(p, len) in pieces {
        // SAFETY: checked window memory (`local_range`, or
        // `target_pieces` for a mapped peer).
        dst[at..at + len].copy_from_slice(unsafe { std::slice::from_raw_parts(p, len) });
        at += len;
    }
}

/// Combine `src` (packed elements of kind `elem`) into `pieces` with
/// `op`. The caller holds the accumulate lock of the process whose
/// window memory `pieces` are, if it has one.
pub(super) fn apply(op: Op, elem: Elem, src: &[u8], pieces: &[(*mut u8, usize)]) {
    let f = kernel(op, elem);
    let mut at = 0;
    for &(p, len) in pieces {
        // SAFETY: checked window memory (`local_range`, or
        // `target_pieces` for a mapped peer), which no other accumulating
        // operation touches during the call (the accumulate lock, or the
        // target applying its messages one at a time); a put or a local
        // access that conflicts with it is erroneous (MPI-4.1 §12.7).
        let dst = unsafe { std::slice::from_raw_parts_mut(p, len) };
        let s = &src[at..at + len];
        match (op, f) {
            (Op::NoOp, _) => {}
            (Op::Replace, _) | (_, None) => dst.copy_from_slice(s),
            (_, Some(k)) => k(s, dst),
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_piece_is_read_in_place_and_several_in_order() {
        let mut mem = [1u8, 2, 3, 4, 5, 6];
        let base = mem.as_mut_ptr();
        let one =
            Pieces::One([(2u64, 3u64)]).map(|&(o, l)| (base.wrapping_add(o as usize), l as usize));
        with_bytes(&one, |b| {
            assert_eq!(b, [3, 4, 5]);
            assert_eq!(b.as_ptr(), base.wrapping_add(2).cast_const());
        });
        let many = Pieces::Many(vec![(4u64, 2u64), (0, 1)])
            .map(|&(o, l)| (base.wrapping_add(o as usize), l as usize));
        assert_eq!(many.len(), 2);
        assert_eq!(with_bytes(&many, <[u8]>::to_vec), [5, 6, 1]);
        assert!(Pieces::<(u64, u64)>::none().is_empty());
    }

    #[test]
    fn apply_combines_each_piece_with_its_part_of_the_source() {
        let mut mem = [10i32, 20, 30];
        let base = mem.as_mut_ptr().cast::<u8>();
        let pieces = [(base.wrapping_add(8), 4), (base, 4)];
        let src: Vec<u8> = [1i32, 2].iter().flat_map(|x| x.to_ne_bytes()).collect();
        apply(Op::Sum, Elem::I32, &src, &pieces);
        assert_eq!(mem, [12, 20, 31]);
        apply(Op::NoOp, Elem::I32, &src, &pieces);
        assert_eq!(mem, [12, 20, 31]);
        apply(Op::Replace, Elem::I32, &src, &pieces);
        assert_eq!(mem, [2, 20, 1]);
    }
}
