//! Messages in pieces: a buffer given as a list of `(address, length)`
//! pieces (an I/O vector), and a cursor that walks such a list so that
//! bytes are gathered from and scattered to the pieces directly, without
//! a packed intermediate copy. A contiguous buffer is the one-piece case.

/// One contiguous piece of a message buffer. Same layout as the kernel's
/// `struct iovec`, so a list of pieces is passed to `process_vm_readv`
/// as it is, and a sender's list can be read by a peer.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// First byte.
    pub ptr: *mut u8,
    /// Bytes at `ptr`.
    pub len: usize,
}

const _: () = {
    assert!(size_of::<Piece>() == size_of::<libc::iovec>());
    assert!(align_of::<Piece>() == align_of::<libc::iovec>());
};

impl Piece {
    /// A piece of `len` bytes at `ptr`.
    pub const fn new(ptr: *mut u8, len: usize) -> Self {
        Self { ptr, len }
    }
}

/// Total bytes of `pieces` (saturating: a list that overflows `usize`
/// cannot describe real memory anyway).
pub fn total(pieces: &[Piece]) -> usize {
    pieces.iter().fold(0usize, |t, p| t.saturating_add(p.len))
}

/// Copy `dst.len()` bytes at address `remote` of process `pid` into
/// `dst`, with cross-memory attach (`process_vm_readv`). The kernel checks
/// the remote range: one that `pid` has not mapped, or a process this one
/// may not read, is an error, never a fault.
pub fn read_remote(pid: u32, remote: u64, dst: &mut [u8]) -> std::io::Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    let n = dst.len();
    let local = [Piece::new(dst.as_mut_ptr(), n)];
    let remote = [Piece::new(remote as usize as *mut u8, n)];
    // SAFETY: `dst` is valid for writes of its length and borrowed
    // exclusively for the call.
    if unsafe { crate::copy::from_remote(pid, &local, &remote)? } < n {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    }
    Ok(())
}

/// Copy the first `n` bytes of `pieces` (at most their total) to `dst`:
/// one copy when the first piece holds them (a contiguous buffer, the
/// common case), the [`Cursor`]'s walk otherwise.
///
/// # Safety
/// As for [`Cursor::gather`] from the start of `pieces`.
#[inline]
pub unsafe fn gather(pieces: &[Piece], dst: *mut u8, n: usize) {
    if n == 0 {
        return; // nothing to copy (the pieces may be null)
    }
    match pieces.first() {
        // SAFETY: the caller's promise; the first piece holds `n` bytes.
        Some(one) if one.len >= n => unsafe { crate::copy::bytes(one.ptr, dst, n) },
        _ => {
            // SAFETY: the caller's promise.
            unsafe { Cursor::start(pieces).gather(pieces, dst, n) };
        }
    }
}

/// Copy `n` bytes from `src` into the first `n` bytes of `pieces` (at
/// most their total): one copy when the first piece holds them, the
/// [`Cursor`]'s walk otherwise.
///
/// # Safety
/// As for [`Cursor::scatter`] from the start of `pieces`.
#[inline]
pub unsafe fn scatter(pieces: &[Piece], src: *const u8, n: usize) {
    if n == 0 {
        return; // nothing to copy (the pieces may be null)
    }
    match pieces.first() {
        // SAFETY: the caller's promise; the first piece holds `n` bytes.
        Some(one) if one.len >= n => unsafe { crate::copy::bytes(src, one.ptr, n) },
        _ => {
            // SAFETY: the caller's promise.
            unsafe { Cursor::start(pieces).scatter(pieces, src, n) };
        }
    }
}

/// Copy the first `n` bytes of the pieces `src` (at most their total)
/// into the pieces `dst` (at most theirs), the two lists split as they
/// may be: one `memcpy` per overlap of a source and a destination piece,
/// no copy in between. Returns the bytes copied.
///
/// # Safety
/// Every piece of `src` is readable and every piece of `dst` writable,
/// and no destination piece overlaps a source piece.
pub unsafe fn copy(dst: &[Piece], src: &[Piece], n: usize) -> usize {
    let (mut d, mut s) = (Cursor::start(dst), Cursor::start(src));
    let mut done = 0;
    while done < n
        && let (Some((to, room)), Some((from, have))) = (d.current(dst), s.current(src))
    {
        let step = room.min(have).min(n - done);
        // SAFETY: `step` bytes fit in both current pieces (the caller's
        // promise: readable, writable, apart).
        unsafe { crate::copy::bytes(from, to, step) };
        done += step;
        d.off += step;
        d.settle(dst);
        s.off += step;
        s.settle(src);
    }
    done
}

/// A position in a list of pieces: piece `idx`, byte `off` within it.
/// It never rests on an exhausted piece, so `idx == len` means the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    idx: usize,
    off: usize,
}

impl Cursor {
    /// The start of `pieces` (past any leading empty pieces).
    pub fn start(pieces: &[Piece]) -> Self {
        let mut c = Self::default();
        c.settle(pieces);
        c
    }

    /// Step over exhausted and empty pieces.
    fn settle(&mut self, pieces: &[Piece]) {
        while self.idx < pieces.len() && self.off == pieces[self.idx].len {
            self.idx += 1;
            self.off = 0;
        }
    }

    /// Whether every byte of `pieces` is behind the cursor.
    pub fn at_end(&self, pieces: &[Piece]) -> bool {
        self.idx >= pieces.len()
    }

    /// The rest of the current piece, as (address, bytes); `None` at the end.
    fn current(&self, pieces: &[Piece]) -> Option<(*mut u8, usize)> {
        let p = pieces.get(self.idx)?;
        Some((p.ptr.wrapping_add(self.off), p.len - self.off))
    }

    /// Move `n` bytes forward (at most to the end).
    pub fn advance(&mut self, pieces: &[Piece], mut n: usize) {
        while n > 0
            && let Some((_, rest)) = self.current(pieces)
        {
            let step = rest.min(n);
            self.off += step;
            n -= step;
            self.settle(pieces);
        }
    }

    /// Append the pieces from the cursor on to `out` until it holds `max`
    /// entries, or they add up to `max_bytes` (the last one cut short),
    /// or the list ends; the first one starts at the cursor. Returns the
    /// bytes appended.
    pub fn fill(
        &self,
        pieces: &[Piece],
        out: &mut Vec<Piece>,
        max: usize,
        max_bytes: usize,
    ) -> usize {
        let mut c = *self;
        let mut bytes = 0;
        while out.len() < max
            && bytes < max_bytes
            && let Some((ptr, len)) = c.current(pieces)
        {
            let len = len.min(max_bytes - bytes);
            out.push(Piece::new(ptr, len));
            bytes += len;
            c.idx += 1;
            c.off = 0;
            c.settle(pieces);
        }
        bytes
    }

    /// Copy up to `n` bytes from `src` into the pieces from the cursor
    /// on, stopping at the end of the list; advance. Returns the bytes
    /// written.
    ///
    /// # Safety
    /// `src` is valid for reading `n` bytes; every piece from the cursor
    /// on is valid for writes and does not overlap `src`.
    pub unsafe fn scatter(&mut self, pieces: &[Piece], src: *const u8, n: usize) -> usize {
        let mut done = 0;
        while done < n
            && let Some((dst, rest)) = self.current(pieces)
        {
            let step = rest.min(n - done);
            // SAFETY: `done + step <= n` bytes of `src` (caller); `step`
            // bytes fit in the current piece (caller: writable).
            unsafe { crate::copy::bytes(src.add(done), dst, step) };
            done += step;
            self.off += step;
            self.settle(pieces);
        }
        done
    }

    /// Copy up to `n` bytes of the pieces from the cursor on into `dst`,
    /// stopping at the end of the list; advance. Returns the bytes read.
    ///
    /// # Safety
    /// `dst` is valid for writing `n` bytes; every piece from the cursor
    /// on is valid for reads and does not overlap `dst`.
    pub unsafe fn gather(&mut self, pieces: &[Piece], dst: *mut u8, n: usize) -> usize {
        let mut done = 0;
        while done < n
            && let Some((src, rest)) = self.current(pieces)
        {
            let step = rest.min(n - done);
            // SAFETY: as for `scatter`, directions swapped.
            unsafe { crate::copy::bytes(src, dst.add(done), step) };
            done += step;
            self.off += step;
            self.settle(pieces);
        }
        done
    }
}

/// The largest gap between two pieces of a sender's buffer that a CMA
/// receiver reads across (into a sink) to make one remote piece of the
/// two. `process_vm_readv` pins the pages of each remote piece anew, a
/// fixed cost that copying a couple of KiB more undercuts; local pieces
/// (the sink among them) cost far less.
pub const MAX_BRIDGE: usize = 2048;

/// Pages are at least this large: a gap that begins and ends on pages
/// holding data of the buffer touches no other page.
const MIN_PAGE: usize = 4096;

/// Whether the gap from `end` (one past a non-empty piece) to `next` can
/// be read: short, forward, and only on the pages of the two pieces
/// (which are mapped and readable, as they hold the message).
fn bridgeable(end: usize, next: usize) -> bool {
    next >= end && next - end <= MAX_BRIDGE && next / MIN_PAGE <= (end - 1) / MIN_PAGE + 1
}

/// A transfer from remote pieces into local ones, rewritten so that
/// remote pieces separated by short gaps ([`MAX_BRIDGE`], on the pieces'
/// own pages) are read as one, the gap's bytes landing in `sink` (at
/// least [`MAX_BRIDGE`] bytes, never read). Returns the new (remote,
/// local) lists, or `None` when no gap can be bridged. The local list
/// ends where `local` does.
pub fn bridge(
    remote: &[Piece],
    local: &[Piece],
    sink: *mut u8,
) -> Option<(Vec<Piece>, Vec<Piece>)> {
    let data = || remote.iter().filter(|p| p.len > 0);
    let any = data()
        .zip(data().skip(1))
        .any(|(a, b)| bridgeable(a.ptr as usize + a.len, b.ptr as usize));
    if !any {
        return None;
    }
    let (mut r, mut l) = (Vec::<Piece>::new(), Vec::new());
    let mut lc = Cursor::start(local);
    for p in data() {
        if lc.at_end(local) {
            break;
        }
        match r.last_mut() {
            Some(last) if bridgeable(last.ptr as usize + last.len, p.ptr as usize) => {
                let gap = p.ptr as usize - (last.ptr as usize + last.len);
                if gap > 0 {
                    l.push(Piece::new(sink, gap));
                }
                last.len += gap + p.len;
            }
            _ => r.push(*p),
        }
        let got = lc.fill(local, &mut l, usize::MAX, p.len);
        lc.advance(local, got);
    }
    Some((r, l))
}

/// A request's buffer: one piece (no allocation) or a list of pieces
/// whose heap storage stays put while the request lives (a rendezvous
/// sender publishes its address).
#[derive(Debug)]
pub(crate) enum Buf {
    One(Piece),
    Many(Box<[Piece]>),
}

impl Buf {
    /// A buffer of `pieces`; a single piece (or none) needs no list.
    pub(crate) fn of(pieces: &[Piece]) -> Self {
        match pieces {
            [] => Self::One(Piece::new(std::ptr::null_mut(), 0)),
            [p] => Self::One(*p),
            many => Self::Many(many.into()),
        }
    }

    pub(crate) fn pieces(&self) -> &[Piece] {
        match self {
            Self::One(p) => std::slice::from_ref(p),
            Self::Many(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of `buf` with the given lengths, in order, a non-empty one
    /// followed by `gap` untouched bytes.
    fn split(buf: &mut [u8], lens: &[usize], gap: usize) -> Vec<Piece> {
        let mut at = 0;
        lens.iter()
            .map(|&n| {
                let p = Piece::new(buf[at..].as_mut_ptr(), n);
                if n > 0 {
                    at += n + gap;
                }
                p
            })
            .collect()
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(7) ^ 0x5a).collect()
    }

    #[test]
    fn gather_then_scatter_with_different_splits() {
        let data = bytes(100);
        let mut src = vec![0u8; 200];
        let slens = [0, 13, 0, 40, 1, 46, 0];
        let spieces = split(&mut src, &slens, 3);
        let mut c = Cursor::start(&spieces);
        // SAFETY: `data` has 100 bytes; the pieces lie inside `src`.
        assert_eq!(unsafe { c.scatter(&spieces, data.as_ptr(), 100) }, 100);
        assert!(c.at_end(&spieces));
        // Gather in chunks of 7 (like staging slots) into a packed copy.
        let mut packed = vec![0u8; 100];
        let mut c = Cursor::start(&spieces);
        let mut at = 0;
        while at < 100 {
            // SAFETY: `at + 7` may pass 100, so read at most what is left.
            at += unsafe { c.gather(&spieces, packed[at..].as_mut_ptr(), 7.min(100 - at)) };
        }
        assert_eq!(packed, data);
        // Scatter into a different split, in chunks of 9.
        let mut dst = vec![0u8; 200];
        let dpieces = split(&mut dst, &[30, 0, 0, 70], 5);
        let mut c = Cursor::start(&dpieces);
        for chunk in data.chunks(9) {
            // SAFETY: the chunk is readable; pieces lie inside `dst`.
            let n = unsafe { c.scatter(&dpieces, chunk.as_ptr(), chunk.len()) };
            assert_eq!(n, chunk.len());
        }
        assert_eq!(&dst[..30], &data[..30]);
        assert_eq!(&dst[30..35], &[0; 5]);
        assert_eq!(&dst[35..105], &data[30..]);
    }

    #[test]
    fn piece_to_piece_copy_matches_gather_then_scatter() {
        let data = bytes(100);
        let mut src = vec![0u8; 200];
        let spieces = split(&mut src, &[0, 13, 0, 40, 1, 46, 0], 3);
        // SAFETY: `data` has 100 bytes; the pieces lie inside `src`.
        unsafe { Cursor::start(&spieces).scatter(&spieces, data.as_ptr(), 100) };
        for (dlens, n, want) in [
            (&[30, 0, 0, 70][..], 100, 100),
            (&[7, 7, 7, 79][..], 64, 64),
            (&[50][..], 100, 50),      // the destination is shorter
            (&[1; 120][..], 200, 100), // the source is shorter
        ] {
            let mut dst = vec![0u8; 400];
            let dpieces = split(&mut dst, dlens, 2);
            // SAFETY: the pieces lie inside `src` and `dst`, apart.
            assert_eq!(unsafe { copy(&dpieces, &spieces, n) }, want);
            let mut got = vec![0u8; want];
            // SAFETY: `got` holds `want` bytes; the pieces lie in `dst`.
            unsafe { Cursor::start(&dpieces).gather(&dpieces, got.as_mut_ptr(), want) };
            assert_eq!(got, data[..want]);
        }
    }

    #[test]
    fn whole_list_copies_match_the_cursor_walk() {
        let data = bytes(60);
        // One piece holding it all (the single-copy case), a piece shorter
        // than the message, a leading empty piece, and more bytes asked
        // for than the pieces hold: each gathers and scatters what the
        // cursor's walk would.
        for (lens, n) in [
            (&[60][..], 60),
            (&[60][..], 25),
            (&[20, 40][..], 60),
            (&[0, 60][..], 60),
            (&[10, 5][..], 60),
        ] {
            let total: usize = lens.iter().sum();
            let want = n.min(total);
            let mut buf = vec![0u8; 200];
            let pieces = split(&mut buf, lens, 2);
            // SAFETY: `data` holds `n` bytes; the pieces lie inside `buf`.
            unsafe { scatter(&pieces, data.as_ptr(), n) };
            let mut out = vec![0u8; 60];
            // SAFETY: `out` holds `n` bytes; the pieces lie inside `buf`.
            unsafe { gather(&pieces, out.as_mut_ptr(), n) };
            assert_eq!(out[..want], data[..want], "{lens:?} {n}");
            assert!(out[want..].iter().all(|&b| b == 0), "{lens:?} {n}");
        }
        // Nothing to copy: a null piece is never touched.
        let null = [Piece::new(std::ptr::null_mut(), 0)];
        // SAFETY: zero bytes are copied.
        unsafe {
            gather(&null, std::ptr::null_mut(), 0);
            scatter(&null, std::ptr::null(), 0);
        }
    }

    #[test]
    fn scatter_stops_at_the_end_of_a_short_list() {
        let data = bytes(50);
        let mut dst = vec![0u8; 64];
        let pieces = split(&mut dst, &[10, 0, 20], 2);
        let mut c = Cursor::start(&pieces);
        // SAFETY: as above.
        assert_eq!(unsafe { c.scatter(&pieces, data.as_ptr(), 50) }, 30);
        assert!(c.at_end(&pieces));
        // SAFETY: nothing is written at the end.
        assert_eq!(unsafe { c.scatter(&pieces, data.as_ptr(), 50) }, 0);
        assert_eq!(&dst[..10], &data[..10]);
        assert_eq!(&dst[12..32], &data[10..30]);
        assert!(dst[32..].iter().all(|&b| b == 0));
    }

    #[test]
    fn bridged_transfer_reads_gaps_into_the_sink() {
        // Remote: 4 pieces; gaps of 3 (bridged), 5000 (not: too long) and
        // 3 again; then a piece before the previous one (not: backward).
        let mut remote_mem = vec![0u8; 16384];
        for (i, b) in remote_mem.iter_mut().enumerate() {
            *b = i as u8 ^ (i >> 8) as u8;
        }
        let base = remote_mem.as_mut_ptr();
        let at = |o: usize| base.wrapping_add(o);
        let remote = [
            Piece::new(at(100), 10),
            Piece::new(at(113), 7),
            Piece::new(at(120), 0),
            Piece::new(at(5120), 4),
            Piece::new(at(5127), 9),
            Piece::new(at(50), 5),
        ];
        let want: Vec<u8> = remote
            .iter()
            .flat_map(|p| remote_mem[p.ptr as usize - base as usize..][..p.len].to_vec())
            .collect();
        let mut dst = vec![0u8; 64];
        let local = split(&mut dst, &[6, 6, 6, 6, 11], 1);
        let mut sink = [0u8; MAX_BRIDGE];
        let (r, l) = bridge(&remote, &local, sink.as_mut_ptr()).expect("a gap to bridge");
        assert_eq!(
            r,
            [
                Piece::new(at(100), 20),
                Piece::new(at(5120), 16),
                Piece::new(at(50), 5)
            ]
        );
        assert_eq!(total(&l), 35 + 3 + 3);
        // Moving r into l (what the kernel does) delivers the message.
        let (mut rc, mut lc) = (Cursor::start(&r), Cursor::start(&l));
        let mut chunk = [0u8; 1];
        while !rc.at_end(&r) {
            // SAFETY: one byte at a time between live local buffers.
            unsafe {
                rc.gather(&r, chunk.as_mut_ptr(), 1);
                lc.scatter(&l, chunk.as_ptr(), 1);
            }
        }
        let mut got = vec![0u8; 35];
        // SAFETY: the local pieces lie in `dst`.
        unsafe { Cursor::start(&local).gather(&local, got.as_mut_ptr(), 35) };
        assert_eq!(got, want);
        // No gap short enough on the pieces' pages: nothing to rewrite.
        let far = [Piece::new(at(0), 4), Piece::new(at(8192), 4)];
        assert!(bridge(&far, &local, sink.as_mut_ptr()).is_none());
        assert!(!bridgeable(4095, 4096 + 4096), "gap over a page of its own");
        assert!(bridgeable(4000, 4100));
    }

    #[test]
    fn empty_lists_and_empty_pieces() {
        let none: [Piece; 0] = [];
        assert!(Cursor::start(&none).at_end(&none));
        let empties = [Piece::new(std::ptr::null_mut(), 0); 3];
        let mut c = Cursor::start(&empties);
        assert!(c.at_end(&empties));
        // SAFETY: nothing is read or written.
        assert_eq!(unsafe { c.gather(&empties, std::ptr::null_mut(), 0) }, 0);
        assert_eq!(total(&empties), 0);
    }

    #[test]
    fn fill_and_advance_batch_a_list() {
        let mut buf = vec![0u8; 64];
        let pieces = split(&mut buf, &[4, 0, 6, 8, 2], 1);
        let mut c = Cursor::start(&pieces);
        c.advance(&pieces, 5);
        let mut out = Vec::new();
        assert_eq!(c.fill(&pieces, &mut out, 2, usize::MAX), 5 + 8);
        let mut cut = Vec::new();
        assert_eq!(c.fill(&pieces, &mut cut, 8, 7), 7);
        assert_eq!(cut, [out[0], Piece::new(pieces[3].ptr, 2)]);
        assert_eq!(out[0], Piece::new(pieces[2].ptr.wrapping_add(1), 5));
        assert_eq!(out[1], pieces[3]);
        c.advance(&pieces, 13);
        out.clear();
        assert_eq!(c.fill(&pieces, &mut out, 8, usize::MAX), 2);
        assert_eq!(out, [pieces[4]]);
        c.advance(&pieces, 100);
        assert!(c.at_end(&pieces));
        assert_eq!(Buf::of(&pieces[..1]).pieces(), &pieces[..1]);
        assert_eq!(Buf::of(&pieces).pieces(), &pieces[..]);
        assert_eq!(total(Buf::of(&[]).pieces()), 0);
    }
}
