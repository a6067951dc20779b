/* svmlight/libsvm text: a block parser (scikit-learn's results, svmcore/data/nativesvm.py), a
 * writer (the same bytes as scikit-learn's
 * dump_svmlight_file), and a scan that counts rows, nonzeros and the largest id.
 * Plain C99 + gcc builtins; loaded with ctypes by svmcore/data/native/__init__.py. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

enum { OK = 0, INVALID = 1, NONFINITE = 2 };

/* 5**q for q in [-342, 308] as 128-bit (hi, lo) pairs: filled once by the loader
 * (svmlight_lines._power_of_five_table). */
static uint64_t POW5[2 * 651];
static int pow5_ready = 0;
#define SMALLEST_POW10 (-342)
#define LARGEST_POW10 308

void svm_set_pow5(const uint64_t *table) {
    memcpy(POW5, table, sizeof POW5);
    pow5_ready = 1;
}

static inline int is_ws(uint8_t c) { return c == 32 || c == 9 || c == 13 || c == 11 || c == 12; }
static inline int is_end(uint8_t c) { return c == 32 || c == 10 || c == 9 || c == 13 || c == 35 || c == 11 || c == 12; }

/* Correctly rounded w * 10**q (w > 0): the Eisel-Lemire algorithm. Returns the 52-bit mantissa; *p2 = biased exponent, 2047 = inf. */
static uint64_t eisel_lemire(int64_t q, uint64_t w, int64_t *p2) {
    if (q < SMALLEST_POW10) { *p2 = 0; return 0; }
    if (q > LARGEST_POW10) { *p2 = 2047; return 0; }
    int lz = __builtin_clzll(w);
    w <<= lz;
    int64_t idx = 2 * (q - SMALLEST_POW10);
    __uint128_t prod = (__uint128_t)w * POW5[idx];
    uint64_t hi = (uint64_t)(prod >> 64), lo = (uint64_t)prod;
    if ((hi & 0x1FF) == 0x1FF) {
        __uint128_t prod2 = (__uint128_t)w * POW5[idx + 1];
        uint64_t hi2 = (uint64_t)(prod2 >> 64);
        lo = lo + hi2;
        if (hi2 > lo) hi += 1;
    }
    int64_t upperbit = (int64_t)(hi >> 63);
    int shift = (int)(upperbit + 9);
    uint64_t mant = hi >> shift;
    int64_t power2 = ((217706 * q) >> 16) + 63 + upperbit - lz + 1023;
    if (power2 <= 0) {
        if (-power2 + 1 >= 64) { *p2 = 0; return 0; }
        mant >>= (-power2 + 1);
        mant += (mant & 1);
        mant >>= 1;
        if (mant < (1ULL << 52)) { *p2 = 0; return mant; }
        *p2 = 1;
        return mant & ~(1ULL << 52);
    }
    if (lo <= 1 && q >= -4 && q <= 23 && (mant & 3) == 1) {
        if ((mant << shift) == hi) mant &= ~1ULL;
    }
    mant += (mant & 1);
    mant >>= 1;
    if (mant >= (1ULL << 53)) { mant = 1ULL << 52; power2 += 1; }
    mant &= ~(1ULL << 52);
    if (power2 >= 2047) { *p2 = 2047; return 0; }
    *p2 = power2;
    return mant;
}

static inline int to_bits(int neg, uint64_t w, int64_t exp10, uint64_t *bits) {
    uint64_t sign = neg ? (1ULL << 63) : 0;
    if (w == 0) { *bits = sign; return OK; }
    int64_t p2;
    uint64_t mant = eisel_lemire(exp10, w, &p2);
    if (p2 >= 2047) return NONFINITE;
    *bits = mant | ((uint64_t)p2 << 52) | sign;
    return OK;
}

/* More than 19 significant digits: the C library's strtod, correctly rounded like
 * Python's float() (the token was checked against the grammar already). */
static int slow_number(const uint8_t *buf, int64_t start, int64_t end, uint64_t *bits) {
    char small[128];
    int64_t len = end - start;
    char *s = len < (int64_t)sizeof small ? small : malloc((size_t)len + 1);
    if (!s) return INVALID;
    memcpy(s, buf + start, (size_t)len);
    s[len] = 0;
    double v = strtod(s, NULL);
    if (s != small) free(s);
    if (__builtin_isinf(v) || __builtin_isnan(v)) return NONFINITE;
    memcpy(bits, &v, 8);
    return OK;
}

static inline uint64_t load8(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline int eight_digits(uint64_t v) {
    return (((v + 0x4646464646464646ULL) | (v - 0x3030303030303030ULL)) & 0x8080808080808080ULL) == 0;
}
static inline uint64_t parse8(uint64_t v) {
    v -= 0x3030303030303030ULL;
    v = v * 10 + (v >> 8);
    const uint64_t m = 0x000000FF000000FFULL;
    return ((v & m) * 0x000F424000000064ULL + ((v >> 16) & m) * 0x0000271000000001ULL) >> 32;
}

/* One number at buf[*pos:n]: a label or a value. */
static inline int parse_number(const uint8_t *buf, int64_t *ppos, int64_t n, uint64_t *bits) {
    int64_t pos = *ppos, start = pos;
    int neg = 0;
    if (pos < n) {
        if (buf[pos] == '-') { neg = 1; pos++; }
        else if (buf[pos] == '+') pos++;
    }
    int64_t digits_start = pos;
    while (pos < n && buf[pos] == '0') pos++;
    int64_t sig_start = pos;
    uint64_t w = 0;
    while (pos < n) {
        unsigned d = (unsigned)buf[pos] - '0';
        if (d > 9) break;
        w = w * 10 + d;
        pos++;
    }
    int64_t nsig = pos - sig_start, nseen = pos - digits_start, exp10 = 0;
    if (pos < n && buf[pos] == '.') {
        pos++;
        int64_t frac_start = pos;
        if (nsig == 0) while (pos < n && buf[pos] == '0') pos++;
        int64_t frac_sig = pos;
        while (pos + 8 <= n) {
            uint64_t v = load8(buf + pos);
            if (!eight_digits(v)) break;
            w = w * 100000000ULL + parse8(v);
            pos += 8;
        }
        while (pos < n) {
            unsigned d = (unsigned)buf[pos] - '0';
            if (d > 9) break;
            w = w * 10 + d;
            pos++;
        }
        nsig += pos - frac_sig;
        nseen += pos - frac_start;
        exp10 = frac_start - pos;
    }
    if (nseen == 0) { *ppos = pos; return INVALID; }
    if (pos < n && (buf[pos] == 'e' || buf[pos] == 'E')) {
        pos++;
        int eneg = 0;
        if (pos < n && (buf[pos] == '-' || buf[pos] == '+')) { eneg = buf[pos] == '-'; pos++; }
        int64_t e = 0, ne = 0;
        while (pos < n) {
            unsigned d = (unsigned)buf[pos] - '0';
            if (d > 9) break;
            if (e < 100000) e = e * 10 + d;
            ne++;
            pos++;
        }
        if (ne == 0) { *ppos = pos; return INVALID; }
        exp10 += eneg ? -e : e;
    }
    if (pos < n && !is_end(buf[pos])) { *ppos = pos; return INVALID; }
    *ppos = pos;
    if (nsig > 19) return slow_number(buf, start, pos, bits);
    return to_bits(neg, w, exp10, bits);
}

void svm_count(const uint8_t *buf, int64_t n, int64_t *colons, int64_t *newlines) {
    int64_t c = 0, nl = 0;
    for (int64_t i = 0; i < n; i++) {
        c += buf[i] == ':';
        nl += buf[i] == '\n';
    }
    *colons = c;
    *newlines = nl;
}

int64_t svm_find_newline(const uint8_t *buf, int64_t pos, int64_t n) {
    const void *p = memchr(buf + pos, '\n', (size_t)(n - pos));
    return p ? (const uint8_t *)p - buf : n;
}

int64_t svm_rfind_newline(const uint8_t *buf, int64_t lo, int64_t hi) {
    const void *p = memrchr(buf + lo, '\n', (size_t)(hi - lo));
    return p ? (const uint8_t *)p - buf : -1;
}

/* state: pos, nnz, rows, max_id, line_no, data_no, first_row_line (in and out).
 * Parses lines until the end or a line that needs the Python path; on a non-OK
 * status, state[0] is the start of that line and the counters exclude it. */
int svm_scan(const uint8_t *buf, int64_t n, int64_t max_features, double *data, int32_t *indices,
             int64_t *indptr, double *y, int64_t *state) {
    int64_t pos = state[0], nnz = state[1], rows = state[2], max_id = state[3];
    int64_t line_no = state[4], data_no = state[5], first_row_line = state[6];
    int st = OK;
    while (pos < n) {
        int64_t line_start = pos;
        while (pos < n && is_ws(buf[pos])) pos++;
        if (pos == n) break;
        uint8_t c = buf[pos];
        if (c == '\n') { pos++; line_no++; continue; }
        if (c == '#') {
            while (pos < n && buf[pos] != '\n') pos++;
            if (pos < n) { pos++; line_no++; }
            continue;
        }
        uint64_t label;
        st = parse_number(buf, &pos, n, &label);
        if (st != OK) { pos = line_start; goto out; }
        int64_t k = nnz, prev = 0;
        int first = 1;
        for (;;) {
            while (pos < n && is_ws(buf[pos])) pos++;
            if (pos >= n) break;
            c = buf[pos];
            if (c == '\n') break;
            if (c == '#') {
                while (pos < n && buf[pos] != '\n') pos++;
                break;
            }
            if (first && c == 'q' && pos + 3 < n && buf[pos + 1] == 'i' && buf[pos + 2] == 'd' && buf[pos + 3] == ':') {
                while (pos < n && !is_end(buf[pos])) pos++;
                first = 0;
                continue;
            }
            first = 0;
            int64_t fid = 0, nd = 0;
            while (pos < n) {
                unsigned d = (unsigned)buf[pos] - '0';
                if (d > 9) break;
                fid = fid * 10 + d;
                nd++;
                pos++;
                if (nd > 10) break;
            }
            if (nd == 0 || nd > 10 || fid <= 0 || fid > max_features || fid <= prev || pos >= n || buf[pos] != ':') {
                st = INVALID; pos = line_start; goto out;
            }
            pos++;
            uint64_t v;
            st = parse_number(buf, &pos, n, &v);
            if (st != OK) { pos = line_start; goto out; }
            memcpy(&data[k], &v, 8);
            indices[k] = (int32_t)(fid - 1);
            k++;
            prev = fid;
        }
        if (prev > max_id) max_id = prev;
        if (rows == 0 && first_row_line < 0) first_row_line = line_no;
        memcpy(&y[rows], &label, 8);
        rows++;
        nnz = k;
        indptr[rows] = nnz;
        data_no++;
        if (pos < n) { pos++; line_no++; }
    }
    st = OK;
out:
    state[0] = pos; state[1] = nnz; state[2] = rows; state[3] = max_id;
    state[4] = line_no; state[5] = data_no; state[6] = first_row_line;
    return st;
}

/* ---------------------------------------------------------------- writer */

/* Python's "%.16g" % v: glibc's printf is correctly rounded as Python's is, and
 * spells inf/nan the same way Python does not, but svmlight values are finite. */
static inline char *put_g16(char *p, double v) {
    return p + sprintf(p, "%.16g", v);
}

static inline char *put_int(char *p, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    if (v < 0) *p++ = '-';
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    while (n) *p++ = tmp[--n];
    return p;
}

/* Rows [r0, r1) of a CSR matrix as dump_svmlight_file(zero_based=False) writes them:
 * "label id:value ...\n" ("%.16g" for float labels and values, "%d" for integer
 * labels). Returns the bytes written to out, or -1 if out is too small (cap). */
int64_t svm_write_rows(const double *data, const int32_t *indices, const int64_t *indptr,
                       const double *yf, const int64_t *yi, int64_t r0, int64_t r1,
                       char *out, int64_t cap) {
    char *p = out, *end = out + cap;
    for (int64_t i = r0; i < r1; i++) {
        int64_t lo = indptr[i], hi = indptr[i + 1];
        if (end - p < 64 + (hi - lo) * 48) return -1;
        p = yi ? put_int(p, yi[i]) : put_g16(p, yf[i]);
        *p++ = ' ';
        for (int64_t k = lo; k < hi; k++) {
            if (k > lo) *p++ = ' ';
            p = put_int(p, (int64_t)indices[k] + 1);
            *p++ = ':';
            p = put_g16(p, data[k]);
        }
        *p++ = '\n';
    }
    return p - out;
}

int64_t svm_count_newlines(const uint8_t *buf, int64_t n) {
    int64_t nl = 0;
    const uint8_t *p = buf, *end = buf + n;
    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        nl++;
        p++;
    }
    return nl;
}
