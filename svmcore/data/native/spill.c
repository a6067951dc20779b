/* The stream spill's shuffled windows (svmcore/data/spill.py): the pieces of a window read
 * from two of the spill's files in one call, a positioned read of each file a piece, without
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

/* Piece p is items first[p]..end[p] of two of the spill's files read side by side: a window's
 * values (size_a bytes each) and column ids (4 bytes) from their nonzeros' range, or its row
 * lengths and class codes (4 bytes each) from its rows' range. The pieces' items are written one
 * piece after another into out_a and out_b. Returns 0, -1 (errno says why) or -2 (a file is
 * shorter than its pieces). */
int64_t spill_read_ranges(int64_t fd_a, int64_t size_a, char *out_a, int64_t fd_b, int64_t size_b, char *out_b,
                          const int64_t *first, const int64_t *end, int64_t n) {
    int64_t at = 0, status = 0;
    for (int64_t p = 0; p < n && status == 0; p++) {
        int64_t items = end[p] - first[p];
        status = read_at((int)fd_a, out_a + at * size_a, items * size_a, first[p] * size_a);
        if (status == 0) status = read_at((int)fd_b, out_b + at * size_b, items * size_b, first[p] * size_b);
        at += items;
    }
    return status;
}

/* Entries entries[0..n) of the spill's index file (int64 each) into out. Entries that come in
 * order and lie within SPAN_ENTRIES of the first of their run (a piece's first and end entries,
 * and pieces near each other) are read with one pread of the span between them, into a buffer
 * on the stack: a window's 512 entries were as many preads, most of the time it took to plan
 * a window, where one read of a few KiB costs about as much as one of 8 bytes.
 * Returns 0, -1 (errno says why) or -2 (the file is shorter than its entries). */
#define SPAN_ENTRIES 512
int64_t spill_read_entries(int64_t fd, const int64_t *entries, int64_t n, int64_t *out) {
    int64_t span[SPAN_ENTRIES];
    int64_t i = 0, status = 0;
    while (i < n && status == 0) {
        int64_t lo = entries[i], j = i + 1;
        while (j < n && entries[j] >= entries[j - 1] && entries[j] - lo < SPAN_ENTRIES) j++;
        status = read_at((int)fd, (char *)span, (entries[j - 1] - lo + 1) * 8, lo * 8);
        for (int64_t k = i; k < j && status == 0; k++) out[k] = span[entries[k] - lo];
        i = j;
    }
    return status;
}
