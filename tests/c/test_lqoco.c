/* The L-QoCo simulator (backends/lqoco/lqoco_sim.c) under AddressSanitizer + UBSan: parameter
 * checks, eq. 1 (dirty = max(0, dirty + admitted - O) per period with one slot), the host-queue
 * array growing and compacting over a long overload, the cache filling without a token limit and
 * collapsing admissions while full, and the latency histogram and quantiles. */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test_lqoco: ok\n");
    return failures != 0;
}
