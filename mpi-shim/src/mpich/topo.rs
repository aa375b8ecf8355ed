//! Process topologies (MPI-4.0 chapter 8): Cartesian grids, graphs and
//! distributed graphs. Ranks are never reordered (`reorder` is accepted
//! and ignored), so a topology's rank `r` is rank `r` of its parent.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::group::ints;
use super::info::info_hints;
use super::*;
use crate::core::topo::{self, Cart, DistGraph, Topology};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Dims_create(int nnodes, int ndims, int dims[])",
    "int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *comm_cart)",
    "int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])",
    "int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)",
    "int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)",
    "int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)",
    "int MPI_Cartdim_get(MPI_Comm comm, int *ndims)",
    "int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])",
    "int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)",
    "int MPI_Topo_test(MPI_Comm comm, int *status)",
    "int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int indx[], const int edges[], int reorder, MPI_Comm *comm_graph)",
    "int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)",
    "int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])",
    "int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)",
    "int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int indx[], int edges[])",
    "int MPI_Graph_map(MPI_Comm comm, int nnodes, const int indx[], const int edges[], int *newrank)",
    "int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)",
    "int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)",
    "int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)",
    "int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree, int destinations[], int destweights[])",
];

use super::predefined::{MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY};

fn topo_error(msg: impl Into<String>) -> MpiError {
    err(Class::Topology, msg)
}

/// The Cartesian grid of `comm`.
fn cart_of(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(&Cart, i32)> {
    let c = rt.comm(comm_slot(comm)?)?;
    match &c.topo {
        Some(Topology::Cart(g)) => Ok((g, c.rank)),
        _ => Err(topo_error("the communicator has no Cartesian topology")),
    }
}

/// The graph (`index`, `edges`) of `comm`.
fn graph_of(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(&[i32], &[i32])> {
    match &rt.comm(comm_slot(comm)?)?.topo {
        Some(Topology::Graph { index, edges }) => Ok((index, edges)),
        _ => Err(topo_error("the communicator has no graph topology")),
    }
}

/// The distributed graph edges of `comm`.
fn dist_graph_of(rt: &Runtime, comm: MPI_Comm) -> MpiResult<&DistGraph> {
    match &rt.comm(comm_slot(comm)?)?.topo {
        Some(Topology::DistGraph(g)) => Ok(g),
        _ => Err(topo_error(
            "the communicator has no distributed graph topology",
        )),
    }
}

/// Write `v` to the array at `p` of `cap` elements.
///
/// # Safety
/// A non-null `p` addresses `cap` writable ints (MPI contract).
unsafe fn write_ints(p: *mut c_int, cap: c_int, v: &[c_int], what: &str) -> MpiResult<()> {
    if (cap as i64) < v.len() as i64 {
        return Err(err(
            Class::Arg,
            format!("{what} array of {cap} entries for {} values", v.len()),
        ));
    }
    if v.is_empty() {
        return Ok(());
    }
    nonnull(p, what)?;
    // SAFETY: room for `cap >= v.len()` ints (the caller's promise).
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) };
    Ok(())
}

/// A grid of `ndims` dimensions from the caller's arrays.
///
/// # Safety
/// `dims` and `periods` address `ndims` ints (MPI contract).
unsafe fn cart_from(ndims: c_int, dims: *const c_int, periods: *const c_int) -> MpiResult<Cart> {
    if ndims < 0 {
        return Err(err(Class::Arg, format!("negative ndims {ndims}")));
    }
    // SAFETY: `ndims` ints each (the caller's promise).
    let (d, p) = unsafe { (ints(dims, ndims, "dims")?, ints(periods, ndims, "periods")?) };
    Cart::new(d, p.iter().map(|&x| x != 0).collect())
}

/// The grid's size, which must fit in a communicator of `size`.
fn fits(cart: &Cart, size: i32) -> MpiResult<i32> {
    match cart.size() {
        Some(n) if n <= size => Ok(n),
        _ => Err(err(
            Class::Arg,
            format!("a grid of {:?} does not fit in {size} processes", cart.dims),
        )),
    }
}

/// Collective over `parent`: a communicator of `members` carrying `topo`
/// (`None` for processes not in `members`).
fn with_topology(
    rt: &mut Runtime,
    parent: usize,
    members: Vec<u32>,
    topo: Topology,
) -> MpiResult<MPI_Comm> {
    match rt.comm_create(parent, members)? {
        Some(slot) => {
            rt.comm_mut(slot)?.topo = Some(topo);
            Ok(comm_handle(slot))
        }
        None => Ok(abi::MPI_COMM_NULL),
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call("MPI_Dims_create", abi::MPI_COMM_WORLD, |_| {
        if ndims < 0 {
            return Err(err(Class::Arg, format!("negative ndims {ndims}")));
        }
        if ndims > 0 {
            nonnull(dims, "dims")?;
        }
        let mut d = if ndims == 0 {
            Vec::new()
        } else {
            // SAFETY: `ndims` ints at `dims` (MPI contract).
            unsafe { std::slice::from_raw_parts(dims, ndims as usize) }.to_vec()
        };
        topo::dims_create(nnodes, &mut d)?;
        // SAFETY: as above.
        unsafe { write_ints(dims, ndims, &d, "dims") }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    call("MPI_Cart_create", comm_old, |rt| {
        let parent = comm_slot(comm_old)?;
        let members = rt.intra(parent)?.members.clone();
        // SAFETY: `ndims` ints each (MPI contract).
        let cart = unsafe { cart_from(ndims, dims, periods) }?;
        let n = fits(&cart, members.len() as i32)?;
        nonnull(comm_cart, "comm_cart")?;
        let h = with_topology(
            rt,
            parent,
            members[..n as usize].to_vec(),
            Topology::Cart(cart),
        )?;
        // SAFETY: output argument.
        unsafe { out(comm_cart, h) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_coords(
    comm: MPI_Comm,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_coords", comm, |rt| {
        let (cart, _) = cart_of(rt, comm)?;
        rt.comm(comm_slot(comm)?)?
            .check_rank(rank_arg(rank), "grid", false)?;
        if rank == abi::MPI_PROC_NULL {
            return Err(err(Class::Rank, "MPI_PROC_NULL has no coordinates"));
        }
        // SAFETY: `maxdims` ints at `coords` (MPI contract).
        unsafe { write_ints(coords, maxdims, &cart.coords(rank), "coords") }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_rank(
    comm: MPI_Comm,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    call("MPI_Cart_rank", comm, |rt| {
        let (cart, _) = cart_of(rt, comm)?;
        // SAFETY: `ndims` ints at `coords` (MPI contract).
        let c = unsafe { ints(coords, cart.dims.len() as c_int, "coords") }?;
        let r = cart
            .rank(c)
            .ok_or_else(|| err(Class::Arg, format!("coordinates {c:?} are off the grid")))?;
        // SAFETY: output argument.
        unsafe { out(rank, r) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    call("MPI_Cart_shift", comm, |rt| {
        let (cart, me) = cart_of(rt, comm)?;
        if !(0..cart.dims.len() as c_int).contains(&direction) {
            return Err(err(
                Class::Arg,
                format!(
                    "direction {direction} of a {}-dimensional grid",
                    cart.dims.len()
                ),
            ));
        }
        let (src, dst) = cart.shift(me, direction as usize, disp);
        nonnull(rank_source, "rank_source")?;
        // SAFETY: output arguments.
        unsafe {
            out(rank_source, rank_out(Some(src)))?;
            out(rank_dest, rank_out(Some(dst)))
        }
    })
}

/// Collective over the grid; each process gets the sub-grid through it.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_sub(
    comm: MPI_Comm,
    remain_dims: *const c_int,
    newcomm: *mut MPI_Comm,
) -> c_int {
    call("MPI_Cart_sub", comm, |rt| {
        let parent = comm_slot(comm)?;
        let (cart, me) = cart_of(rt, comm)?;
        // SAFETY: `ndims` ints at `remain_dims` (MPI contract).
        let remain: Vec<bool> =
            unsafe { ints(remain_dims, cart.dims.len() as c_int, "remain_dims") }?
                .iter()
                .map(|&x| x != 0)
                .collect();
        let (ranks, shape) = cart.sub(me, &remain);
        let all = &rt.intra(parent)?.members;
        let members = ranks.iter().map(|&r| all[r as usize]).collect();
        nonnull(newcomm, "newcomm")?;
        let h = with_topology(rt, parent, members, Topology::Cart(shape))?;
        // SAFETY: output argument.
        unsafe { out(newcomm, h) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", comm, |rt| {
        let n = cart_of(rt, comm)?.0.dims.len() as c_int;
        // SAFETY: output argument.
        unsafe { out(ndims, n) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    call("MPI_Cart_get", comm, |rt| {
        let (cart, me) = cart_of(rt, comm)?;
        let p: Vec<c_int> = cart.periods.iter().map(|&x| x as c_int).collect();
        // SAFETY: `maxdims` ints at each array (MPI contract).
        unsafe {
            write_ints(dims, maxdims, &cart.dims, "dims")?;
            write_ints(periods, maxdims, &p, "periods")?;
            write_ints(coords, maxdims, &cart.coords(me), "coords")
        }
    })
}

/// Without reordering: a process keeps its rank if the grid has room
/// for it (MPI-4.0 §8.5.8).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Cart_map", comm, |rt| {
        let c = rt.comm(comm_slot(comm)?)?;
        // SAFETY: `ndims` ints each (MPI contract).
        let cart = unsafe { cart_from(ndims, dims, periods) }?;
        let n = fits(&cart, c.size())?;
        let r = if c.rank < n {
            c.rank
        } else {
            abi::MPI_UNDEFINED
        };
        // SAFETY: output argument.
        unsafe { out(newrank, r) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", comm, |rt| {
        let t = rt
            .comm(comm_slot(comm)?)?
            .topo
            .as_ref()
            .map_or(abi::MPI_UNDEFINED, |t| match t.kind() {
                topo::Kind::Cart => abi::MPI_CART,
                topo::Kind::Graph => abi::MPI_GRAPH,
                topo::Kind::DistGraph => abi::MPI_DIST_GRAPH,
            });
        // SAFETY: output argument.
        unsafe { out(status, t) }
    })
}

/// A graph of `nnodes` nodes from the caller's arrays, checked against a
/// communicator of `size` (MPI-4.0 §8.5.3).
///
/// # Safety
/// `index` has `nnodes` ints and `edges` `index[nnodes-1]` (MPI contract).
unsafe fn graph_from(
    size: i32,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> MpiResult<(Vec<i32>, Vec<i32>)> {
    if !(0..=size).contains(&nnodes) {
        return Err(err(
            Class::Arg,
            format!("{nnodes} graph nodes in a communicator of size {size}"),
        ));
    }
    // SAFETY: `nnodes` ints (the caller's promise).
    let index = unsafe { ints(index, nnodes, "index") }?.to_vec();
    let mut prev = 0;
    for &i in &index {
        if i < prev {
            return Err(err(Class::Arg, format!("decreasing graph index {index:?}")));
        }
        prev = i;
    }
    // SAFETY: `index[nnodes-1]` ints (the caller's promise).
    let edges = unsafe { ints(edges, prev, "edges") }?.to_vec();
    if let Some(e) = edges.iter().find(|&&e| !(0..nnodes).contains(&e)) {
        return Err(err(
            Class::Rank,
            format!("graph edge to {e} of {nnodes} nodes"),
        ));
    }
    Ok((index, edges))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graph_create(
    comm_old: MPI_Comm,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> c_int {
    call("MPI_Graph_create", comm_old, |rt| {
        let parent = comm_slot(comm_old)?;
        let members = rt.intra(parent)?.members.clone();
        // SAFETY: the graph arrays (MPI contract).
        let (index, edges) = unsafe { graph_from(members.len() as i32, nnodes, indx, edges) }?;
        nonnull(comm_graph, "comm_graph")?;
        let members = members[..nnodes as usize].to_vec();
        let h = with_topology(rt, parent, members, Topology::Graph { index, edges })?;
        // SAFETY: output argument.
        unsafe { out(comm_graph, h) }
    })
}

/// The neighbours of `rank` in a graph.
fn graph_neighbors<'a>(index: &[i32], edges: &'a [i32], rank: c_int) -> MpiResult<&'a [i32]> {
    let r = usize::try_from(rank)
        .ok()
        .filter(|&r| r < index.len())
        .ok_or_else(|| {
            err(
                Class::Rank,
                format!("rank {rank} of a graph of {} nodes", index.len()),
            )
        })?;
    let start = if r == 0 { 0 } else { index[r - 1] as usize };
    Ok(&edges[start..index[r] as usize])
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: MPI_Comm,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    call("MPI_Graph_neighbors_count", comm, |rt| {
        let (index, edges) = graph_of(rt, comm)?;
        let n = graph_neighbors(index, edges, rank)?.len() as c_int;
        // SAFETY: output argument.
        unsafe { out(nneighbors, n) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: MPI_Comm,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    call("MPI_Graph_neighbors", comm, |rt| {
        let (index, edges) = graph_of(rt, comm)?;
        let n = graph_neighbors(index, edges, rank)?;
        // SAFETY: `maxneighbors` ints at `neighbors` (MPI contract).
        unsafe { write_ints(neighbors, maxneighbors, n, "neighbors") }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graphdims_get(
    comm: MPI_Comm,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    call("MPI_Graphdims_get", comm, |rt| {
        let (index, edges) = graph_of(rt, comm)?;
        // SAFETY: output arguments.
        unsafe {
            out(nnodes, index.len() as c_int)?;
            out(nedges, edges.len() as c_int)
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    indx: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    call("MPI_Graph_get", comm, |rt| {
        let (index, e) = graph_of(rt, comm)?;
        // SAFETY: `maxindex` and `maxedges` ints (MPI contract).
        unsafe {
            write_ints(indx, maxindex, index, "index")?;
            write_ints(edges, maxedges, e, "edges")
        }
    })
}

/// Without reordering: a process keeps its rank if the graph has a node
/// for it (MPI-4.0 §8.5.8).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: MPI_Comm,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    call("MPI_Graph_map", comm, |rt| {
        let c = rt.comm(comm_slot(comm)?)?;
        // SAFETY: the graph arrays (MPI contract).
        unsafe { graph_from(c.size(), nnodes, indx, edges) }?;
        let r = if c.rank < nnodes {
            c.rank
        } else {
            abi::MPI_UNDEFINED
        };
        // SAFETY: output argument.
        unsafe { out(newrank, r) }
    })
}

/// `degree` weights at `w`, or `None` for `MPI_UNWEIGHTED`.
///
/// # Safety
/// Unless a sentinel, `w` addresses `degree` ints (MPI contract).
unsafe fn weights(w: *const c_int, degree: c_int) -> MpiResult<Option<Vec<c_int>>> {
    if w == MPI_UNWEIGHTED.get() {
        Ok(None)
    } else if w == MPI_WEIGHTS_EMPTY.get() {
        if degree == 0 {
            Ok(Some(Vec::new()))
        } else {
            Err(err(Class::Arg, "MPI_WEIGHTS_EMPTY with edges"))
        }
    } else {
        // SAFETY: `degree` ints (the caller's promise).
        unsafe { ints(w, degree, "weights") }.map(|s| Some(s.to_vec()))
    }
}

fn check_graph_ranks(ranks: &[c_int], size: i32) -> MpiResult<()> {
    match ranks.iter().find(|&&r| !(0..size).contains(&r)) {
        Some(r) => Err(err(
            Class::Rank,
            format!("graph neighbour {r} in a communicator of size {size}"),
        )),
        None => Ok(()),
    }
}

/// Collective over `parent`: a communicator of all its processes with
/// distributed graph edges `g`.
fn create_dist_graph(rt: &mut Runtime, parent: usize, g: DistGraph) -> MpiResult<MPI_Comm> {
    let members = rt.intra(parent)?.members.clone();
    with_topology(rt, parent, members, Topology::DistGraph(g))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    call("MPI_Dist_graph_create_adjacent", comm_old, |rt| {
        let parent = comm_slot(comm_old)?;
        let size = rt.intra(parent)?.size();
        info_hints(info)?;
        // SAFETY: the degrees' worth of ints in each array (MPI contract).
        let (src, sw, dst, dw) = unsafe {
            (
                ints(sources, indegree, "sources")?.to_vec(),
                weights(sourceweights, indegree)?,
                ints(destinations, outdegree, "destinations")?.to_vec(),
                weights(destweights, outdegree)?,
            )
        };
        check_graph_ranks(&src, size)?;
        check_graph_ranks(&dst, size)?;
        nonnull(comm_dist_graph, "comm_dist_graph")?;
        if sw.is_some() != dw.is_some() {
            return Err(err(
                Class::Arg,
                "MPI_UNWEIGHTED for one side of the graph only",
            ));
        }
        let weighted = sw.is_some();
        let g = DistGraph {
            source_weights: sw.unwrap_or_else(|| vec![1; src.len()]),
            dest_weights: dw.unwrap_or_else(|| vec![1; dst.len()]),
            sources: src,
            destinations: dst,
            weighted,
        };
        let h = create_dist_graph(rt, parent, g)?;
        // SAFETY: output argument.
        unsafe { out(comm_dist_graph, h) }
    })
}

/// Every process names any edges; each learns its own by an exchange of
/// all edges (MPI-4.0 §8.5.4).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_in: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    call("MPI_Dist_graph_create", comm_old, |rt| {
        let parent = comm_slot(comm_old)?;
        let (size, me) = {
            let c = rt.intra(parent)?;
            (c.size(), c.rank)
        };
        info_hints(info)?;
        // SAFETY: `n` sources and degrees (MPI contract).
        let (src, deg) = unsafe { (ints(sources, n, "sources")?, ints(degrees, n, "degrees")?) };
        if let Some(d) = deg.iter().find(|&&d| d < 0) {
            return Err(err(Class::Arg, format!("negative degree {d}")));
        }
        let total = deg.iter().map(|&d| i64::from(d)).sum::<i64>();
        let total = c_int::try_from(total).map_err(|_| err(Class::Arg, "too many edges"))?;
        // SAFETY: the degrees' sum of destinations and weights (MPI contract).
        let (dst, w) = unsafe {
            (
                ints(destinations, total, "destinations")?,
                weights(weights_in, total)?,
            )
        };
        check_graph_ranks(src, size)?;
        check_graph_ranks(dst, size)?;
        nonnull(comm_dist_graph, "comm_dist_graph")?;
        // Edges as (source, destination, weight) triplets.
        let mut mine = Vec::with_capacity(dst.len() * 12);
        let mut k = 0;
        for (&s, &d) in src.iter().zip(deg) {
            for _ in 0..d {
                let wt = w.as_ref().map_or(1, |w| w[k]);
                for v in [s, dst[k], wt] {
                    mine.extend_from_slice(&v.to_ne_bytes());
                }
                k += 1;
            }
        }
        let flag = [w.is_some() as u8];
        let all = rt.allgather_var(parent, &[&flag[..], &mine].concat())?;
        let mut g = DistGraph::default();
        for block in &all {
            g.weighted |= block[0] != 0;
            for e in block[1..].chunks_exact(12) {
                let v = |i: usize| c_int::from_ne_bytes([e[i], e[i + 1], e[i + 2], e[i + 3]]);
                let (s, d, wt) = (v(0), v(4), v(8));
                if d == me {
                    g.sources.push(s);
                    g.source_weights.push(wt);
                }
                if s == me {
                    g.destinations.push(d);
                    g.dest_weights.push(wt);
                }
            }
        }
        let h = create_dist_graph(rt, parent, g)?;
        // SAFETY: output argument.
        unsafe { out(comm_dist_graph, h) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors_count", comm, |rt| {
        let g = dist_graph_of(rt, comm)?;
        // SAFETY: output arguments.
        unsafe {
            out(indegree, g.sources.len() as c_int)?;
            out(outdegree, g.destinations.len() as c_int)?;
            out(weighted, g.weighted as c_int)
        }
    })
}

/// Weights are written only for a weighted graph, and only where the
/// caller passes an array (not `MPI_UNWEIGHTED`).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    call("MPI_Dist_graph_neighbors", comm, |rt| {
        let g = dist_graph_of(rt, comm)?;
        let wanted =
            |p: *mut c_int| g.weighted && !p.is_null() && p.cast_const() != MPI_UNWEIGHTED.get();
        // SAFETY: `maxindegree` / `maxoutdegree` ints at each array (MPI
        // contract).
        unsafe {
            write_ints(sources, maxindegree, &g.sources, "sources")?;
            write_ints(destinations, maxoutdegree, &g.destinations, "destinations")?;
            if wanted(sourceweights) {
                write_ints(
                    sourceweights,
                    maxindegree,
                    &g.source_weights,
                    "sourceweights",
                )?;
            }
            if wanted(destweights) {
                write_ints(destweights, maxoutdegree, &g.dest_weights, "destweights")?;
            }
        }
        Ok(())
    })
}
