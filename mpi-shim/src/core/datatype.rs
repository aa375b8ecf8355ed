//! Datatypes as the library sees them, independent of any ABI: how many
//! bytes of data one element holds, where they lie in memory (its type
//! map, flattened to contiguous blocks), and its extent.
//!
//! Every path that moves user data (point-to-point, collectives, `Pack`)
//! goes through [`Datatype::pack`] / [`Datatype::unpack`] or, when
//! [`Datatype::is_contiguous`], straight to the user's memory.

use crate::ops::Elem;

/// A committed (or predefined) datatype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datatype {
    /// Bytes of data in one element (MPI "size").
    pub size: usize,
    /// Lower bound and extent (MPI "lb", "extent"): element `i` starts at
    /// `buf + i * extent`, and its blocks are relative to that start.
    pub lb: isize,
    pub extent: isize,
    /// Contiguous runs of one element's data, `(offset, length)`, in type
    /// map order; adjacent runs merged.
    pub blocks: Vec<(isize, usize)>,
    /// The basic element, when every basic element of the type is of the
    /// same kind (what a predefined reduction needs); `None` for a mix.
    pub elem: Option<Elem>,
}

impl Datatype {
    /// A predefined type: `size` contiguous bytes of kind `elem`.
    pub fn basic(size: usize, elem: Elem) -> Self {
        Self {
            size,
            lb: 0,
            extent: size as isize,
            blocks: if size == 0 { vec![] } else { vec![(0, size)] },
            elem: Some(elem),
        }
    }

    /// Whether `count` elements are `count * size` contiguous bytes at the
    /// buffer's address.
    pub fn is_contiguous(&self) -> bool {
        match self.blocks.as_slice() {
            [] => true,
            [(0, len)] => *len as isize == self.extent,
            _ => false,
        }
    }

    /// Bytes of data in `count` elements, or `None` on overflow.
    pub fn bytes(&self, count: usize) -> Option<usize> {
        self.size.checked_mul(count)
    }

    /// Gather the data of `count` elements at `src` into `dst`
    /// (`dst.len() == count * size`).
    ///
    /// # Safety
    /// `src` addresses `count` elements of this type (every block of every
    /// element is readable).
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: &mut [u8]) {
        debug_assert_eq!(Some(dst.len()), self.bytes(count));
        let mut at = 0;
        for i in 0..count {
            let base = i as isize * self.extent;
            for &(off, len) in &self.blocks {
                // SAFETY: the block lies in element `i` (caller's promise);
                // `dst` holds `size` bytes per element.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.offset(base + off),
                        dst.as_mut_ptr().add(at),
                        len,
                    )
                };
                at += len;
            }
        }
    }

    /// Scatter packed data `src` (`count * size` bytes, or fewer for a
    /// short message: only whole bytes received are written) into `count`
    /// elements at `dst`.
    ///
    /// # Safety
    /// `dst` addresses `count` writable elements of this type.
    pub unsafe fn unpack(&self, src: &[u8], count: usize, dst: *mut u8) {
        let mut at = 0;
        'elements: for i in 0..count {
            let base = i as isize * self.extent;
            for &(off, len) in &self.blocks {
                let n = len.min(src.len() - at);
                // SAFETY: the block lies in element `i` (caller's promise);
                // `src` holds `n` more bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.as_ptr().add(at), dst.offset(base + off), n)
                };
                at += n;
                if at == src.len() {
                    break 'elements;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_pack_unpack_round_trip() {
        // Two ints out of every three (a vector type by hand).
        let t = Datatype {
            size: 8,
            lb: 0,
            extent: 12,
            blocks: vec![(0, 8)],
            elem: Some(Elem::I32),
        };
        assert!(!t.is_contiguous());
        let src: Vec<u8> = (0..36).collect();
        let mut packed = vec![0; 24];
        // SAFETY: 3 elements of extent 12 in 36 bytes.
        unsafe { t.pack(src.as_ptr(), 3, &mut packed) };
        assert_eq!(&packed[..10], &[0, 1, 2, 3, 4, 5, 6, 7, 12, 13]);
        let mut back = vec![0xff; 36];
        // SAFETY: as above.
        unsafe { t.unpack(&packed, 3, back.as_mut_ptr()) };
        assert_eq!(&back[12..20], &src[12..20]);
        assert_eq!(back[8], 0xff);
        assert!(Datatype::basic(8, Elem::F64).is_contiguous());
    }
}
