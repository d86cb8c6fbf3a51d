/* C-level test of the batched env step (backends/core/vec.c), built with AddressSanitizer + UBSan
 * by `make test-asan`. Runs batches of HSS envs over random traces in the three modes (both
 * agents; placement learns; migration learns, with random moves so the FIFO of queued moves and
 * the eq.-3 reward state grow), with episodes restarted in place as the Python envs' autoreset
 * does, and checks:
 *   - one thread and three threads give the same observations, rewards and episode ends, bit for bit;
 *   - rewards are finite (placement's >= 0), float observations in [0, 1], an episode ends exactly
 *     when its trace runs out, and an ended env's observation rows are zeros;
 *   - a closed eq.-3 window credits at least reward_x decision steps, increasing and before the
 *     step that closed it (where moves are made, windows close), and a move runs after its decision;
 *   - everything is freed (LeakSanitizer).
 * Prints "N passed, 0 failed" (or exits non-zero at the first violation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hss.h"
#include "simdev.h"
#include "vec.h"

static int failures, passed;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); failures++; return 1; } } while (0)

#define NENV 9 /* more than vec.c prefetches ahead (6), so a slot gets every level of it */
#define NREQ 300
#define STEPS 900
#define NDEV 3

typedef struct env {
    simdev dev[NDEV];
    hss h;
    hss_env e;
    double t[NREQ], lat[NREQ];
    uint8_t op[NREQ];
    int64_t off[NREQ], size[NREQ];
} env;

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

static simdev_params ssd(uint64_t cap, double us)
{
    simdev_params p = {0};
    p.kind = SIMDEV_SSD; p.servers = 2; p.read_us = us; p.write_us = 2 * us;
    p.read_bw = 2000; p.write_bw = 1000; p.capacity_pages = cap;
    return p;
}

/* A new episode of slot k (what the Python env's reset does, then the slot's load). */
static int begin(hss_vec *v, env *en, int k, int flags, int scan)
{
    env *x = &en[k];
    CHECK(hss_reset(&x->h, (uint64_t)k) == HSS_OK, "reset");
    int nf = hss_feature_count(NDEV, flags);
    float row_p[HSS_FEAT_MAX], row_m[HSS_FEAT_MAX];
    CHECK(nf == v->nfeat, "features %d", nf);
    x->e.lat = x->lat, x->e.nlat = NREQ;
    CHECK(hss_env_begin(&x->h, &x->e, x->t[0], x->op[0], (uint64_t)x->off[0], (uint64_t)x->size[0], scan, flags, 0,
                        row_p, row_m) == HSS_OK, "env_begin");
    size_t w = (size_t)nf * sizeof(float);
    if (v->obs_p)
        memcpy((char *)v->obs_p + (size_t)k * w, row_p, w);
    if (v->obs_m)
        memcpy((char *)v->obs_m + (size_t)k * w, row_m, w);
    hss_vec_slot *s = &v->s[k];
    s->h = &x->h, s->e = &x->e, s->t = x->t, s->op = x->op, s->off = x->off, s->size = x->size;
    s->i = 0, s->end = NREQ, s->needs = x->h.cur.needs_placement;
    s->flags = flags, s->scan = scan, s->place_dev = 0, s->ref_us = 10.0, s->penalty = 0.01;
    s->reward_n = 4, s->reward_x = flags ? 3 : 100;
    hss_vec_slot_clear(s);
    return 0;
}

/* Run one batch in `mode` over `threads`; the outputs of every step go to out_* (STEPS x NENV). */
static int run(int mode, int threads, int flags, float *out_obs, double *out_rew, uint8_t *out_end)
{
    static env en[NENV];
    rs = 88172645463325252ULL;
    int scan = mode != HSS_VEC_PLACEMENT;
    for (int k = 0; k < NENV; k++) {
        env *x = &en[k];
        uint64_t cap[NDEV] = {40, 120, 100000};
        double us[NDEV] = {10, 80, 400};
        for (int d = 0; d < NDEV; d++) {
            simdev_params p = ssd(cap[d], us[d]);
            simdev_init(&x->dev[d], &p, (uint64_t)d);
        }
        memset(&x->e, 0, sizeof x->e);
        /* Buffers outgrown: the FIFO of queued moves in the "binary" run (a long migration queue,
         * busy devices), the moves counted for eq. 3 in the run without flags (reward_x = 100,
         * idle time between the requests, in which the moves run) */
        CHECK(hss_init(&x->h, NDEV, x->dev, cap, (flags & HSS_FEAT_BINARY) ? 200 : 4, 4, 8, 4) == HSS_OK, "init");
        for (int i = 0; i < NREQ; i++) {
            x->t[i] = (flags ? 20.0 : 500.0) * i;
            x->op[i] = rnd() % 3 == 0;
            x->off[i] = (int64_t)(rnd() % 400) * 4096;
            x->size[i] = (int64_t)(1 + rnd() % 4) * 4096;
        }
    }
    hss_vec v;
    int nf = (flags & HSS_FEAT_SIBYL) ? 6 : 7 + (NDEV - 2);
    CHECK(hss_vec_init(&v, NENV, mode, nf, 0) == HSS_OK, "vec init");
    CHECK(hss_vec_set_threads(&v, threads) == HSS_OK, "threads");
    static int64_t act_p[NENV], act_m[NENV];
    static uint8_t skip[NENV], trunc[NENV], acting_p[NENV], acting_m[NENV];
    static float obs_p[NENV * HSS_FEAT_MAX], obs_m[NENV * HSS_FEAT_MAX];
    static double rew_p[NENV], rew_m[NENV];
    memset(skip, 0, sizeof skip);
    v.act_p = act_p, v.act_m = act_m, v.skip = skip, v.trunc = trunc;
    v.obs_p = mode != HSS_VEC_MIGRATION ? obs_p : NULL;
    v.obs_m = mode != HSS_VEC_PLACEMENT ? obs_m : NULL;
    v.rew_p = mode != HSS_VEC_MIGRATION ? rew_p : NULL;
    v.rew_m = mode != HSS_VEC_PLACEMENT ? rew_m : NULL;
    v.acting_p = acting_p, v.acting_m = acting_m;
    for (int k = 0; k < NENV; k++)
        if (begin(&v, en, k, flags, scan))
            return 1;
    float *obs = mode == HSS_VEC_MIGRATION ? obs_m : obs_p;
    double *rew = mode == HSS_VEC_MIGRATION ? rew_m : rew_p;
    int credits = 0;
    for (int t = 0; t < STEPS; t++) {
        for (int k = 0; k < NENV; k++) {
            act_p[k] = (int64_t)(rnd() % NDEV);
            act_m[k] = (int64_t)(rnd() % (NDEV + 1)) - 1;
        }
        int bad = -1;
        CHECK(hss_vec_step(&v, &bad) == HSS_OK, "step %d: env %d failed", t, bad);
        for (int k = 0; k < NENV; k++) {
            hss_vec_slot *s = &v.s[k];
            CHECK(isfinite(rew[k]) && (mode == HSS_VEC_MIGRATION || rew[k] >= 0), "reward %g", rew[k]);
            CHECK(trunc[k] == (s->i >= s->end) || skip[k], "end flag");
            /* a window that closed credits the decision steps counted when it opened, oldest
             * first, at least reward_x of them, all before this step */
            credits += s->credited;
            for (size_t c = 0; s->credited && c < s->credit_len; c++)
                CHECK(s->credit_len >= (size_t)s->reward_x && s->credit[c] < s->i
                      && (c == 0 || s->credit[c - 1] < s->credit[c]), "credit steps");
            for (size_t c = 0; c < s->ran_len; c++)
                CHECK(s->ran_step[c] < s->i, "a move ran before it was decided");
            for (int f = 0; f < nf; f++) {
                float o = obs[k * nf + f];
                CHECK(o >= 0.0f && o <= 1.0f, "observation %g", o);
                CHECK(!trunc[k] || o == 0.0f, "an ended env's observation is not zeros");
            }
        }
        memcpy(out_obs + (size_t)t * NENV * nf, obs, (size_t)NENV * nf * sizeof *obs);
        memcpy(out_rew + (size_t)t * NENV, rew, NENV * sizeof *rew);
        memcpy(out_end + (size_t)t * NENV, trunc, NENV);
        for (int k = 0; k < NENV; k++) {  /* next-step autoreset: skipped once, then begun again */
            if (skip[k] && begin(&v, en, k, flags, scan))
                return 1;
            skip[k] = trunc[k];
        }
    }
    size_t most = 0, most_exe = 0;
    for (int k = 0; k < NENV; k++) {
        most = en[k].e.pend_cap > most ? en[k].e.pend_cap : most;
        most_exe = v.s[k].exe_cap > most_exe ? v.s[k].exe_cap : most_exe;
    }
    CHECK(!(flags & HSS_FEAT_BINARY) || most > 64, "the FIFO did not grow");
    CHECK(flags || most_exe > 64, "the moves counted for eq. 3 did not outgrow their buffer");
    CHECK(mode == HSS_VEC_PLACEMENT || credits > 0, "mode %d: no window closed", mode);
    hss_vec_free(&v);
    for (int k = 0; k < NENV; k++) {
        hss_env_free(&en[k].e);
        hss_free(&en[k].h);
    }
    return 0;
}

static int same_over_threads(int mode, int flags)
{
    size_t nobs = (size_t)STEPS * NENV * HSS_FEAT_MAX, nrew = (size_t)STEPS * NENV;
    float *o1 = calloc(nobs, sizeof *o1), *o3 = calloc(nobs, sizeof *o3);
    double *r1 = calloc(nrew, sizeof *r1), *r3 = calloc(nrew, sizeof *r3);
    uint8_t *e1 = calloc(nrew, 1), *e3 = calloc(nrew, 1);
    int rc = !o1 || !o3 || !r1 || !r3 || !e1 || !e3 || run(mode, 1, flags, o1, r1, e1) || run(mode, 3, flags, o3, r3, e3);
    int ends = 0, paid = 0;
    for (size_t i = 0; i < nrew; i++)
        ends += e1[i], paid += r1[i] != 0.0;
    int same = !rc && !memcmp(o1, o3, nobs * sizeof *o1) && !memcmp(r1, r3, nrew * sizeof *r1) && !memcmp(e1, e3, nrew);
    free(o1), free(o3), free(r1), free(r3), free(e1), free(e3);
    CHECK(!rc, "mode %d: run failed", mode);
    CHECK(same, "mode %d: one thread and three differ", mode);
    CHECK(ends >= NENV, "mode %d: only %d episode ends", mode, ends);
    CHECK(paid > 0, "mode %d: no reward paid", mode);
    passed++;
    return 0;
}

int main(void)
{
    same_over_threads(HSS_VEC_PAIR, 0);
    same_over_threads(HSS_VEC_PLACEMENT, HSS_FEAT_SIBYL);
    same_over_threads(HSS_VEC_MIGRATION, HSS_FEAT_FITS);
    same_over_threads(HSS_VEC_MIGRATION, HSS_FEAT_FITS | HSS_FEAT_BINARY);
    hss_vec v;
    if (hss_vec_init(&v, 0, HSS_VEC_PAIR, 6, 0) != HSS_EINVAL || hss_vec_init(&v, 2, 3, 6, 0) != HSS_EINVAL)
        fprintf(stderr, "FAIL: bad hss_vec_init arguments accepted\n"), failures++;
    else if (hss_vec_init(&v, 2, HSS_VEC_PAIR, 6, 0) != HSS_OK || hss_vec_set_threads(&v, 0) != HSS_EINVAL)
        fprintf(stderr, "FAIL: hss_vec_set_threads(0) accepted\n"), failures++;
    else
        passed++;
    hss_vec_free(&v);
    printf("%d passed, %d failed\n", passed, failures);
    return failures != 0;
}
