/* numpy's default generator, as far as the lean worker uses it: np.random.default_rng(entropy)
 * (SeedSequence seeding PCG64) and Generator.permutation(n), the same draws and the same
 * permutations for the same entropy (tested against numpy). With it the lean worker never imports
 * numpy.random (22 modules, 2.2 MiB of its peak). */
#include <stdint.h>

typedef unsigned __int128 u128;

/* The generator's state, 6 uint64: the 128-bit LCG state (high, low), its increment (high, low),
 * and the second half of a 64-bit draw kept for the next 32-bit one (flag, value). */
enum { ST_HI = 0, ST_LO = 1, INC_HI = 2, INC_LO = 3, HAS32 = 4, U32 = 5, RNG_STATE_WIDTH = 6 };

#define PCG_MULT (((u128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL)

static void pcg_step(uint64_t *s) {
    u128 st = ((u128)s[ST_HI] << 64) | s[ST_LO], inc = ((u128)s[INC_HI] << 64) | s[INC_LO];
    st = st * PCG_MULT + inc;
    s[ST_HI] = (uint64_t)(st >> 64);
    s[ST_LO] = (uint64_t)st;
}

static uint64_t next64(uint64_t *s) { /* PCG64: step, then XSL-RR of the new state */
    pcg_step(s);
    uint64_t x = s[ST_HI] ^ s[ST_LO];
    unsigned rot = (unsigned)(s[ST_HI] >> 58);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

static uint32_t next32(uint64_t *s) {
    if (s[HAS32]) {
        s[HAS32] = 0;
        return (uint32_t)s[U32];
    }
    uint64_t v = next64(s);
    s[HAS32] = 1;
    s[U32] = v >> 32;
    return (uint32_t)v;
}

/* SeedSequence's hashing (numpy/random/bit_generator.pyx), pool of 4 words. */
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u

static uint32_t hashmix(uint32_t v, uint32_t *h) {
    v ^= *h;
    *h *= MULT_A;
    v *= *h;
    return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
    return r ^ (r >> 16);
}

int64_t rng_state_width(void) { return RNG_STATE_WIDTH; }

/* default_rng(entropy): entropy is the SeedSequence's words (each int as 32-bit words, low first). */
void rng_seed(const uint32_t *entropy, int64_t n, uint64_t *s) {
    uint32_t pool[4], h = INIT_A, words[8], hb = INIT_B;
    for (int i = 0; i < 4; i++) pool[i] = hashmix(i < n ? entropy[i] : 0u, &h);
    for (int src = 0; src < 4; src++)
        for (int dst = 0; dst < 4; dst++)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &h));
    for (int64_t src = 4; src < n; src++)
        for (int dst = 0; dst < 4; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src], &h));
    for (int i = 0; i < 8; i++) { /* generate_state(4, uint64) */
        uint32_t v = pool[i % 4] ^ hb;
        hb *= MULT_B;
        v *= hb;
        words[i] = v ^ (v >> 16);
    }
    uint64_t seed_hi = words[0] | (uint64_t)words[1] << 32, seed_lo = words[2] | (uint64_t)words[3] << 32;
    uint64_t inc_hi = words[4] | (uint64_t)words[5] << 32, inc_lo = words[6] | (uint64_t)words[7] << 32;
    u128 inc = (((u128)inc_hi << 64) | inc_lo) << 1 | 1u, st;
    s[ST_HI] = s[ST_LO] = 0;
    s[INC_HI] = (uint64_t)(inc >> 64);
    s[INC_LO] = (uint64_t)inc;
    pcg_step(s);
    st = (((u128)s[ST_HI] << 64) | s[ST_LO]) + (((u128)seed_hi << 64) | seed_lo);
    s[ST_HI] = (uint64_t)(st >> 64);
    s[ST_LO] = (uint64_t)st;
    pcg_step(s);
    s[HAS32] = s[U32] = 0;
}

/* A value in [0, max] by masked rejection (numpy's random_interval). */
static uint64_t interval(uint64_t *s, uint64_t max) {
    uint64_t mask = max, v;
    if (max == 0) return 0;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (max <= 0xffffffffULL) {
        while ((v = (next32(s) & mask)) > max) {
        }
    } else {
        while ((v = (next64(s) & mask)) > max) {
        }
    }
    return v;
}

/* Generator.permutation(n): 0..n-1, shuffled from the last position down. */
void rng_permutation(uint64_t *s, int64_t *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)interval(s, (uint64_t)i), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

/* Generator.shuffle(a) of a 1-D int32 array: the same draws and swaps as rng_permutation. */
void rng_shuffle_i32(uint64_t *s, int32_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)interval(s, (uint64_t)i);
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
