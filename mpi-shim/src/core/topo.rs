//! Process topologies (MPI-4.0 chapter 8): Cartesian grids, graphs and
//! distributed graphs, kept in the communicator they describe. The library
//! never reorders ranks: rank `r` of a topology is rank `r` of its parent.

use super::Class;
use super::peer::Rank;
use super::{MpiError, MpiResult};

/// A communicator's virtual topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// A Cartesian grid, row-major (the last dimension varies fastest).
    Cart(Cart),
    /// A graph every member knows entirely (MPI-4.0 §8.5.3): node `i`'s
    /// neighbours are `edges[index[i-1]..index[i]]`.
    Graph { index: Vec<i32>, edges: Vec<i32> },
    /// This process's edges of a distributed graph (MPI-4.0 §8.5.4).
    DistGraph(DistGraph),
}

/// What kind of topology a communicator has (`MPI_Topo_test`, MPI-4.1
/// §8.5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cart,
    Graph,
    DistGraph,
}

impl Topology {
    pub fn kind(&self) -> Kind {
        match self {
            Topology::Cart(_) => Kind::Cart,
            Topology::Graph { .. } => Kind::Graph,
            Topology::DistGraph(_) => Kind::DistGraph,
        }
    }
}

/// A process's neighbours as the neighbourhood collectives see them
/// (MPI-4.0 §8.6): in-neighbours (`sources`) and out-neighbours
/// (`destinations`) in the standard's order, each with a channel. The
/// message to destination `j` travels on `destinations[j].1` and is the
/// one the receiver takes from its source entry with the same channel, so
/// repeated edges between two processes pair up in order, and a Cartesian
/// message sent in the positive direction arrives from the negative side.
/// A neighbour is a rank, or [`Rank::Null`] off a non-periodic edge of a
/// Cartesian grid (the exchange with it moves nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Neighbors {
    pub sources: Vec<(Rank, u16)>,
    pub destinations: Vec<(Rank, u16)>,
}

/// Channels numbering the repeated occurrences of each peer in `peers`.
fn by_occurrence(peers: &[i32]) -> Vec<(Rank, u16)> {
    let mut seen = std::collections::HashMap::<i32, u16>::new();
    peers
        .iter()
        .map(|&p| {
            let k = seen.entry(p).or_insert(0);
            *k = k.wrapping_add(1);
            (Rank::Proc(p), *k - 1)
        })
        .collect()
}

impl Topology {
    /// The neighbourhood of `rank` (MPI-4.0 §8.6).
    pub fn neighbors(&self, rank: i32) -> Neighbors {
        match self {
            Topology::Cart(g) => {
                let (mut sources, mut destinations) = (Vec::new(), Vec::new());
                for d in 0..g.dims.len() {
                    let (neg, pos) = g.shift(rank, d, 1);
                    let (down, up) = (2 * d as u16, 2 * d as u16 + 1);
                    // What comes from the negative side travelled up.
                    sources.extend([(neg, up), (pos, down)]);
                    destinations.extend([(neg, down), (pos, up)]);
                }
                Neighbors {
                    sources,
                    destinations,
                }
            }
            Topology::Graph { index, edges } => {
                let r = rank as usize;
                let from = if r == 0 { 0 } else { index[r - 1] as usize };
                let mine = by_occurrence(&edges[from..index[r] as usize]);
                Neighbors {
                    sources: mine.clone(),
                    destinations: mine,
                }
            }
            Topology::DistGraph(g) => Neighbors {
                sources: by_occurrence(&g.sources),
                destinations: by_occurrence(&g.destinations),
            },
        }
    }
}

/// The incoming and outgoing edges of this process in a distributed graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistGraph {
    pub sources: Vec<i32>,
    pub source_weights: Vec<i32>,
    pub destinations: Vec<i32>,
    pub dest_weights: Vec<i32>,
    pub weighted: bool,
}

/// A Cartesian grid's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cart {
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
}

fn dims_error(msg: impl Into<String>) -> MpiError {
    MpiError::new(Class::Dims, msg)
}

impl Cart {
    /// A grid of `dims` (each > 0); `MPI_ERR_DIMS` otherwise.
    pub fn new(dims: &[i32], periods: Vec<bool>) -> MpiResult<Self> {
        if let Some(d) = dims.iter().find(|&&d| d <= 0) {
            return Err(dims_error(format!("grid dimension {d} is not positive")));
        }
        Ok(Self {
            dims: dims.to_vec(),
            periods,
        })
    }

    /// Number of grid points (`None` on overflow).
    pub fn size(&self) -> Option<i32> {
        self.dims
            .iter()
            .try_fold(1i32, |acc, &d| acc.checked_mul(d))
    }

    /// The coordinates of `rank` (which is below `size()`).
    pub fn coords(&self, rank: i32) -> Vec<i32> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for (i, &d) in self.dims.iter().enumerate().rev() {
            c[i] = r % d;
            r /= d;
        }
        c
    }

    /// The rank at `coords`, wrapping periodic dimensions; `None` when a
    /// coordinate of a non-periodic dimension is off the grid.
    pub fn rank(&self, coords: &[i32]) -> Option<i32> {
        let mut r = 0i32;
        for ((&c, &d), &p) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let c = if p {
                c.rem_euclid(d)
            } else if (0..d).contains(&c) {
                c
            } else {
                return None;
            };
            r = r * d + c;
        }
        Some(r)
    }

    /// `(source, dest)` of a shift by `disp` along `dim` seen from `rank`
    /// (MPI-4.0 §8.5.6): [`Rank::Null`] (`MPI_PROC_NULL`) off a
    /// non-periodic edge.
    pub fn shift(&self, rank: i32, dim: usize, disp: i32) -> (Rank, Rank) {
        let at = |delta: i32| {
            let mut c = self.coords(rank);
            c[dim] = c[dim].saturating_add(delta);
            self.rank(&c).map_or(Rank::Null, Rank::Proc)
        };
        (at(disp.saturating_neg()), at(disp))
    }

    /// The ranks of the sub-grid through `rank` that keeps the dimensions
    /// with `remain[i]`, in rank order, and that sub-grid's shape.
    pub fn sub(&self, rank: i32, remain: &[bool]) -> (Vec<i32>, Cart) {
        let mine = self.coords(rank);
        let n = self.size().unwrap_or(0);
        let members = (0..n)
            .filter(|&r| {
                let c = self.coords(r);
                (0..c.len()).all(|i| remain[i] || c[i] == mine[i])
            })
            .collect();
        let keep = |v: &[i32]| -> Vec<i32> {
            v.iter()
                .zip(remain)
                .filter(|(_, k)| **k)
                .map(|(x, _)| *x)
                .collect()
        };
        let periods = self
            .periods
            .iter()
            .zip(remain)
            .filter(|(_, k)| **k)
            .map(|(p, _)| *p)
            .collect();
        (
            members,
            Cart {
                dims: keep(&self.dims),
                periods,
            },
        )
    }
}

/// Fill the zero entries of `dims` so that the product of all is `nnodes`,
/// as balanced as possible and non-increasing (MPI-4.1 §8.5.2): of the
/// ways to split what is left into that many factors, the one whose
/// largest and smallest factors are closest, then whose largest is
/// smallest (72 in two dimensions is 9 x 8).
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> MpiResult<()> {
    if nnodes < 0 {
        return Err(MpiError::new(
            Class::Arg,
            format!("negative number of nodes {nnodes}"),
        ));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(dims_error(format!("negative dimension {d}")));
    }
    if nnodes == 0 {
        return Err(dims_error("cannot spread 0 nodes over a grid"));
    }
    // The product of the fixed dimensions, or a number above `nnodes`.
    let limit = i64::from(nnodes);
    let fixed = dims
        .iter()
        .filter(|&&d| d > 0)
        .try_fold(1i64, |acc, &d| {
            Some(acc * i64::from(d)).filter(|&p| p <= limit)
        })
        .unwrap_or(limit + 1);
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if i64::from(nnodes) % fixed != 0 {
        return Err(dims_error(format!(
            "{nnodes} nodes are not a multiple of the fixed dimensions' product {fixed}"
        )));
    }
    let rest = (i64::from(nnodes) / fixed) as i32;
    if free.is_empty() {
        return if rest == 1 {
            Ok(())
        } else {
            Err(dims_error(format!(
                "the dimensions' product {fixed} is not {nnodes}"
            )))
        };
    }
    let out = balanced(rest, free.len());
    for (i, v) in free.into_iter().zip(out) {
        dims[i] = v;
    }
    Ok(())
}

/// `n` (> 0) as the product of `k` (> 0) non-increasing factors, the
/// largest and smallest as close as possible, then the largest as small as
/// possible: a search over non-increasing sequences of divisors (an `i32`
/// has at most 1,600), trying the largest factor from small to large so
/// that the first sequences found are already close and the spread they
/// set cuts off the rest.
fn balanced(n: i32, k: usize) -> Vec<i32> {
    let mut divisors: Vec<i32> = (1..)
        .take_while(|&d: &i32| i64::from(d) * i64::from(d) <= i64::from(n))
        .filter(|&d| n % d == 0)
        .flat_map(|d| [d, n / d])
        .collect();
    divisors.sort_unstable();
    divisors.dedup();
    if k == 1 {
        return vec![n];
    }
    let mut best: Option<Best> = None;
    let mut current = Vec::with_capacity(k);
    for &first in divisors.iter().filter(|&&d| at_least_root(d, n, k)) {
        // The smallest factor is at most the (k-1)-th root of the rest.
        if best
            .as_ref()
            .is_some_and(|b| first - ceil_root(n / first, k - 1) > b.0.0)
        {
            break;
        }
        current.push(first);
        search(n / first, k - 1, &divisors, &mut current, &mut best);
        current.pop();
    }
    best.map(|(_, v)| v).unwrap_or_else(|| vec![n])
}

/// The best sequence so far: (spread, largest) and the factors.
type Best = ((i32, i32), Vec<i32>);

/// Whether `d^k >= n`.
fn at_least_root(d: i32, n: i32, k: usize) -> bool {
    (f64::from(d)).powi(k as i32) >= f64::from(n)
}

/// `x^(1/m)` rounded up (never below the true root, so that floating
/// point never cuts the best sequence).
fn ceil_root(x: i32, m: usize) -> i32 {
    f64::from(x).powf(1.0 / m as f64).ceil() as i32
}

/// Extend `current` (non-increasing factors, the first chosen) with `k`
/// more whose product is `left`, largest first, keeping the best complete
/// sequence in `best`.
fn search(left: i32, k: usize, divisors: &[i32], current: &mut Vec<i32>, best: &mut Option<Best>) {
    let (first, cap) = (current[0], current[current.len() - 1]);
    if k == 1 {
        let key = (first - left, first);
        if left <= cap && best.as_ref().is_none_or(|b| key < b.0) {
            current.push(left);
            *best = Some((key, current.clone()));
            current.pop();
        }
        return;
    }
    for &d in divisors
        .iter()
        .rev()
        .filter(|&&d| d <= cap && left % d == 0)
    {
        // The other `k - 1` factors are at most `d`.
        if !at_least_root(d, left, k) {
            break;
        }
        if let Some(((spread, _), _)) = best.as_ref() {
            // The smallest factor is at most `d`: no smaller `d` does better.
            if first - d > *spread {
                break;
            }
            if first - ceil_root(left / d, k - 1).min(d) > *spread {
                continue;
            }
        }
        current.push(d);
        search(left / d, k - 1, divisors, current, best);
        current.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Rank::Proc as P;

    #[test]
    fn cartesian_neighbours_pair_directions() {
        // A periodic ring of two: both neighbours of each rank are the
        // other rank; what 0 sends up must be what 1 takes from below.
        let ring = Topology::Cart(Cart::new(&[2], vec![true]).unwrap());
        let (n0, n1) = (ring.neighbors(0), ring.neighbors(1));
        assert_eq!(n0.destinations, vec![(P(1), 0), (P(1), 1)]);
        assert_eq!(n1.sources, vec![(P(0), 1), (P(0), 0)]);
        // Off a non-periodic edge there is no neighbour.
        let line = Topology::Cart(Cart::new(&[3], vec![false]).unwrap());
        assert_eq!(line.neighbors(0).sources[0].0, Rank::Null);
    }

    #[test]
    fn repeated_graph_edges_pair_in_order() {
        let g = Topology::DistGraph(DistGraph {
            sources: vec![3, 1, 3],
            destinations: vec![1, 1],
            ..DistGraph::default()
        });
        let n = g.neighbors(0);
        assert_eq!(n.sources, vec![(P(3), 0), (P(1), 0), (P(3), 1)]);
        assert_eq!(n.destinations, vec![(P(1), 0), (P(1), 1)]);
    }

    fn dims(n: i32, mut d: Vec<i32>) -> MpiResult<Vec<i32>> {
        dims_create(n, &mut d).map(|()| d)
    }

    #[test]
    fn dims_create_balances_and_sorts() {
        assert_eq!(dims(6, vec![0, 0]).unwrap(), [3, 2]);
        assert_eq!(dims(7, vec![0, 0]).unwrap(), [7, 1]);
        assert_eq!(dims(8, vec![0, 0, 0]).unwrap(), [2, 2, 2]);
        assert_eq!(dims(16, vec![0, 0, 0]).unwrap(), [4, 2, 2]);
        assert_eq!(dims(12, vec![0, 0]).unwrap(), [4, 3]);
        assert_eq!(dims(72, vec![0, 0]).unwrap(), [9, 8]);
        assert_eq!(dims(36, vec![0, 0, 0]).unwrap(), [4, 3, 3]);
        assert_eq!(dims(1024, vec![0, 0, 0]).unwrap(), [16, 8, 8]);
        assert_eq!(dims(30, vec![0, 0, 0, 0]).unwrap(), [5, 3, 2, 1]);
        // 1,344 divisors: the search stays small.
        assert_eq!(
            dims(735_134_400, vec![0; 6]).unwrap(),
            [34, 33, 30, 30, 28, 26]
        );
        assert_eq!(dims(720_720, vec![0; 5]).unwrap(), [20, 18, 14, 13, 11]);
        assert_eq!(dims(2_147_483_647, vec![0, 0]).unwrap(), [2_147_483_647, 1]);
        assert_eq!(dims(6, vec![0, 3, 0]).unwrap(), [2, 3, 1]);
        assert_eq!(dims(1, vec![0, 0]).unwrap(), [1, 1]);
        assert_eq!(dims(4, vec![2, 2]).unwrap(), [2, 2]);
        assert_eq!(dims(7, vec![0, 3]).unwrap_err().code, Class::Dims);
        assert_eq!(dims(4, vec![-1, 0]).unwrap_err().code, Class::Dims);
        assert_eq!(dims(4, vec![2, 3]).unwrap_err().code, Class::Dims);
        let huge = vec![i32::MAX, i32::MAX, i32::MAX, 0];
        assert_eq!(dims(8, huge).unwrap_err().code, Class::Dims);
    }

    #[test]
    fn cart_rank_and_coords_are_row_major_and_wrap_periodic_dims() {
        let c = Cart::new(&[2, 3], vec![false, true]).unwrap();
        assert_eq!(c.size(), Some(6));
        for r in 0..6 {
            assert_eq!(c.rank(&c.coords(r)), Some(r));
        }
        assert_eq!(c.coords(4), [1, 1]);
        assert_eq!(c.rank(&[1, -1]), Some(5));
        assert_eq!(c.rank(&[1, 3]), Some(3));
        assert_eq!(c.rank(&[2, 0]), None);
        assert_eq!(
            Cart::new(&[2, 0], vec![false; 2]).unwrap_err().code,
            Class::Dims
        );
    }

    #[test]
    fn cart_shift_gives_proc_null_off_non_periodic_edges() {
        let c = Cart::new(&[2, 3], vec![false, true]).unwrap();
        // Rank 0 is (0, 0).
        assert_eq!(c.shift(0, 0, 1), (Rank::Null, P(3)));
        assert_eq!(c.shift(3, 0, 1), (P(0), Rank::Null));
        assert_eq!(c.shift(0, 1, 1), (P(2), P(1)));
        assert_eq!(c.shift(0, 1, -2), (P(2), P(1)));
    }

    #[test]
    fn cart_sub_keeps_rows_or_columns() {
        let c = Cart::new(&[2, 3], vec![false, true]).unwrap();
        let (row, shape) = c.sub(4, &[false, true]);
        assert_eq!(row, [3, 4, 5]);
        assert_eq!(shape, Cart::new(&[3], vec![true]).unwrap());
        let (col, shape) = c.sub(4, &[true, false]);
        assert_eq!(col, [1, 4]);
        assert_eq!(shape.dims, [2]);
        let (me, shape) = c.sub(4, &[false, false]);
        assert_eq!(me, [4]);
        assert!(shape.dims.is_empty());
    }
}
