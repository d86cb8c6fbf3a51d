/* C-level test of the env unit (backends/core/env.c: the feature table, the features, one env's
 * step), built with AddressSanitizer + UBSan by `make test-asan`. Checks:
 *   - the feature table: names, order and bins of both sets for 1..HSS_MAX_DEV devices, Sibyl's
 *     set a reordering of Harmonia's first six;
 *   - the features of a page never seen and of a page just accessed, under the three room
 *     features; observation rows (float32 and int64) are the bins;
 *   - a "stay" is no move, also when the step's request moved the candidate page elsewhere;
 *   - hss_env_step over a random trace: each latency lands in the env's latencies at its step
 *     (none past them), a "stay" is never queued, queued moves come back in FIFO order with their
 *     penalty terms, evictions and the candidate's device are reported, a step after the episode
 *     ended is refused, and hss_env_begin starts the FIFO anew;
 *   - everything is freed (LeakSanitizer).
 * Prints "N passed, 0 failed" (or exits non-zero at the first violation of a check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "hss.h"
#include "simdev.h"

static int failures, passed;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); failures++; return 1; } } while (0)

#define NDEV 3
#define NREQ 400

static uint64_t rs = 88172645463325252ULL;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

static int test_layout(void)
{
    static const char *const harmonia[] = {"req_type", "req_size", "acc_intr", "acc_freq", "fast_cap", "curr_dev",
                                           "migr_intr"};
    static const int bins[] = {2, 8, 64, 64, 8, 0, 64};
    static const int sibyl[] = {1, 0, 2, 3, 4, 5};  /* Sibyl's column k is Harmonia's sibyl[k] */
    for (int n = 1; n <= HSS_MAX_DEV; n++) {
        hss_feature_desc h[HSS_FEAT_MAX], s[HSS_FEAT_MAX];
        int nh = hss_feature_layout(n, 0, h), ns = hss_feature_layout(n, HSS_FEAT_SIBYL | HSS_FEAT_FITS, s);
        CHECK(nh == 7 + (n > 2 ? n - 2 : 0) && nh == hss_feature_count(n, HSS_FEAT_FITS | HSS_FEAT_BINARY),
              "%d devices: %d Harmonia features", n, nh);
        CHECK(ns == 6 && ns == hss_feature_count(n, HSS_FEAT_SIBYL), "%d devices: %d Sibyl features", n, ns);
        for (int k = 0; k < nh; k++) {
            char name[16];
            if (k < 7)
                snprintf(name, sizeof name, "%s", harmonia[k]);
            else
                snprintf(name, sizeof name, "free_%d", k - 6);
            int b = k < 7 ? (bins[k] ? bins[k] : n) : 8;
            CHECK(!strcmp(h[k].name, name) && h[k].bins == b, "%d devices, feature %d: %s/%d, not %s/%d", n, k,
                  h[k].name, h[k].bins, name, b);
        }
        for (int k = 0; k < ns; k++)
            CHECK(!strcmp(s[k].name, h[sibyl[k]].name) && s[k].bins == h[sibyl[k]].bins,
                  "%d devices, Sibyl feature %d: %s", n, k, s[k].name);
    }
    passed++;
    return 0;
}

typedef struct rig {
    simdev dev[NDEV];
    hss h;
    hss_env e;
} rig;

static int rig_init(rig *r, int queue, uint32_t min_interval)
{
    uint64_t cap[NDEV] = {8, 32, 100000};
    double us[NDEV] = {10, 80, 400};
    for (int d = 0; d < NDEV; d++) {
        simdev_params p = {0};
        p.kind = SIMDEV_SSD; p.servers = 2; p.read_us = us[d]; p.write_us = 2 * us[d];
        p.read_bw = 2000; p.write_bw = 1000; p.capacity_pages = cap[d];
        simdev_init(&r->dev[d], &p, (uint64_t)d);
    }
    memset(&r->e, 0, sizeof r->e);
    CHECK(hss_init(&r->h, NDEV, r->dev, cap, queue, min_interval, 8, 4) == HSS_OK, "hss_init");
    return 0;
}

static void rig_free(rig *r)
{
    hss_env_free(&r->e);
    hss_free(&r->h);
}

/* Features of page 0: never seen, then after one access placed on device 0. */
static int test_features(void)
{
    static const int flags[] = {0, HSS_FEAT_FITS, HSS_FEAT_FITS | HSS_FEAT_BINARY};
    for (int f = 0; f < 3; f++) {
        rig r;
        if (rig_init(&r, 4, 2))
            return 1;
        float row[HSS_FEAT_MAX], row_m[HSS_FEAT_MAX];
        int64_t raw[HSS_FEAT_MAX];
        int bins[HSS_FEAT_MAX], nbins[HSS_FEAT_MAX];
        CHECK(hss_env_begin(&r.h, &r.e, 0.0, 0, 0, 4 * 4096, 1, flags[f], 0, row, row_m) == HSS_OK, "begin");
        int n = hss_features(&r.h, 0, 0, 4, flags[f], bins, nbins);
        int never[] = {0, 2, 63, 0, 7, NDEV - 1, 63, 7};
        CHECK(n == 8, "%d features", n);
        for (int k = 0; k < n; k++) {
            CHECK(bins[k] == never[k], "flags %d, never seen, feature %d: bin %d, not %d", flags[f], k, bins[k],
                  never[k]);
            CHECK(row[k] == (float)bins[k] / (float)(nbins[k] - 1), "flags %d: row %d is not the bin", flags[f], k);
        }
        CHECK(r.e.cand < 0 && row_m[2] == 1.0f, "a candidate before any page was placed");
        hss_env_out o;
        /* pages 0..3 go to device 0 (4 of its 8 pages used), then a request of page 100 */
        CHECK(hss_env_step(&r.h, &r.e, 0, -1, 1, 100.0, 1, 100 * 4096, 4096, 1, flags[f], 0, 0, NULL, NULL, &o)
              == HSS_OK, "step");
        /* page 0 for a 5-page write: half of device 0 free (4 eighths), where 5 pages do not fit */
        n = hss_features(&r.h, 0, 1, 5, flags[f], bins, nbins);
        int room = f == 0 ? 4 : 0;
        int seen[] = {1, 2, 2, 4, room, 0, 2, 7};
        for (int k = 0; k < n; k++)
            CHECK(bins[k] == seen[k], "flags %d, accessed once, feature %d: bin %d, not %d", flags[f], k, bins[k],
                  seen[k]);
        CHECK(hss_features_row(&r.h, 0, 1, 5, flags[f], 1, raw) == n, "raw row");
        for (int k = 0; k < n; k++)
            CHECK(raw[k] == bins[k], "flags %d: raw row %d is not the bin", flags[f], k);
        rig_free(&r);
    }
    passed++;
    return 0;
}

/* The migration agent's "stay" (the device the candidate was offered on) is no move, even when
 * the request finished in the same step placed the candidate elsewhere. */
static int test_stay(void)
{
    rig r;
    if (rig_init(&r, 4, 1))
        return 1;
    hss_env_out o;
    /* writes of pages 0..7, placed on device 0, until one of them is the candidate */
    CHECK(hss_env_begin(&r.h, &r.e, 0.0, 1, 0, 8 * 4096, 1, 0, 0, NULL, NULL) == HSS_OK, "begin");
    int i = 0;
    for (; i < 100 && r.e.cand < 0; i++)
        CHECK(hss_env_step(&r.h, &r.e, 0, -1, 1, 100.0 * (i + 1), 1, 0, 8 * 4096, 1, 0, 0, i, NULL, NULL, &o)
              == HSS_OK, "step %d", i);
    CHECK(i < 100 && r.e.cand < 8 && r.e.cand_dev == 0, "no candidate");
    /* the write places them on device 1; the migration agent stays (device 0) */
    long long c = r.e.cand;
    uint64_t moves = r.h.c.migrations + r.h.c.migrations_stale;
    CHECK(hss_env_step(&r.h, &r.e, 1, 0, 1, 100.0 * (i + 1), 0, 40 * 4096, 4096, 1, 0, 0, i, NULL, NULL, &o) == HSS_OK,
          "step");
    CHECK(r.e.pend_len == 0 && r.h.mq_len == 0 && r.h.c.migrations + r.h.c.migrations_stale == moves,
          "the stay was queued as a move");
    CHECK(hss_page_device(&r.h, c) == 1, "the candidate was not placed on device 1");
    rig_free(&r);
    passed++;
    return 0;
}

/* A random episode with random placements and moves (a long migration queue so the FIFO grows). */
static int test_step(void)
{
    rig r;
    if (rig_init(&r, 200, 2))
        return 1;
    static double t[NREQ], lat[NREQ + 1];
    static uint8_t op[NREQ];
    static uint64_t off[NREQ], size[NREQ];
    for (int i = 0; i < NREQ; i++) {
        t[i] = 5.0 * i;
        op[i] = rnd() % 3 == 0;
        off[i] = (rnd() % 300) * 4096;
        size[i] = (1 + rnd() % 3) * 4096;
    }
    const int nlat = NREQ - 10;  /* the last steps' latencies fall past the array: not written */
    for (int i = 0; i <= NREQ; i++)
        lat[i] = -1.0;
    r.e.lat = lat, r.e.nlat = nlat;
    int flags = HSS_FEAT_FITS;
    int nf = hss_feature_count(NDEV, flags);
    float obs_p[HSS_FEAT_MAX], obs_m[HSS_FEAT_MAX];
    CHECK(hss_env_begin(&r.h, &r.e, t[0], op[0], off[0], size[0], 1, flags, 0, obs_p, obs_m) == HSS_OK, "begin");
    long long queued = 0, popped = 0, last_popped = -1, evicted = 0;
    for (int i = 0; i < NREQ; i++) {
        int next = i + 1 < NREQ;
        long long cand = r.e.cand;
        int cand_dev = r.e.cand_dev;
        CHECK(cand < 0 ? cand_dev == -1 : cand_dev == hss_page_device(&r.h, cand), "step %d: candidate's device", i);
        int move = (int)(rnd() % (NDEV + 1)) - 1;
        size_t before = r.e.pend_len;
        hss_env_out o;
        int n = i + 1;
        CHECK(hss_env_step(&r.h, &r.e, (int)(rnd() % NDEV), move, next, next ? t[n] : 0, next ? op[n] : 0,
                           next ? off[n] : 0, next ? size[n] : 1, 1, flags, 0, i, obs_p, obs_m, &o) == HSS_OK,
              "step %d", i);
        CHECK(o.latency > 0 && (i >= nlat || lat[i] == o.latency), "step %d: latency %g, kept %g", i, o.latency,
              i < nlat ? lat[i] : 0.0);
        CHECK(o.evicted >= 0 && o.delay >= 0 && o.ran <= r.e.pend_len, "step %d: report", i);
        int stay = cand < 0 || move < 0 || move == cand_dev;
        CHECK(!stay || r.e.pend_len == before, "step %d: a stay was queued", i);
        queued += (long long)(r.e.pend_len - before);
        for (size_t k = 0; k < o.ran; k++) {
            hss_pend p = hss_env_pop(&r.e);
            CHECK(p.step > last_popped && p.step <= i && p.pen > 0 && p.pen <= 2.0, "step %d: popped (%lld, %g)", i,
                  p.step, p.pen);
            last_popped = p.step;
            popped++;
        }
        CHECK(o.executed || o.ran == 0, "step %d: moves ran, none reported", i);
        evicted += o.evicted;
        if (next)
            for (int k = 0; k < nf; k++)
                CHECK(obs_p[k] >= 0.0f && obs_p[k] <= 1.0f && obs_m[k] >= 0.0f && obs_m[k] <= 1.0f,
                      "step %d: observation out of [0, 1]", i);
    }
    CHECK(lat[nlat] == -1.0 && lat[NREQ] == -1.0, "a latency past the array was written");
    CHECK(queued > 64 && popped > 0 && popped <= queued, "queued %lld, ran %lld", queued, popped);
    CHECK(r.e.pend_cap > 64, "the FIFO did not grow");
    CHECK(evicted == (long long)r.h.c.evictions && evicted > 0, "evictions %lld of %llu", evicted,
          (unsigned long long)r.h.c.evictions);
    CHECK(r.e.cand == -1, "a candidate after the episode ended");
    hss_env_out o;
    CHECK(hss_env_step(&r.h, &r.e, 0, -1, 0, 0, 0, 0, 1, 1, flags, 0, NREQ, NULL, NULL, &o) == HSS_EINVAL,
          "a step after the episode ended");
    CHECK(hss_reset(&r.h, 1) == HSS_OK, "reset");
    CHECK(hss_env_begin(&r.h, &r.e, t[0], op[0], off[0], size[0], 1, flags, 0, NULL, NULL) == HSS_OK
          && r.e.pend_len == 0, "begin again: the FIFO holds %zu moves", r.e.pend_len);
    rig_free(&r);
    passed++;
    return 0;
}

int main(void)
{
    test_layout();
    test_features();
    test_stay();
    test_step();
    printf("%d passed, %d failed\n", passed, failures);
    return failures != 0;
}
