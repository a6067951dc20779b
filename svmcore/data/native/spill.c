/* The stream spill's shuffled windows (svmcore/data/spill.py): the pieces of a window read
 * from the spill's four files in one call, a positioned read of each file a piece, without
 * the GIL and without a Python call per read (which was most of a shuffled pass's reading). */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

/* nbytes of fd from offset into buf: 0, -1 (errno says why) or -2 (the file ended first). */
static int64_t read_at(int fd, char *buf, int64_t nbytes, int64_t offset) {
    while (nbytes > 0) {
        ssize_t got = pread(fd, buf, (size_t)nbytes, (off_t)offset);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) return -2;
        buf += got;
        nbytes -= got;
        offset += got;
    }
    return 0;
}

/* Piece p is rows r0[p]..r1[p] and nonzeros z0[p]..z1[p] of the spill; the pieces' values
 * (itemsize bytes each), column ids, row lengths and class codes (int32) are written one piece
 * after another into data, indices, lengths and codes. Returns 0, -1 (errno says why) or -2
 * (a file is shorter than its pieces). */
int64_t spill_read_pieces(int64_t fd_data, int64_t fd_indices, int64_t fd_lengths, int64_t fd_codes,
                          int64_t itemsize, const int64_t *r0, const int64_t *r1, const int64_t *z0,
                          const int64_t *z1, int64_t n, char *data, int32_t *indices, int32_t *lengths,
                          int32_t *codes) {
    int64_t r = 0, z = 0, status = 0;
    for (int64_t p = 0; p < n && status == 0; p++) {
        int64_t rows = r1[p] - r0[p], nnz = z1[p] - z0[p];
        status = read_at((int)fd_data, data + z * itemsize, nnz * itemsize, z0[p] * itemsize);
        if (status == 0) status = read_at((int)fd_indices, (char *)(indices + z), nnz * 4, z0[p] * 4);
        if (status == 0) status = read_at((int)fd_lengths, (char *)(lengths + r), rows * 4, r0[p] * 4);
        if (status == 0) status = read_at((int)fd_codes, (char *)(codes + r), rows * 4, r0[p] * 4);
        r += rows;
        z += nnz;
    }
    return status;
}

/* Entries entries[0..n) of the spill's index file (int64 each) into out; runs of consecutive
 * entries (a piece's first and end entries, neighbouring pieces) are read with one pread.
 * Returns 0, -1 (errno says why) or -2 (the file is shorter than its entries). */
int64_t spill_read_entries(int64_t fd, const int64_t *entries, int64_t n, int64_t *out) {
    int64_t i = 0, status = 0;
    while (i < n && status == 0) {
        int64_t j = i + 1;
        while (j < n && entries[j] == entries[j - 1] + 1) j++;
        status = read_at((int)fd, (char *)(out + i), (j - i) * 8, entries[i] * 8);
        i = j;
    }
    return status;
}
