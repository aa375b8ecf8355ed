/* MPI_Alloc_mem / MPI_Free_mem (MPI-4.0 §9.2): memory from the shared heap
 * is 64-byte aligned and usable as send and receive buffers of every size
 * (inline, eager, rendezvous), into and out of ordinary memory too; freed
 * blocks are reused; MPI_Free_mem of anything but a live block is
 * MPI_ERR_BASE; an impossible size is MPI_ERR_NO_MEM. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static unsigned char pattern(int rank, size_t i) { return (unsigned char)(rank * 31 + i * 7); }

/* Send `len` bytes from `out` to the next rank, receive into `in` from the
 * previous one, and check what arrived. */
static void ring(unsigned char *out, unsigned char *in, size_t len, int rank, int size) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t i = 0; i < len; i++) out[i] = pattern(rank, i);
    memset(in, 0, len);
    MPI_Request reqs[2];
    MPI_Status st[2];
    OK(MPI_Irecv(in, (int)len, MPI_BYTE, prev, 5, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Isend(out, (int)len, MPI_BYTE, next, 5, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Waitall(2, reqs, st));
    int got = -1;
    OK(MPI_Get_count(&st[0], MPI_BYTE, &got));
    CHECK(got == (int)len, "received %d of %zu bytes", got, len);
    for (size_t i = 0; i < len; i++)
        CHECK(in[i] == pattern(prev, i), "byte %zu of %zu from %d: %d", i, len, prev, in[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    report_library();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const size_t sizes[] = {1, 100, 4000, 65536, 3 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t len = sizes[k];
        unsigned char *out = NULL, *in = NULL, *plain = malloc(len);
        OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &out));
        OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &in));
        CHECK(out && in && plain, "allocation of %zu", len);
        CHECK((uintptr_t)out % 64 == 0 && (uintptr_t)in % 64 == 0, "alignment %p %p", out, in);
        ring(out, in, len, rank, size);   /* heap to heap */
        ring(out, plain, len, rank, size); /* heap to private */
        ring(plain, in, len, rank, size);  /* private to heap */
        OK(MPI_Free_mem(in));
        OK(MPI_Free_mem(out));
        free(plain);
    }

    /* Blocks freed in any order are reused: many rounds of allocations
     * stay valid and distinct. */
    for (int round = 0; round < 20; round++) {
        unsigned char *b[16];
        for (int i = 0; i < 16; i++) {
            OK(MPI_Alloc_mem(1000 * (i + 1), MPI_INFO_NULL, &b[i]));
            memset(b[i], i, 1000 * (i + 1));
        }
        for (int i = 0; i < 16; i++)
            CHECK(b[i][0] == i && b[i][1000 * (i + 1) - 1] == i, "block %d overwritten", i);
        for (int i = 0; i < 16; i += 2) OK(MPI_Free_mem(b[i]));
        for (int i = 15; i > 0; i -= 2) OK(MPI_Free_mem(b[i]));
    }

    /* Zero bytes still give a distinct address. */
    void *z1 = NULL, *z2 = NULL;
    OK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z1));
    OK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z2));
    CHECK(z1 && z2 && z1 != z2, "zero-size blocks %p %p", z1, z2);
    OK(MPI_Free_mem(z1));
    OK(MPI_Free_mem(z2));

    /* Not a live block: MPI_ERR_BASE, and the live block stays usable. */
    char *mem = NULL, *plain = malloc(64);
    OK(MPI_Alloc_mem(256, MPI_INFO_NULL, &mem));
    EXPECT(MPI_Free_mem(plain), MPI_ERR_BASE);
    EXPECT(MPI_Free_mem(mem + 64), MPI_ERR_BASE);
    memset(mem, 1, 256);
    OK(MPI_Free_mem(mem));
    EXPECT(MPI_Free_mem(mem), MPI_ERR_BASE);
    OK(MPI_Free_mem(NULL));
    free(plain);

    /* No memory for an impossible size, a negative one is MPI_ERR_SIZE. */
    void *none = NULL;
    EXPECT(MPI_Alloc_mem((MPI_Aint)(SIZE_MAX >> 1), MPI_INFO_NULL, &none), MPI_ERR_NO_MEM);
    EXPECT(MPI_Alloc_mem(-1, MPI_INFO_NULL, &none), MPI_ERR_SIZE);
    CHECK(none == NULL, "output written on error");

    MPI_Finalize();
    printf("mem: rank %d ok\n", rank);
    return 0;
}
