/* A linear SVM trained by SGD (hinge loss, L2, scikit-learn's "optimal" learning
 * rate, optional averaging, the sparse intercept decay): scikit-learn's algorithm, so
 * weights match its to rounding (svmcore/worker/native_sgd.py). Plus the decision
 * function and CSR row gathering. */
#include <stdint.h>
#include <string.h>

#define MIN_WSCALE 1e-9
enum { WSCALE = 0, B = 1, AA = 2, AB = 3, AI = 4, STATE_WIDTH = 5 };

/* The state row's layout, for the Python side to check against its own (svmcore/data/native/binding.py
 * SGD_STATE): fields[k] is the index of field k; returns the width. */
int64_t sgd_state_layout(int64_t *fields) {
    fields[0] = WSCALE;
    fields[1] = B;
    fields[2] = AA;
    fields[3] = AB;
    fields[4] = AI;
    return STATE_WIDTH;
}

/* Each kernel comes in a float64 and a float32 model state (W: the weights and their average; the
 * arithmetic is double either way, a float32 weight rounded where it is stored), suffix _s32. */
#define DEFINE_STATE(S, W)                                                                           \
static void reset_scale##S(W *w, W *aw, double *st, int64_t nf, int average) {                       \
    if (average) {                                                                                   \
        double a = st[AA], b = st[AB];                                                               \
        for (int64_t j = 0; j < nf; j++) aw[j] = (aw[j] + a * w[j]) / b;                             \
        st[AA] = 0.0;                                                                                \
        st[AB] = 1.0;                                                                                \
    }                                                                                                \
    double s = st[WSCALE];                                                                           \
    for (int64_t j = 0; j < nf; j++) w[j] *= s;                                                      \
    st[WSCALE] = 1.0;                                                                                \
}                                                                                                    \
/* Folds each vector's lazy scale (and average factors) into its weights: the same numbers,          \
 * with wscale 1 and average_a 0, average_b 1 (what parameter mixing averages). */                  \
void sgd_fold_scale##S(W *w, W *aw, double *st, int64_t nvec, int64_t nf, int average) {             \
    for (int64_t v = 0; v < nvec; v++)                                                               \
        reset_scale##S(w + v * nf, average ? aw + v * nf : aw, st + v * STATE_WIDTH, nf, average);   \
}

DEFINE_STATE(, double)
DEFINE_STATE(_s32, float)

#define DEFINE_FIT(NAME, T, S, W)                                                                    \
double NAME(const T *data, const int32_t *indices, const int64_t *indptr, int64_t n_rows,            \
            const int64_t *codes, W *w, W *aw, double *st, int64_t nvec, int64_t nf,                 \
            double t, double alpha, double optimal_init, double decay, int average) {                \
    for (int64_t i = 0; i < n_rows; i++) {                                                           \
        int64_t lo = indptr[i], hi = indptr[i + 1];                                                  \
        const int32_t *cols = indices + lo;                                                          \
        const T *vals = data + lo;                                                                   \
        int64_t n = hi - lo;                                                                         \
        double eta = 1.0 / (alpha * (optimal_init + t - 1.0));                                       \
        for (int64_t v = 0; v < nvec; v++) {                                                         \
            W *wv = w + v * nf, *awv = average ? aw + v * nf : aw;                                   \
            double *s_ = st + v * STATE_WIDTH;                                                       \
            double dot = 0.0;                                                                        \
            for (int64_t k = 0; k < n; k++) dot += (double)wv[cols[k]] * (double)vals[k];            \
            double p = dot * s_[WSCALE] + s_[B];                                                     \
            double target = codes[i] == (nvec == 1 ? 1 : v) ? 1.0 : -1.0;                            \
            double dloss = p * target <= 1.0 ? -target : 0.0;                                        \
            double update = -eta * dloss;                                                            \
            double f = 1.0 - eta * alpha;                                                            \
            s_[WSCALE] *= f > 0.0 ? f : 0.0;                                                         \
            if (s_[WSCALE] < MIN_WSCALE) reset_scale##S(wv, awv, s_, nf, average);                   \
            double s = s_[WSCALE];                                                                   \
            if (update != 0.0) {                                                                     \
                double c = update / s;                                                               \
                for (int64_t k = 0; k < n; k++) wv[cols[k]] += (double)vals[k] * c;                  \
                s_[B] += update * decay;                                                             \
            }                                                                                        \
            if (average) {                                                                           \
                double mu = 1.0 / t;                                                                 \
                if (update != 0.0) {                                                                 \
                    double c = -s_[AA] * update / s;                                                 \
                    for (int64_t k = 0; k < n; k++) awv[cols[k]] += (double)vals[k] * c;             \
                }                                                                                    \
                if (t > 1.0) s_[AB] /= (1.0 - mu);                                                   \
                s_[AA] += mu * s_[AB] * s;                                                           \
                s_[AI] += (s_[B] - s_[AI]) / t;                                                      \
            }                                                                                        \
        }                                                                                            \
        t += 1.0;                                                                                    \
    }                                                                                                \
    return t;                                                                                        \
}

DEFINE_FIT(sgd_fit_f64, double, , double)
DEFINE_FIT(sgd_fit_f32, float, , double)
DEFINE_FIT(sgd_fit_f64_s32, double, _s32, float)
DEFINE_FIT(sgd_fit_f32_s32, float, _s32, float)

/* scores[i, v] = X[i] . coef[v] + intercept[v] over CSR rows. */
#define DEFINE_DECISION(NAME, T, W)                                                                   \
void NAME(const T *data, const int32_t *indices, const int64_t *indptr, int64_t n_rows,             \
          const W *coef, const double *intercept, int64_t nvec, int64_t nf, double *scores) {        \
    for (int64_t i = 0; i < n_rows; i++) {                                                           \
        int64_t lo = indptr[i], hi = indptr[i + 1];                                                  \
        for (int64_t v = 0; v < nvec; v++) {                                                         \
            const W *c = coef + v * nf;                                                              \
            double s = 0.0;                                                                          \
            for (int64_t k = lo; k < hi; k++) s += (double)data[k] * (double)c[indices[k]];          \
            scores[i * nvec + v] = s + intercept[v];                                                 \
        }                                                                                            \
    }                                                                                                \
}

DEFINE_DECISION(decision_f64, double, double)
DEFINE_DECISION(decision_f32, float, double)
DEFINE_DECISION(decision_f64_s32, double, float)
DEFINE_DECISION(decision_f32_s32, float, float)

/* Rows `take` of a CSR matrix into preallocated arrays (out_indptr[0] = 0);
 * itemsize is the size of one stored value (8 or 4 bytes). */
void csr_gather(const void *data, const int32_t *indices, const int64_t *indptr, int64_t itemsize,
                const int64_t *take, int64_t m, void *out_data, int32_t *out_indices, int64_t *out_indptr) {
    int64_t z = 0;
    out_indptr[0] = 0;
    for (int64_t r = 0; r < m; r++) {
        int64_t lo = indptr[take[r]], hi = indptr[take[r] + 1], n = hi - lo;
        memcpy((char *)out_data + z * itemsize, (const char *)data + lo * itemsize, (size_t)(n * itemsize));
        memcpy(out_indices + z, indices + lo, (size_t)n * 4);
        z += n;
        out_indptr[r + 1] = z;
    }
}

/* The averaged model's scores without materialising its weights:
 * scores[i, v] = (X[i] . aw[v] + a[v] * X[i] . w[v]) / b[v] + intercept[v]. */
#define DEFINE_DECISION_AVG(NAME, T, W)                                                              \
void NAME(const T *data, const int32_t *indices, const int64_t *indptr, int64_t n_rows,             \
          const W *w, const W *aw, const double *a, const double *b,                                \
          const double *intercept, int64_t nvec, int64_t nf, double *scores) {                       \
    for (int64_t i = 0; i < n_rows; i++) {                                                           \
        int64_t lo = indptr[i], hi = indptr[i + 1];                                                  \
        for (int64_t v = 0; v < nvec; v++) {                                                         \
            const W *wv = w + v * nf, *av = aw + v * nf;                                             \
            double sw = 0.0, sa = 0.0;                                                               \
            for (int64_t k = lo; k < hi; k++) {                                                      \
                sw += (double)data[k] * (double)wv[indices[k]];                                      \
                sa += (double)data[k] * (double)av[indices[k]];                                      \
            }                                                                                        \
            scores[i * nvec + v] = (sa + a[v] * sw) / b[v] + intercept[v];                           \
        }                                                                                            \
    }                                                                                                \
}

DEFINE_DECISION_AVG(decision_avg_f64, double, double)
DEFINE_DECISION_AVG(decision_avg_f32, float, double)
DEFINE_DECISION_AVG(decision_avg_f64_s32, double, float)
DEFINE_DECISION_AVG(decision_avg_f32_s32, float, float)

/* Rows of several CSR parts at once, without stacking them first: output row r is row
 * rows[r] of part parts[r]; data_p/indices_p/indptr_p hold each part's array addresses. */
void csr_gather_parts(const int64_t *data_p, const int64_t *indices_p, const int64_t *indptr_p, int64_t itemsize,
                      const int64_t *parts, const int64_t *rows, int64_t m,
                      void *out_data, int32_t *out_indices, int64_t *out_indptr) {
    int64_t z = 0;
    out_indptr[0] = 0;
    for (int64_t r = 0; r < m; r++) {
        int64_t p = parts[r];
        const int64_t *ip = (const int64_t *)indptr_p[p];
        int64_t lo = ip[rows[r]], hi = ip[rows[r] + 1], n = hi - lo;
        memcpy((char *)out_data + z * itemsize, (const char *)data_p[p] + lo * itemsize, (size_t)(n * itemsize));
        memcpy(out_indices + z, (const int32_t *)indices_p[p] + lo, (size_t)n * 4);
        z += n;
        out_indptr[r + 1] = z;
    }
}

/* out_indptr (m + 1) for csr_gather_parts: the running row lengths; returns the nonzeros. */
int64_t csr_parts_indptr(const int64_t *indptr_p, const int64_t *parts, const int64_t *rows, int64_t m,
                         int64_t *out_indptr) {
    int64_t z = 0;
    out_indptr[0] = 0;
    for (int64_t r = 0; r < m; r++) {
        const int64_t *ip = (const int64_t *)indptr_p[parts[r]];
        z += ip[rows[r] + 1] - ip[rows[r]];
        out_indptr[r + 1] = z;
    }
    return z;
}

/* Rows src[0] < src[1] < ... (m of them) of a CSR matrix moved to rows 0..m-1, in place, in that
 * order: row j goes to a place at or before its own, so moving them in order never overwrites a
 * row not yet moved (memmove: a row may overlap its new place). indptr[0] stays 0. */
void csr_move_front(void *data, int32_t *indices, int64_t *indptr, int64_t itemsize, const int64_t *src, int64_t m) {
    int64_t z = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t lo = indptr[src[j]], n = indptr[src[j] + 1] - lo;
        memmove((char *)data + z * itemsize, (const char *)data + lo * itemsize, (size_t)(n * itemsize));
        memmove(indices + z, indices + lo, (size_t)n * 4);
        z += n;
        indptr[j + 1] = z;
    }
}
