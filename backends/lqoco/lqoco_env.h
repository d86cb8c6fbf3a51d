/* The per-period logic of hss/LQoCo-v0 in C: workload phases, the seeded arrival process, the
 * state (W, P, B and their levels), the reward and the episode's history, for one env (lq_env)
 * and for a batch of envs stepped in one call (lq_vec, the native vector env).
 *
 * Why C: one period of the simulator (lqoco_sim.c) takes under 2 us, the Python logic around it
 * several times that, so a batch of envs stepped from Python could not go faster than one env.
 * The single env (hss_gym/envs/lqoco/env.py) and the vector env (hss_gym/envs/lqoco/vector.py)
 * both step through lq_env_step: one implementation, the same episodes.
 *
 * Exactness: this is a port of the Python env it replaced, operation for operation, and gives the
 * same episodes bit for bit. The arrivals draw from lq_rng, CPython's random.Random (MT19937 with
 * init_by_array seeding, random() and gauss() as CPython computes them), with the same libm
 * calls (exp, log, cos, sin); what Python computed once per workload phase (the mix's costs, the
 * nominal flush bandwidth, the rate bounds, the load process's parameters, the binned trace)
 * still is, in Python, and comes in as lq_phase. C99, no fast-math: no FP contraction.
 */
#ifndef HSS_LQOCO_ENV_H
#define HSS_LQOCO_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "lqoco_sim.h"

#define LQ_MT_N 624

/* CPython's random.Random: the MT19937 state and gauss()'s second value. */
typedef struct lq_rng {
    uint32_t mt[LQ_MT_N];
    int index;
    int has_gauss;
    double gauss_next;
} lq_rng;

/* random.Random(seed) for a seed in [0, 2**64). */
void lq_rng_seed(lq_rng *r, uint64_t seed);
/* random.Random.random(): 53 random bits in [0, 1). */
double lq_rng_random(lq_rng *r);
/* random.Random.gauss(0.0, 1.0) (Box-Muller, caching the second value). */
double lq_rng_gauss(lq_rng *r);

/* One workload phase: what the Python env computes for it (hss_gym/envs/lqoco/env.py). */
typedef struct lq_phase {
    lq_mix mix;
    double nominal;       /* the tier's nominal flush bandwidth for the mix, bytes/s */
    double read_ratio;    /* offered reads per offered write */
    double hq;            /* the host's outstanding-bytes limit (burst depth x request size) */
    double rate_lo, rate_hi; /* the admitted rate's bounds, bytes/s */
    double p_high;        /* the load process starts high with this probability */
    double inv_on, inv_off; /* its switching probabilities per period (1 / on_s, 1 / off_s) */
    double high, low, wiggle; /* its levels (x nominal) and log-normal wiggle */
    long periods;         /* the phase's length (a trace's binned length) */
    const double *trace;  /* a trace phase: [4][periods] read bytes, write bytes, read size, write
                           * size per period (owned by the caller); NULL: the load process */
} lq_phase;

/* The env's options (LQoCoEnv's arguments). */
typedef struct lq_env_params {
    long periods;          /* episode length */
    double period_s, load, capacity, init_rate;
    double magnitudes[5];  /* the actions' rate adjustments */
    double w_bins[3], p_tol, b_lo, b_hi;
    int bdp_window;
    double weights[3];     /* f_W, f_P, f_B */
    int eq8;               /* reward "eq8" (else "signed") */
} lq_env_params;

#define LQ_HIST 8 /* the history's series, in LQoCoEnv.history()'s order */
enum { LQ_H_W, LQ_H_RATE, LQ_H_ADMITTED, LQ_H_FLUSH, LQ_H_THROUGHPUT, LQ_H_FULL, LQ_H_BYPASSED, LQ_H_REWARD };

typedef struct lq_mark {
    long t;
    int phase;
} lq_mark;

/* One env: its simulator (borrowed), phases (borrowed), options, state and history. */
typedef struct lq_env {
    lq_sim *sim;
    const lq_phase *ph;
    int nph;
    lq_env_params p;
    lq_rng rng;
    int phase, high;            /* the phase; the load process is high */
    long phase_left, trace_i, t;
    double rate, W, P, B, btlbw;
    int lw, lp, lb;             /* the levels of W, P, B */
    double reward;              /* of the last step */
    lq_stats last;              /* the last period's (zero after a reset) */
    double *fh;                 /* flush bandwidths of the last bdp_window periods (a ring) */
    int fh_len, fh_head;
    double *hist[LQ_HIST];      /* per period, t entries each */
    size_t hist_cap;
    lq_mark *marks;             /* (period, phase) at each phase start */
    size_t marks_len, marks_cap;
} lq_env;

/* NULL when the options and phases are valid, else a static message. */
const char *lq_env_check(const lq_env_params *p, const lq_phase *ph, int nph);
/* An env over `sim` (fresh) and `ph` (both outliving it) at the start of an episode whose
 * arrivals draw from random.Random(seed): 0, or -1 when out of memory (lq_env_free it anyway). */
int lq_env_init(lq_env *e, lq_sim *sim, const lq_env_params *p, const lq_phase *ph, int nph, uint64_t seed);
void lq_env_free(lq_env *e);
/* One period with the admitted rate `rate_bps` (bytes/s, clipped to the phase's bounds; INFINITY:
 * no limit): 0, or -1 when out of memory. The episode ends (truncation) when e->t reaches
 * p.periods; stepping past it is the caller's to refuse. */
int lq_env_advance(lq_env *e, double rate_bps);
/* One period with action a (0..4): the rate times 1 + magnitudes[a]. */
int lq_env_step(lq_env *e, int a);
/* The discrete state index (W * 3 + P) * 3 + B. */
int lq_env_state(const lq_env *e);
/* The raw observation (W, P, B clipped to [0, 1], [-1, 10], [0, 10]) as float32. */
void lq_env_raw_obs(const lq_env *e, float out[3]);

/* The infos of a step, one row of n values each (the single env's info keys): */
#define LQ_INFO_RESET 6 /* W, P, B_use, btlbw_mbps, rate_mbps, nominal_mbps (also at reset) */
#define LQ_INFO 14      /* + admitted, flush, flushed, bypassed, throughput (MB/s), full_s, gc_s, throttled_mb */
/* Env e's info values (the first LQ_INFO_RESET only, if `reset`) into info[i * n + k]. */
void lq_env_info(const lq_env *e, int reset, double *info, int n, int k);

/* A batch of envs and the arrays of a step (one entry or row per env). */
typedef struct lq_vec {
    int n, raw;                 /* envs; observations raw (float32 [n][3]) or discrete (int64 [n]) */
    lq_env **e;                 /* borrowed */
    const int64_t *act;         /* actions 0..4 */
    const uint8_t *skip;        /* nonzero: left alone (its env is reset after the call) */
    void *obs;
    double *rew;
    uint8_t *trunc;
    int64_t *t, *state;         /* the infos "t" and "state" */
    double *info;               /* [LQ_INFO][n]: the other infos */
} lq_vec;

/* Slot k took a new episode (e[k] just began): its observation and reset infos, reward 0, not
 * truncated; the step-only infos zero. */
void lq_vec_load(lq_vec *v, int k);
/* Step every env not skipped (skipped ones: the step-only infos zeroed). Returns 0, or -1 with
 * *bad the env that failed (out of memory, or an action outside 0..4); others may have stepped. */
int lq_vec_step(lq_vec *v, int *bad);

#endif
