/* A linear classifier trained by FTRL-proximal (McMahan et al., 2013, algorithm 1): logistic loss,
 * per-coordinate learning rates, L1 and L2 (svmcore/worker/ftrl.py). Each weight vector keeps z and n
 * per feature (nf of them, vector after vector) and zb, nb for its intercept, which is one more
 * coordinate with value 1 and no L1/L2. A weight is computed from its z and n where it is needed.
 * Zero values leave their coordinates untouched (dense and sparse input train alike). */
#include <math.h>
#include <stdint.h>

static inline double weight(double z, double n, double l1, double l2, double alpha, double beta) {
    if (fabs(z) <= l1) return 0.0;
    double sign = z > 0.0 ? 1.0 : -1.0;
    return -(z - sign * l1) / ((beta + sqrt(n)) / alpha + l2);
}

#define DEFINE_FTRL(S, T)                                                                            \
void ftrl_fit_##S(const T *data, const int32_t *indices, const int64_t *indptr, int64_t n_rows,     \
                  const int64_t *codes, double *z, double *n, double *zb, double *nb, int64_t nvec,  \
                  int64_t nf, double l1, double l2, double alpha, double beta) {                    \
    for (int64_t i = 0; i < n_rows; i++) {                                                           \
        int64_t lo = indptr[i], hi = indptr[i + 1];                                                  \
        for (int64_t v = 0; v < nvec; v++) {                                                         \
            double *zv = z + v * nf, *nv = n + v * nf;                                               \
            double target = codes[i] == (nvec == 1 ? 1 : v) ? 1.0 : 0.0;                             \
            double dot = weight(zb[v], nb[v], 0.0, 0.0, alpha, beta);                                \
            for (int64_t k = lo; k < hi; k++) {                                                      \
                double x = (double)data[k];                                                          \
                if (x != 0.0) dot += weight(zv[indices[k]], nv[indices[k]], l1, l2, alpha, beta) * x; \
            }                                                                                        \
            dot = fmax(-35.0, fmin(35.0, dot));                                                      \
            double g0 = 1.0 / (1.0 + exp(-dot)) - target; /* d(logistic loss)/d(margin) */           \
            for (int64_t k = lo; k < hi; k++) {                                                      \
                double x = (double)data[k];                                                          \
                if (x == 0.0) continue;                                                              \
                int32_t j = indices[k];                                                              \
                double g = g0 * x, nj = nv[j];                                                       \
                double w = weight(zv[j], nj, l1, l2, alpha, beta);                                   \
                double sigma = (sqrt(nj + g * g) - sqrt(nj)) / alpha;                                \
                zv[j] += g - sigma * w;                                                              \
                nv[j] = nj + g * g;                                                                  \
            }                                                                                        \
            double wb = weight(zb[v], nb[v], 0.0, 0.0, alpha, beta);                                 \
            double sigma = (sqrt(nb[v] + g0 * g0) - sqrt(nb[v])) / alpha;                            \
            zb[v] += g0 - sigma * wb;                                                                \
            nb[v] += g0 * g0;                                                                        \
        }                                                                                            \
    }                                                                                                \
}                                                                                                    \
/* scores[i, v] = X[i] . weights[v] + intercept[v], each weight computed for the columns present. */ \
void ftrl_decision_##S(const T *data, const int32_t *indices, const int64_t *indptr, int64_t n_rows, \
                       const double *z, const double *n, int64_t nvec, int64_t nf, double l1, double l2, \
                       double alpha, double beta, const double *intercept, double *scores) {         \
    for (int64_t i = 0; i < n_rows; i++) {                                                           \
        for (int64_t v = 0; v < nvec; v++) {                                                         \
            double dot = 0.0;                                                                        \
            for (int64_t k = indptr[i]; k < indptr[i + 1]; k++) {                                    \
                int64_t j = v * nf + indices[k];                                                     \
                dot += (double)data[k] * weight(z[j], n[j], l1, l2, alpha, beta);                    \
            }                                                                                        \
            scores[i * nvec + v] = dot + intercept[v];                                               \
        }                                                                                            \
    }                                                                                                \
}

DEFINE_FTRL(f64, double)
DEFINE_FTRL(f32, float)

/* The weights of `count` coordinates into `out`, which may be `z` itself. */
void ftrl_weights(const double *z, const double *n, int64_t count, double l1, double l2, double alpha, double beta,
                  double *out) {
    for (int64_t j = 0; j < count; j++) out[j] = weight(z[j], n[j], l1, l2, alpha, beta);
}
