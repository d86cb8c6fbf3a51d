/* The per-period logic of hss/LQoCo-v0; see lqoco_env.h. Each function follows the Python it
 * replaced (hss_gym/envs/lqoco/env.py and workloads.py before the port) operation for operation:
 * keep the order of the floating-point operations when changing anything here. */
#include "lqoco_env.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ random.Random */

#define MT_M 397
#define MT_MATRIX_A 0x9908b0dfU
#define MT_UPPER 0x80000000U
#define MT_LOWER 0x7fffffffU

static void mt_init_genrand(lq_rng *r, uint32_t s)
{
    uint32_t *mt = r->mt;
    mt[0] = s;
    for (int i = 1; i < LQ_MT_N; i++)
        mt[i] = 1812433253U * (mt[i - 1] ^ (mt[i - 1] >> 30)) + (uint32_t)i;
    r->index = LQ_MT_N;
}

/* CPython's init_by_array (Modules/_randommodule.c). */
static void mt_init_by_array(lq_rng *r, const uint32_t *key, size_t len)
{
    uint32_t *mt = r->mt;
    size_t i = 1, j = 0;
    mt_init_genrand(r, 19650218U);
    for (size_t k = LQ_MT_N > len ? LQ_MT_N : len; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U)) + key[j] + (uint32_t)j;
        i++, j++;
        if (i >= LQ_MT_N) {
            mt[0] = mt[LQ_MT_N - 1];
            i = 1;
        }
        if (j >= len)
            j = 0;
    }
    for (size_t k = LQ_MT_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
        i++;
        if (i >= LQ_MT_N) {
            mt[0] = mt[LQ_MT_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000U;
}

void lq_rng_seed(lq_rng *r, uint64_t seed)
{
    /* random.Random(n) for an int n >= 0: n's 32-bit words, least significant first, as many as
     * it needs (one for 0) */
    uint32_t key[2] = {(uint32_t)(seed & 0xffffffffU), (uint32_t)(seed >> 32)};
    mt_init_by_array(r, key, key[1] ? 2 : 1);
    r->has_gauss = 0;
    r->gauss_next = 0.0;
}

static uint32_t mt_next(lq_rng *r)
{
    static const uint32_t mag01[2] = {0x0U, MT_MATRIX_A};
    uint32_t *mt = r->mt, y;
    if (r->index >= LQ_MT_N) {
        int kk;
        for (kk = 0; kk < LQ_MT_N - MT_M; kk++) {
            y = (mt[kk] & MT_UPPER) | (mt[kk + 1] & MT_LOWER);
            mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < LQ_MT_N - 1; kk++) {
            y = (mt[kk] & MT_UPPER) | (mt[kk + 1] & MT_LOWER);
            mt[kk] = mt[kk + (MT_M - LQ_MT_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (mt[LQ_MT_N - 1] & MT_UPPER) | (mt[0] & MT_LOWER);
        mt[LQ_MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        r->index = 0;
    }
    y = mt[r->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

double lq_rng_random(lq_rng *r)
{
    uint32_t a = mt_next(r) >> 5, b = mt_next(r) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

double lq_rng_gauss(lq_rng *r)
{
    /* random.py: x2pi = random() * TWOPI; g2rad = sqrt(-2.0 * log(1.0 - random()));
     * z = cos(x2pi) * g2rad; gauss_next = sin(x2pi) * g2rad; return mu + z * sigma */
    double z;
    if (r->has_gauss) {
        z = r->gauss_next;
        r->has_gauss = 0;
    } else {
        double x2pi = lq_rng_random(r) * (2.0 * 3.141592653589793);
        double g2rad = sqrt(-2.0 * log(1.0 - lq_rng_random(r)));
        /* sin through a volatile copy: the compiler may not merge cos and sin into one sincos
         * call, whose results a C library need not make identical to theirs */
        volatile double arg = x2pi;
        z = cos(x2pi) * g2rad;
        r->gauss_next = sin(arg) * g2rad;
        r->has_gauss = 1;
    }
    return 0.0 + z * 1.0;
}

/* ------------------------------------------------------------------ the env */

static double min2(double a, double b) { return b < a ? b : a; } /* Python's min(a, b) */
static double max2(double a, double b) { return b > a ? b : a; } /* Python's max(a, b) */

const char *lq_env_check(const lq_env_params *p, const lq_phase *ph, int nph)
{
    if (p->periods < 1 || p->bdp_window < 1)
        return "periods and bdp_window must be >= 1";
    if (!(p->period_s > 0) || !(p->load > 0) || !(p->capacity > 0) || !(p->init_rate > 0))
        return "period_s, load, capacity and init_rate must be > 0";
    if (nph < 1)
        return "need at least one phase";
    for (int i = 0; i < nph; i++) {
        const lq_mix *m = &ph[i].mix;
        if (!(m->io > 0 && m->rd_cost > 0 && m->byp_cost > 0 && m->sync_cost > 0 && m->cache_cost > 0
              && m->flush_io > 0 && m->n > 0 && (m->flush_const > 0 || m->write_bw > 0)))
            return "a phase's mix costs and sizes must be > 0";
        if (!(ph[i].nominal > 0) || ph[i].periods < 1 || !(ph[i].rate_lo <= ph[i].rate_hi))
            return "a phase needs nominal > 0, periods >= 1 and rate_lo <= rate_hi";
    }
    return NULL;
}

static void next_phase(lq_env *e)
{
    e->phase = (e->phase + 1) % e->nph;
    const lq_phase *ph = &e->ph[e->phase];
    lq_set_mix(e->sim, &ph->mix);
    /* Arrivals(burst, rng): high = rng.random() < on_s / (on_s + off_s) */
    e->high = lq_rng_random(&e->rng) < ph->p_high;
    e->phase_left = ph->periods;
    e->trace_i = 0;
}

static int mark(lq_env *e)
{
    if (e->marks_len == e->marks_cap) {
        size_t cap = e->marks_cap ? 2 * e->marks_cap : 8;
        lq_mark *m = realloc(e->marks, cap * sizeof *m);
        if (!m)
            return -1;
        e->marks = m;
        e->marks_cap = cap;
    }
    e->marks[e->marks_len++] = (lq_mark){e->t, e->phase};
    return 0;
}

int lq_env_init(lq_env *e, lq_sim *sim, const lq_env_params *p, const lq_phase *ph, int nph, uint64_t seed)
{
    memset(e, 0, sizeof *e);
    e->sim = sim, e->ph = ph, e->nph = nph, e->p = *p;
    if (!(e->fh = malloc((size_t)p->bdp_window * sizeof *e->fh)))
        return -1;
    lq_rng_seed(&e->rng, seed);
    e->phase = -1;
    next_phase(e);
    e->rate = p->init_rate * ph[e->phase].nominal;
    e->W = e->P = 0.0;
    e->B = 1.0;
    e->btlbw = ph[e->phase].nominal;
    e->lw = 0, e->lp = 1, e->lb = 1;
    return mark(e);
}

void lq_env_free(lq_env *e)
{
    free(e->fh);
    for (int i = 0; i < LQ_HIST; i++)
        free(e->hist[i]);
    free(e->marks);
    memset(e, 0, sizeof *e);
}

/* Offered bytes/s of the next period (Arrivals.demand): the load process's level x nominal. */
static double demand(lq_env *e, const lq_phase *ph)
{
    if (lq_rng_random(&e->rng) < (e->high ? ph->inv_on : ph->inv_off))
        e->high = !e->high;
    double level = e->high ? ph->high : ph->low;
    if (ph->wiggle > 0)
        level *= exp(ph->wiggle * lq_rng_gauss(&e->rng));
    return level * ph->nominal;
}

static int record(lq_env *e, const double v[LQ_HIST])
{
    size_t t = (size_t)e->t;
    if (t == e->hist_cap) {
        size_t cap = e->hist_cap ? 2 * e->hist_cap : 256;
        for (int i = 0; i < LQ_HIST; i++) {
            double *h = realloc(e->hist[i], cap * sizeof *h);
            if (!h)
                return -1;
            e->hist[i] = h;
        }
        e->hist_cap = cap;
    }
    for (int i = 0; i < LQ_HIST; i++)
        e->hist[i][t] = v[i];
    return 0;
}

static double reward_of(const lq_env *e)
{
    static const int vw_[4] = {0, 0, 1, -1}, vp_[3] = {-1, 0, -1}, vb_[3] = {-1, 1, 0};
    const double *f = e->p.weights;
    int vw = vw_[e->lw], vp = vp_[e->lp], vb = vb_[e->lb];
    if (e->p.eq8)
        return ((double)(vw * vw) / 9.0 - 1) * f[0] + ((double)(vp * vp) / 4.0 - 1) * f[1]
               + ((double)(vb * vb) / 4.0 - 1) * f[2];
    return f[0] * vw + f[1] * vp + f[2] * vb;
}

int lq_env_advance(lq_env *e, double rate_bps)
{
    const lq_env_params *p = &e->p;
    const lq_phase *ph = &e->ph[e->phase];
    double ps = p->period_s;
    if (!isinf(rate_bps))
        rate_bps = min2(max2(rate_bps, ph->rate_lo), ph->rate_hi);
    e->rate = rate_bps;
    lq_stats st;
    int rc;
    if (ph->trace) {
        long i = e->trace_i, n = ph->periods;
        const double *rb = ph->trace, *wb = rb + n, *rs = wb + n, *ws = rs + n;
        /* CacheSim.period: read_io or self.io (a zero size means the mix's) */
        rc = lq_period(e->sim, rate_bps, rb[i] / ps, wb[i] / ps, ph->hq, rs[i] != 0 ? rs[i] : ph->mix.io,
                       ws[i] != 0 ? ws[i] : ph->mix.io, &st);
        e->trace_i++;
    } else {
        double wr = p->load * demand(e, ph);
        rc = lq_period(e->sim, rate_bps, wr * ph->read_ratio, wr, ph->hq, ph->mix.io, ph->mix.io, &st);
    }
    if (rc != 0)
        return -1;
    e->phase_left--;
    /* the state (W_t, P_t, B_t) */
    e->W = e->sim->dirty / p->capacity;
    double I = st.admitted / ps, O = st.flush_cap / ps;
    e->P = (I - O) / max2(O, 1.0);
    int w = p->bdp_window;
    if (e->fh_len < w)
        e->fh[(e->fh_head + e->fh_len++) % w] = O;
    else {
        e->fh[e->fh_head] = O;
        e->fh_head = (e->fh_head + 1) % w;
    }
    double top = e->fh[e->fh_head]; /* max(fh), oldest first */
    for (int i = 1; i < e->fh_len; i++)
        top = max2(top, e->fh[(e->fh_head + i) % w]);
    e->btlbw = max2(top, 1.0);
    e->B = I / e->btlbw;
    const double *wb = p->w_bins;
    e->lw = e->W < wb[0] ? 0 : e->W < wb[1] ? 1 : e->W < wb[2] ? 2 : 3;
    e->lp = e->P < -p->p_tol ? 0 : e->P <= p->p_tol ? 1 : 2;
    e->lb = e->B > p->b_hi ? 0 : e->B >= p->b_lo ? 1 : 2;
    e->reward = reward_of(e);
    double h[LQ_HIST] = {e->W, e->rate / 1e6, I / 1e6, O / 1e6, st.throughput / ps / 1e6, st.full_s,
                         st.bypassed / ps / 1e6, e->reward};
    if (record(e, h) != 0)
        return -1;
    e->last = st;
    e->t++;
    if (e->phase_left <= 0 && e->t < p->periods) {
        next_phase(e);
        return mark(e);
    }
    return 0;
}

int lq_env_step(lq_env *e, int a)
{
    return lq_env_advance(e, e->rate * (1.0 + e->p.magnitudes[a]));
}

int lq_env_state(const lq_env *e) { return (e->lw * 3 + e->lp) * 3 + e->lb; }

void lq_env_raw_obs(const lq_env *e, float out[3])
{
    out[0] = (float)min2(e->W, 1.0);
    out[1] = (float)min2(max2(e->P, -1.0), 10.0);
    out[2] = (float)min2(e->B, 10.0);
}

void lq_env_info(const lq_env *e, int reset, double *info, int n, int k)
{
    double ps = e->p.period_s;
    const lq_stats *st = &e->last;
    double v[LQ_INFO] = {e->W, e->P, e->B, e->btlbw / 1e6, e->rate / 1e6, e->ph[e->phase].nominal / 1e6,
                         st->admitted / ps / 1e6, st->flush_cap / ps / 1e6, st->flushed / ps / 1e6,
                         st->bypassed / ps / 1e6, st->throughput / ps / 1e6, st->full_s, st->gc_s,
                         st->throttled / 1e6};
    for (int i = 0; i < (reset ? LQ_INFO_RESET : LQ_INFO); i++)
        info[(size_t)i * n + k] = v[i];
}

/* ------------------------------------------------------------------ the batch */

static void vec_write(lq_vec *v, int k)
{
    const lq_env *e = v->e[k];
    if (v->raw)
        lq_env_raw_obs(e, (float *)v->obs + 3 * (size_t)k);
    else
        ((int64_t *)v->obs)[k] = lq_env_state(e);
    v->t[k] = e->t;
    v->state[k] = lq_env_state(e);
}

static void vec_clear_step_infos(lq_vec *v, int k)
{
    for (int i = LQ_INFO_RESET; i < LQ_INFO; i++)
        v->info[(size_t)i * v->n + k] = 0.0;
}

void lq_vec_load(lq_vec *v, int k)
{
    vec_write(v, k);
    lq_env_info(v->e[k], 1, v->info, v->n, k);
    vec_clear_step_infos(v, k);
    v->rew[k] = 0.0;
    v->trunc[k] = 0;
}

int lq_vec_step(lq_vec *v, int *bad)
{
    for (int k = 0; k < v->n; k++) {
        if (v->skip[k]) {
            vec_clear_step_infos(v, k);
            continue;
        }
        lq_env *e = v->e[k];
        int64_t a = v->act[k];
        if (a < 0 || a > 4 || lq_env_step(e, (int)a) != 0) {
            *bad = k;
            return -1;
        }
        vec_write(v, k);
        lq_env_info(e, 0, v->info, v->n, k);
        v->rew[k] = e->reward;
        v->trunc[k] = e->t >= e->p.periods;
    }
    return 0;
}
