//! Flag boards: the shared-memory protocol of intra-node collectives.
//!
//! Every member of a communicator owns an [`Area`] in its own shared heap:
//! [`LINES`] flag lines and two data buffers, written by that member only
//! and read by the others. A collective is a sequence of *steps*, numbered
//! `t = 1, 2, 3, ...` per communicator (never reset; compared with
//! wrap-around arithmetic, so the numbers may wrap). At step `t` each
//! member *posts*: it writes its contribution (if any) into line
//! `t % LINES`'s inline bytes or data buffer `t % 2`, then stores `t` in
//! that line's sequence word with Release (BP1). A reader that loads `t`
//! (or later) with Acquire (BP1) sees the contribution.
//!
//! Reuse rule (BP2): a member reads what another posted at step `t` only
//! before it posts `t + 1` itself. So a member may post `t` once every
//! member has posted the step after the last one that used what `t`
//! overwrites ([`must_have_posted`], [`Board::may_post`]): `t - 1` when it
//! writes its data buffer (last used at `t - 2`), `t - LINES + 1` when its
//! contribution fits in the line (last used at `t - LINES`). A fast member
//! that enters later collectives therefore waits before it would overwrite
//! what a late one still reads, never sooner: the root of a small
//! broadcast posts up to `LINES - 1` steps ahead of its slowest reader. A
//! late member finds everything posted, since posts are never taken back.
//!
//! Sleeping (BP3): a waiter that runs out of patience moves its doorbell
//! word to `SLEEPING` ([`crate::doorbell::prepare_sleep`]), issues a
//! SeqCst fence and checks the flag it waits for once more
//! ([`may_sleep`]) before it sleeps on the futex. A poster, after its
//! Release store, issues a SeqCst fence and wakes every member whose bell
//! says `SLEEPING` ([`wake_needed`]). Of two such fenced store-then-load
//! pairs at least one sees the other's store, so either the waiter sees
//! the post, or the poster sees the sleeper: no wake-up is lost, and a
//! poster whose readers spin pays one fence and reads of lines its cache
//! already shares, no atomic read-modify-write on anyone's line.
//!
//! `loom-tests/tests/board.rs` checks this module's code: posts and reads
//! of several collectives in a row, sequence numbers wrapping, and the
//! sleep hand-shake, and the reuse of data buffers; the `board_post`
//! mutation weakens BP1, `board_reuse` lets a data buffer be rewritten a
//! step early (BP2).

use crate::doorbell;
use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell, fence};

/// Bytes of contribution carried inside a flag line.
pub const INLINE: usize = 48;

/// Flag lines per area (a power of two): line `t % LINES` carries step `t`.
/// 64 fill the page before the data buffers. A small broadcast's root
/// runs up to 63 steps ahead: with more processes than cores, each then
/// runs many broadcasts per time slice (8 lines took an 8-byte bcast at 4
/// processes on 2 cores twice as long).
#[cfg(not(tessel_loom))]
pub const LINES: usize = 64;
/// Under loom, 4 lines: the models reuse a line within a few steps (the
/// protocol does not depend on the number, only on it being at least 2).
#[cfg(tessel_loom)]
pub const LINES: usize = 4;

/// Bytes before the first data buffer of an [`Area`] (a page, so that
/// the buffers start page-aligned).
pub const DATA_OFF: usize = 4096;

/// Ordering of a post's sequence store (BP1). The `board_post` mutation
/// weakens it so loom-tests can prove loom notices.
#[cfg(not(tessel_mutation = "board_post"))]
const POST: Ordering = Ordering::Release;
#[cfg(tessel_mutation = "board_post")]
const POST: Ordering = Ordering::Relaxed;

/// One flag line: a sequence word, the length of the contribution and up
/// to [`INLINE`] bytes of it; one cache line, one writer.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Line {
    /// The last step posted in this line (0: none yet).
    pub seq: AtomicU64,
    /// What the step posted, written before `seq`.
    pub body: UnsafeCell<Body>,
}

/// The part of a [`Line`] written before its post.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Body {
    /// Bytes the poster contributed (inline or in its data buffer).
    pub len: u64,
    /// The contribution, when at most [`INLINE`] bytes.
    pub inline: [u8; INLINE],
}

/// The head of one member's area: its flag lines. The two data buffers
/// follow at [`DATA_OFF`] (even steps) and `DATA_OFF + data_len` (odd).
#[repr(C)]
#[derive(Debug)]
pub struct Area {
    /// Line `t % LINES` carries step `t`.
    pub lines: [Line; LINES],
}

// SAFETY: the inline bytes have one writer (the line's owner), which
// writes them only before a Release post and only once every reader is
// done with them (BP1, BP2); readers read them only after an Acquire load
// saw the post.
unsafe impl Sync for Line {}

impl Line {
    /// A line that posted step `seq` last (an area in the shared heap
    /// starts zeroed instead: nothing posted).
    pub fn new(seq: u64) -> Self {
        Self {
            seq: AtomicU64::new(seq),
            body: UnsafeCell::new(Body {
                len: 0,
                inline: [0; INLINE],
            }),
        }
    }
}

impl Area {
    /// An area whose last post was step `t` (for models that start the
    /// steps anywhere, e.g. just before they wrap).
    pub fn after(t: u64) -> Self {
        // Line `i` last carried the latest step up to `t` that is `i`
        // modulo LINES.
        let back = |i: usize| t.wrapping_sub(t.wrapping_sub(i as u64) % LINES as u64);
        Self {
            lines: std::array::from_fn(|i| Line::new(back(i))),
        }
    }
}

/// How far back, in steps, the last post must be that every member made
/// before one writes its data buffer again (BP2). The `board_reuse`
/// mutation makes it 2, so that loom-tests can prove loom notices.
#[cfg(not(tessel_mutation = "board_reuse"))]
const DATA_REUSE: u64 = 1;
#[cfg(tessel_mutation = "board_reuse")]
const DATA_REUSE: u64 = 2;

/// The step every member must have posted before one posts step `t`
/// (BP2): `t - 1` if the post writes its data buffer (`data`), else
/// `t - LINES + 1`.
#[inline]
pub fn must_have_posted(t: u64, data: bool) -> u64 {
    t.wrapping_sub(if data { DATA_REUSE } else { LINES as u64 - 1 })
}

/// Bytes of an area whose data buffers hold `data_len` bytes each.
pub const fn area_len(data_len: usize) -> usize {
    DATA_OFF + 2 * data_len
}

/// `seq` is step `t` or later, with wrap-around: steps are never more
/// than 2^63 apart.
#[inline]
pub fn reached(seq: u64, t: u64) -> bool {
    seq.wrapping_sub(t) as i64 >= 0
}

/// One member's view of a communicator's board: the areas of all members,
/// mapped in this process.
#[derive(Debug)]
pub struct Board<'a> {
    areas: &'a [&'a Area],
    me: usize,
}

impl<'a> Board<'a> {
    /// Member `me`'s view of the board made of `areas` (one per member,
    /// in member order).
    pub fn new(areas: &'a [&'a Area], me: usize) -> Self {
        debug_assert!(me < areas.len());
        Self { areas, me }
    }

    /// Members of the board.
    pub fn len(&self) -> usize {
        self.areas.len()
    }

    /// Whether the board has no members (never, for a built one).
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }

    /// This member's index.
    pub fn me(&self) -> usize {
        self.me
    }

    fn line(&self, m: usize, t: u64) -> &'a Line {
        &self.areas[m].lines[(t % LINES as u64) as usize]
    }

    /// Whether member `m` has posted step `t` (Acquire, BP1: what it
    /// posted is visible).
    #[inline]
    pub fn posted(&self, m: usize, t: u64) -> bool {
        reached(self.line(m, t).seq.load(Ordering::Acquire), t)
    }

    /// Whether this member may post step `t` (BP2): every member, this
    /// one included, has posted [`must_have_posted`]`(t, data)`; `data`:
    /// the post writes the data buffer.
    pub fn may_post(&self, t: u64, data: bool) -> bool {
        let need = must_have_posted(t, data);
        (0..self.areas.len()).all(|m| self.posted(m, need))
    }

    /// Post step `t`, saying `len` bytes were contributed, `inline` (at
    /// most [`INLINE`] bytes) of them in the line. Anything for the data
    /// buffer of step `t` ([`Board::data`]) must be written before. The
    /// caller checked [`Board::may_post`].
    #[inline]
    pub fn post(&self, t: u64, len: u64, inline: &[u8]) {
        let line = self.line(self.me, t);
        debug_assert!(inline.len() <= INLINE);
        // SAFETY: only this member writes its lines, and by BP2 no member
        // reads line `t % LINES` (step `t - LINES`) any more.
        line.body.with_mut(|p| unsafe {
            (*p).len = len;
            let dst = std::ptr::addr_of_mut!((*p).inline).cast::<u8>();
            std::ptr::copy_nonoverlapping(inline.as_ptr(), dst, inline.len());
        });
        line.seq.store(t, POST); // BP1
    }

    /// Say that this member posts nothing after step `t - 1`: store `t`
    /// in line `t % LINES` without touching its body, and without waiting
    /// for [`Board::may_post`]. A member still reading step `t - LINES`
    /// there keeps reading what was posted, since only the sequence word
    /// changes; [`Board::posted`]`(me, t)` tells the
    /// others this member is done with the board.
    pub fn retire(&self, t: u64) {
        self.line(self.me, t).seq.store(t, POST);
    }

    /// The length member `m` posted at step `t`, and the first
    /// `out.len()` inline bytes, copied into `out`. The caller saw
    /// [`Board::posted`]`(m, t)` and has not posted `t + 1` (BP2).
    pub fn read(&self, m: usize, t: u64, out: &mut [u8]) -> u64 {
        debug_assert!(out.len() <= INLINE);
        // SAFETY: the post of `t` happened before (BP1) and the next write
        // of this line waits for our post of `t + 1` (BP2).
        self.line(m, t).body.with(|p| unsafe {
            let src = std::ptr::addr_of!((*p).inline).cast::<u8>();
            crate::copy::bytes(src, out.as_mut_ptr(), out.len());
            (*p).len
        })
    }

    /// Member `m`'s data buffer of step `t`, for buffers of `data_len`
    /// bytes each.
    ///
    /// # Safety
    /// The areas are [`area_len`]`(data_len)` bytes long. The owner writes
    /// the buffer only before it posts `t`; others read it only after
    /// they saw the post and before they post `t + 1` (BP1, BP2).
    pub unsafe fn data(&self, m: usize, t: u64, data_len: usize) -> *mut u8 {
        let base = (self.areas[m] as *const Area).cast::<u8>();
        // SAFETY: within the area (caller's promise).
        unsafe { base.add(DATA_OFF + (t % 2) as usize * data_len) }.cast_mut()
    }

    /// The sequence word member `m` posts step `t` in (to watch it while
    /// sleeping, [`may_sleep`]).
    pub fn seq_word(&self, m: usize, t: u64) -> &'a AtomicU64 {
        &self.line(m, t).seq
    }
}

/// A flag a sleeping process watches: the sequence word of a line and
/// the step it waits for ([`crate::Endpoint::watch`]).
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    word: std::ptr::NonNull<AtomicU64>,
    t: u64,
}

// SAFETY: a watch names a word of shared memory that stays mapped for the
// life of the process (heap arenas are never unmapped); it only loads it.
unsafe impl Send for Watch {}

impl Watch {
    /// Watch `word` for step `t`.
    ///
    /// # Safety
    /// `word` stays mapped as long as the watch is registered (one turn
    /// of a waiting loop; areas in the shared heap stay mapped for the
    /// life of the process).
    pub unsafe fn new(word: &AtomicU64, t: u64) -> Self {
        Self {
            word: word.into(),
            t,
        }
    }

    /// The watched word and step.
    pub fn get(&self) -> (&AtomicU64, u64) {
        // SAFETY: mapped while registered (`Watch::new`'s contract).
        (unsafe { self.word.as_ref() }, self.t)
    }
}

/// Whether a waiter whose bell is now `SLEEPING` may really sleep: after a
/// SeqCst fence (BP3), none of the `(word, t)` it watches has reached `t`.
/// When this says no, the waiter must leave the sleeping state
/// ([`doorbell::cancel_sleep`]) and look again.
pub fn may_sleep<'w>(watched: impl IntoIterator<Item = (&'w AtomicU64, u64)>) -> bool {
    fence(Ordering::SeqCst); // BP3
    watched
        .into_iter()
        .all(|(w, t)| !reached(w.load(Ordering::Acquire), t))
}

/// Fence once after posting (BP3), before [`wake_needed`] is asked of
/// each member's bell.
pub fn after_post() {
    fence(Ordering::SeqCst);
}

/// Whether the owner of `bell` sleeps (or is about to) and must be woken
/// after a post: asked after [`after_post`]. The caller then nudges and
/// wakes it as a doorbell ring would ([`doorbell::nudge`]).
#[inline]
pub fn wake_needed(bell: &AtomicU32) -> bool {
    bell.load(Ordering::Relaxed) & doorbell::SLEEPING != 0
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn layout_is_pinned() {
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!(std::mem::offset_of!(Line, body), 8);
        assert_eq!(std::mem::size_of::<Area>(), 64 * LINES);
        assert!(std::mem::size_of::<Area>() <= DATA_OFF);
        assert_eq!(area_len(1 << 10), DATA_OFF + 2048);
    }

    #[test]
    fn steps_compare_across_the_wrap() {
        assert!(reached(5, 5) && reached(6, 5) && !reached(4, 5));
        assert!(reached(0, u64::MAX) && reached(1, u64::MAX - 1));
        assert!(!reached(u64::MAX, 0));
    }

    #[test]
    fn a_post_is_read_back_and_reuse_waits_for_everyone() {
        let areas = [Area::after(0), Area::after(0)];
        let refs: Vec<&Area> = areas.iter().collect();
        let (a, b) = (Board::new(&refs, 0), Board::new(&refs, 1));
        assert!(a.may_post(1, true) && !a.posted(0, 1));
        a.post(1, 3, &[1, 2, 3]);
        assert!(b.posted(0, 1) && !b.posted(1, 1));
        let mut got = [0; 3];
        assert_eq!(b.read(0, 1, &mut got), 3);
        assert_eq!(got, [1, 2, 3]);
        // Member 0 may not write its data buffer at step 2 before member
        // 1 posted 1; posts in the line may go on up to step LINES - 1.
        assert!(!a.may_post(2, true));
        let last = LINES as u64 - 1;
        for t in 2..=last {
            assert!(a.may_post(t, false), "step {t}");
            a.post(t, 1, &[t as u8]);
        }
        assert!(
            !a.may_post(last + 1, false),
            "step LINES needs everyone's 1"
        );
        b.post(1, 0, &[]);
        assert!(a.may_post(2, true) && a.may_post(last + 1, false));
        // Reading is unaffected by the posts ahead: step 2's line holds 2.
        let mut one = [0; 1];
        assert_eq!(b.read(0, 2, &mut one), 1);
        assert_eq!(one, [2]);
    }

    #[test]
    fn a_fresh_area_has_posted_every_line_up_to_its_step() {
        for t in [0, 1, 7, 8, 9, u64::MAX - 3] {
            let area = Area::after(t);
            for (i, line) in area.lines.iter().enumerate() {
                let seq = line.seq.load(Ordering::Relaxed);
                assert_eq!(seq % LINES as u64, i as u64 % LINES as u64);
                assert!(reached(t, seq) && !reached(seq, t.wrapping_add(1)));
                assert!(reached(seq, t.wrapping_sub(LINES as u64 - 1)));
            }
        }
    }
}
