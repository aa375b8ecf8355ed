"""mpi4py on Tessel's MPI library: run by tools/tests/clients.rs through
mpiexec on several processes. Prints `mpi4py: rank R ok` at the end."""

import sys
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert MPI.Is_initialized()
if rank == 0:
    sys.stdout.write(f"library: {MPI.Get_library_version()[:60]}\n")
    sys.stdout.flush()

# A Python object around a ring (pickled point-to-point).
right, left = (rank + 1) % size, (rank - 1) % size
mine = {"from": rank, "items": list(range(rank + 3)), "text": "x" * (1000 * rank)}
got = comm.sendrecv(mine, dest=right, sendtag=7, source=left, recvtag=7)
assert got == {"from": left, "items": list(range(left + 3)), "text": "x" * (1000 * left)}, got

req = comm.isend(("tagged", rank), dest=right, tag=11)
assert comm.recv(source=left, tag=11) == ("tagged", left)
req.wait()

# Buffers without numpy: the array module exports the buffer protocol.
a = array("d", [float(rank)] * 8)
b = array("d", [0.0] * 8)
comm.Allreduce(a, b, op=MPI.SUM)
assert list(b) == [float(size * (size - 1) // 2)] * 8, b
n = array("i", [rank + 1])
m = array("i", [0])
comm.Allreduce(n, m, op=MPI.MAX)
assert m[0] == size, m

# Broadcasts: an object and a buffer.
obj = comm.bcast({"root": "hello", "size": size} if rank == 0 else None, root=0)
assert obj == {"root": "hello", "size": size}, obj
buf = array("i", range(100)) if rank == 0 else array("i", [0] * 100)
comm.Bcast(buf, root=0)
assert list(buf) == list(range(100)), buf

comm.Barrier()
# One write per line, so the lines of several processes never interleave.
sys.stdout.write(f"mpi4py: rank {rank} ok\n")
sys.stdout.flush()
