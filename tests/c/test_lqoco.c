/* The L-QoCo simulator (backends/lqoco/lqoco_sim.c) under AddressSanitizer + UBSan: parameter
 * checks, eq. 1 (dirty = max(0, dirty + admitted - O) per period with one slot), the host-queue
 * array growing and compacting over a long overload, the cache filling without a token limit and
 * collapsing admissions while full, and the latency histogram and quantiles. The env's logic
 * (lqoco_env.c): random.Random's draws as CPython gives them, an env's episode over phases and a
 * trace (its history growing, its phase starts, seeds), and the batched step (lq_vec_step) with
 * skipped slots and a bad action, against envs stepped one by one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lqoco_env.h"
#include "lqoco_sim.h"

static int failures;
#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                            \
            fputc('\n', stderr);                                     \
            failures++;                                              \
        }                                                            \
    } while (0)

static lq_params params(int slots, int bypass)
{
    lq_params p = {.capacity = 1e9, .w_cap = 0.9e9, .dt = 1e6 / slots, .slots = slots, .bucket_s = 0.1,
                   .has_bypass = bypass, .bypass_us = 0.0, .read_hit = 0.6, .sync_share = 0.5,
                   .gc_extra = 0.375, .gc_burst = 2e6, .gc_share = 0.5};
    return p;
}

static lq_mix ssd_mix(void)
{
    /* ~ 8 TLC SSDs, 32 KiB requests, 1 MiB flush stripes (numbers of the oceanstor config) */
    lq_mix m = {.io = 32768, .rd_cost = 0.000223, .rd_lat = 87, .byp_cost = 0.000245, .byp_lat = 148,
                .sync_cost = 0.000306, .sync_lat = 148, .cache_cost = 1.1e-5, .cache_lat = 9,
                .flush_io = 1048576, .flush_const = 0.000245, .write_bw = 510, .n = 8};
    return m;
}

static lq_mix hdd_mix(void)
{
    /* ~ 8 7200-rpm HDDs, 32 KiB random requests on 8 KiB cache blocks (the linux config) */
    lq_mix m = {.io = 32768, .rd_cost = 0.074, .rd_lat = 19385, .byp_cost = 0.074, .byp_lat = 19385,
                .sync_cost = 0.294, .sync_lat = 19268, .cache_cost = 1.3e-4, .cache_lat = 35,
                .flush_io = 32768, .flush_const = 0, .seek_min = 1000, .seek_max = 15062.5,
                .half_rot = 4166.7, .write_bw = 210, .n = 8};
    return m;
}


/* random.Random(seed).random() and .gauss(0.0, 1.0), as CPython 3.11 printed them; random() is
 * exact, gauss() goes through the C library's log, cos and sin */
static void test_rng(void)
{
    static const struct {
        uint64_t seed;
        double r0, r1, g0, g1, r2;
    } want[] = {
        {0, 0.8444218515250481, 0.7579544029403025, -0.6797144480784211, 0.3705035674606598, 0.5112747213686085},
        {42, 0.6394267984578837, 0.025010755222666936, -0.11131586156766246, 0.7019837250988631, 0.7364712141640124},
        {1099511627781ULL, 0.5043802970418443, 0.2686044399723282, 1.0991312652276808, -0.5532103314067816,
         0.8179643216302002},
    };
    lq_rng r;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        lq_rng_seed(&r, want[i].seed);
        double r0 = lq_rng_random(&r), r1 = lq_rng_random(&r);
        double g0 = lq_rng_gauss(&r), g1 = lq_rng_gauss(&r), r2 = lq_rng_random(&r);
        CHECK(r0 == want[i].r0 && r1 == want[i].r1 && r2 == want[i].r2, "seed %llu: random() differs",
              (unsigned long long)want[i].seed);
        CHECK(fabs(g0 - want[i].g0) <= 1e-15 && fabs(g1 - want[i].g1) <= 1e-15, "seed %llu: gauss() differs: %.17g %.17g",
              (unsigned long long)want[i].seed, g0, g1);
    }
    lq_rng_seed(&r, 7); /* past the first 624 words: the state is regenerated */
    for (int i = 0; i < 700; i++)
        lq_rng_random(&r);
    CHECK(lq_rng_random(&r) == 0.33805157034346633, "random() after 700 draws differs");
}

static lq_phase phase_of(lq_mix m, double nominal, long periods, const double *trace)
{
    lq_phase ph = {.mix = m, .nominal = nominal, .read_ratio = 0.25, .hq = 256 * m.io, .rate_lo = 0.05 * nominal,
                   .rate_hi = 20 * nominal, .p_high = 40.0 / 70.0, .inv_on = 1 / 40.0, .inv_off = 1 / 30.0,
                   .high = 1.5, .low = 1.1, .wiggle = 0.1, .periods = periods, .trace = trace};
    return ph;
}

static lq_env_params env_params(long periods)
{
    lq_env_params p = {.periods = periods, .period_s = 1.0, .load = 1.0, .capacity = 1e9, .init_rate = 1.0,
                       .magnitudes = {-0.01, -0.03, 0, 0.01, 0.03}, .w_bins = {0.05, 0.3, 0.7}, .p_tol = 0.05,
                       .b_lo = 0.9, .b_hi = 1.05, .bdp_window = 10, .weights = {0.5, 0.25, 0.25}};
    return p;
}

/* a 5-period trace: read bytes, write bytes, read size (0: the mix's), write size */
static const double trace5[20] = {1e8, 2e8, 0, 3e8, 1e8, 4e8, 8e8, 1e9, 2e8, 6e8,
                                  65536, 0, 4096, 65536, 65536, 32768, 32768, 131072, 8192, 32768};

static void test_env(void)
{
    lq_params sp = params(4, 0);
    lq_phase ph[3] = {phase_of(ssd_mix(), 4e8, 200, NULL), phase_of(hdd_mix(), 3e7, 100, NULL),
                      phase_of(ssd_mix(), 4e8, 5, trace5)};
    lq_env_params p = env_params(1000), bad = env_params(0);
    CHECK(lq_env_check(&p, ph, 3) == NULL, "good env refused: %s", lq_env_check(&p, ph, 3));
    CHECK(lq_env_check(&bad, ph, 3) != NULL && lq_env_check(&p, ph, 0) != NULL, "bad env accepted");
    lq_sim s[3];
    lq_env e[3];
    uint64_t seeds[3] = {5, 5, 6};
    for (int k = 0; k < 3; k++) {
        CHECK(lq_init(&s[k], &sp) == 0, "init");
        CHECK(lq_env_init(&e[k], &s[k], &p, ph, 3, seeds[k]) == 0, "env init");
    }
    CHECK(e[0].t == 0 && lq_env_state(&e[0]) == 4 && e[0].rate == 4e8 && e[0].marks_len == 1, "bad start");
    int states = 0, seen[36] = {0};
    for (long t = 0; t < 1000; t++) {
        /* actions, no limit every 97 periods, then a rate below the bounds (clipped) */
        const lq_phase *cur = &e[0].ph[e[0].phase];
        for (int k = 0; k < 3; k++) {
            int rc = t % 97 == 50 ? lq_env_advance(&e[k], INFINITY)
                     : t % 97 == 51 ? lq_env_advance(&e[k], 1.0) : lq_env_step(&e[k], (int)(t % 5));
            CHECK(rc == 0, "step %ld of env %d failed", t, k);
        }
        int st = lq_env_state(&e[0]);
        CHECK(st >= 0 && st < 36 && e[0].reward >= -1 && e[0].reward <= 1 && e[0].W >= 0, "bad state at %ld", t);
        if (t % 97 == 50)
            CHECK(isinf(e[0].rate), "INFINITY not kept");
        else
            CHECK(e[0].rate >= cur->rate_lo && e[0].rate <= cur->rate_hi && (t % 97 != 51 || e[0].rate == cur->rate_lo),
                  "rate %g out of bounds at %ld", e[0].rate, t);
        states += !seen[st]++;
    }
    CHECK(states >= 4, "only %d states visited", states);
    CHECK(e[0].t == 1000 && e[0].hist_cap >= 1000, "history did not grow: cap %zu", e[0].hist_cap);
    static const long starts[] = {0, 200, 300, 305, 505, 605, 610, 810, 910, 915};
    CHECK(e[0].marks_len == 10, "%zu phase starts, want 10", e[0].marks_len);
    for (size_t i = 0; i < e[0].marks_len && i < 10; i++)
        CHECK(e[0].marks[i].t == starts[i] && e[0].marks[i].phase == (int)(i % 3), "phase start %zu: (%ld, %d)", i,
              e[0].marks[i].t, e[0].marks[i].phase);
    int same = 1, differ = 0;
    for (int i = 0; i < LQ_HIST; i++)
        for (long t = 0; t < 1000; t++) {
            same &= e[0].hist[i][t] == e[1].hist[i][t];
            differ |= e[0].hist[i][t] != e[2].hist[i][t];
        }
    CHECK(same && differ, "same seed, other episode (%d), or other seed, same episode (%d)", !same, !differ);
    for (int k = 0; k < 3; k++) {
        lq_env_free(&e[k]);
        lq_free(&s[k]);
    }
}

/* Two batches of two envs against the same envs stepped one by one: raw then discrete
 * observations, slot 1 skipped (autoreset) every 7th step and reloaded with a new episode. */
static void test_vec(void)
{
    lq_params sp = params(2, 0);
    lq_phase ph[2] = {phase_of(hdd_mix(), 3e7, 30, NULL), phase_of(ssd_mix(), 4e8, 5, trace5)};
    lq_env_params p = env_params(60);
    for (int raw = 0; raw < 2; raw++) {
        lq_sim s[4];
        lq_env e[4];
        for (int k = 0; k < 4; k++) {
            CHECK(lq_init(&s[k], &sp) == 0, "init");
            CHECK(lq_env_init(&e[k], &s[k], &p, ph, 2, 11 + k % 2) == 0, "env init");
        }
        lq_env *slots[2] = {&e[0], &e[1]};
        int64_t act[2], t[2], state[2], iobs[2];
        uint8_t skip[2] = {0, 0}, trunc[2];
        float fobs[6];
        double rew[2], info[LQ_INFO * 2];
        lq_vec v = {.n = 2, .raw = raw, .e = slots, .act = act, .skip = skip, .obs = raw ? (void *)fobs : (void *)iobs,
                    .rew = rew, .trunc = trunc, .t = t, .state = state, .info = info};
        lq_vec_load(&v, 0);
        lq_vec_load(&v, 1);
        for (int step = 1; step <= 40; step++) {
            act[0] = step % 5, act[1] = (step * 3) % 5;
            skip[1] = step % 7 == 0;
            int bad = -1;
            CHECK(lq_vec_step(&v, &bad) == 0, "vec step %d failed at env %d", step, bad);
            CHECK(lq_env_step(&e[2], (int)act[0]) == 0, "step");
            CHECK(rew[0] == e[2].reward && state[0] == lq_env_state(&e[2]) && t[0] == e[2].t, "slot 0 differs at %d",
                  step);
            if (raw) {
                float o[3];
                lq_env_raw_obs(&e[2], o);
                CHECK(memcmp(o, fobs, sizeof o) == 0, "raw observation differs at %d", step);
            } else {
                CHECK(iobs[0] == lq_env_state(&e[2]), "observation differs at %d", step);
            }
            if (skip[1]) { /* an autoreset: slot 1 takes a new episode */
                CHECK(info[LQ_INFO_RESET * 2 + 1] == 0 && t[1] == e[1].t, "skipped slot touched at %d", step);
                lq_env_free(&e[1]);
                lq_free(&s[1]);
                CHECK(lq_init(&s[1], &sp) == 0 && lq_env_init(&e[1], &s[1], &p, ph, 2, 12) == 0, "re-init");
                lq_env_free(&e[3]);
                lq_free(&s[3]);
                CHECK(lq_init(&s[3], &sp) == 0 && lq_env_init(&e[3], &s[3], &p, ph, 2, 12) == 0, "re-init");
                lq_vec_load(&v, 1);
                CHECK(t[1] == 0 && rew[1] == 0 && trunc[1] == 0 && state[1] == 4, "load did not start slot 1");
            } else {
                CHECK(lq_env_step(&e[3], (int)act[1]) == 0, "step");
                CHECK(rew[1] == e[3].reward && state[1] == lq_env_state(&e[3]) && info[1] == e[3].W
                      && info[6 * 2 + 1] == e[3].last.admitted / 1e6, "slot 1 differs at %d", step);
            }
        }
        act[1] = 5;
        int bad = -1;
        CHECK(lq_vec_step(&v, &bad) == -1 && bad == 1, "a bad action was taken");
        for (int k = 0; k < 4; k++) {
            lq_env_free(&e[k]);
            lq_free(&s[k]);
        }
    }
}

int main(void)
{
    lq_params bad = params(4, 0);
    bad.w_cap = 2e9;
    CHECK(lq_check(&bad) != NULL, "w_cap above capacity accepted");
    bad = params(4, 0);
    bad.slots = 0;
    CHECK(lq_check(&bad) != NULL, "0 slots accepted");
    lq_params p1 = params(1, 0);
    CHECK(lq_check(&p1) == NULL, "good parameters refused: %s", lq_check(&p1));

    /* eq. 1 with one slot per period */
    lq_sim s;
    CHECK(lq_init(&s, &p1) == 0, "init");
    lq_mix m = ssd_mix();
    lq_set_mix(&s, &m);
    lq_stats st;
    for (int t = 0; t < 300; t++) {
        double before = s.dirty;
        double rate = t % 50 < 25 ? 6e9 : 2e9;
        CHECK(lq_period(&s, rate, 1e9, 5e9, 256 * 32768.0, 32768, 32768, &st) == 0, "period");
        double want = before + st.admitted - st.flush_cap;
        want = want > 0 ? want : 0;
        CHECK(fabs(s.dirty - want) <= 1e-6 * (1 + want), "eq. 1 at t=%d: %g vs %g", t, s.dirty, want);
        CHECK(st.throughput >= st.admitted && st.reads >= 0, "throughput below admitted");
    }
    lq_free(&s);

    /* HDD tier, no token limit, writes far above it: the cache fills; admissions collapse while
     * full (synchronous single-block destages with seeks); the elevator flushes faster when more
     * is dirty */
    lq_params p4 = params(4, 0);
    CHECK(lq_init(&s, &p4) == 0, "init");
    lq_mix h = hdd_mix();
    lq_set_mix(&s, &h);
    CHECK(lq_flush_cost(&s, 0.8e9) < 0.8 * lq_flush_cost(&s, 1e7), "no elevator effect");
    double adm_full = 0, adm_free = 0;
    int n_full = 0, n_free = 0;
    for (int t = 0; t < 400; t++) {
        CHECK(lq_period(&s, INFINITY, 0, 2e8, 8e6, 32768, 32768, &st) == 0, "period");
        if (st.full_s >= 0.75) {
            adm_full += st.admitted;
            n_full++;
        } else if (st.full_s == 0) {
            adm_free += st.admitted;
            n_free++;
        }
    }
    CHECK(n_full > 100 && n_free > 0, "cache rarely full (%d full periods, %d free)", n_full, n_free);
    if (n_full && n_free)
        CHECK(adm_full / n_full < 0.6 * adm_free / n_free, "no collapse: %g vs %g", adm_full / n_full,
              adm_free / n_free);
    CHECK(s.n_req > 0 && lq_quantile(&s, 0.999) >= lq_quantile(&s, 0.5), "quantiles not ordered");
    lq_free(&s);

    /* a long overload with a deep host queue: the batch array grows and compacts */
    lq_params p8 = params(8, 0);
    CHECK(lq_init(&s, &p8) == 0, "init");
    lq_set_mix(&s, &m);
    for (int t = 0; t < 2000; t++)
        CHECK(lq_period(&s, 1e9, 2e9, 6e9, 1e12, 32768, 32768, &st) == 0, "period");
    CHECK(s.cap > 64 && s.hq > 0, "queue did not grow (cap %zu)", s.cap);
    double total = 0;
    for (int i = 0; i < LQ_BINS; i++)
        total += s.hist[i];
    CHECK(fabs(total - s.n_req) <= 1e-6 * total, "histogram does not add up");
    lq_free(&s);

    /* bypass: writes beyond the threshold go to the tier */
    lq_params pb = params(4, 1);
    pb.bypass_us = 20000;
    CHECK(lq_init(&s, &pb) == 0, "init");
    lq_set_mix(&s, &m);
    double byp = 0;
    for (int t = 0; t < 300; t++) {
        CHECK(lq_period(&s, 1e9, 1e9, 3e9, 64e6, 32768, 32768, &st) == 0, "period");
        byp += st.bypassed;
    }
    CHECK(byp > 0 && s.backlog >= 0, "nothing bypassed");
    lq_free(&s);

    lq_sim empty;
    CHECK(lq_init(&empty, &p4) == 0, "init");
    CHECK(isnan(lq_quantile(&empty, 0.5)), "quantile of nothing is not NaN");
    lq_free(&empty);

    test_rng();
    test_env();
    test_vec();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test_lqoco: ok\n");
    return failures != 0;
}
