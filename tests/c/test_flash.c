/* The flash SSD model (backends/flash/: the core, the data cache, the preconditioning) under
 * AddressSanitizer + UBSan: configuration errors, preconditioning, mixed multi-stream traffic
 * through GC with unit changes and priorities, suspension and the DRAM data cache, the FTL's
 * consistency after every window, and bad requests. Run by `make test-asan`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash.h"

static char err[512];
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #c, err); exit(1); } } while (0)

static fl_config small(void)
{
    fl_config c;
    memset(&c, 0, sizeof c);
    c.n_channels = 2; c.chips_per_channel = 2; c.dies_per_chip = 2; c.planes_per_die = 2;
    c.blocks_per_plane = 32; c.pages_per_block = 16; c.page_size = 8192;
    c.op_ratio = 0.15; c.gc_threshold = 0.1;
    c.read_ns = 75000; c.program_ns = 750000; c.erase_ns = 3800000;
    c.channel_mtps = 333; c.channel_width = 1;
    c.n_streams = 3; c.queue_depth[0] = 4; c.queue_depth[1] = 16; c.queue_depth[2] = 1;
    c.seed = 7;
    return c;
}

int main(void)
{

    fl_config c = small();
    /* invalid geometry is refused with the field's name */
    fl_config bad = c;
    bad.planes_per_die = 9;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "planes_per_die"));
    bad = c;
    bad.op_ratio = 0;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "op_ratio"));

    fl_sim *s = fl_new(&c, err, sizeof err);
    CHECK(s != NULL);
    CHECK(fl_precondition(s, 0.8, NULL, FL_LAYOUT_LINEAR, NULL, NULL, NULL, 0, err, sizeof err) == 0);
    CHECK(fl_check(s, err, sizeof err) == 0);
    CHECK(fl_precondition(s, 1.5, NULL, FL_LAYOUT_LINEAR, NULL, NULL, NULL, 0, err, sizeof err) < 0);
    /* MQSim's layout, of a fraction and of an explicit page set (every third page); a bad layout */
    for (int k = 0; k < 2; k++) {
        fl_sim *sm = fl_new(&c, err, sizeof err);
        CHECK(sm != NULL);
        uint64_t lp = fl_logical_pages(sm);
        uint8_t *sel = calloc((size_t)(lp + 7) / 8, 1);
        CHECK(sel != NULL);
        for (uint64_t l = 0; l < lp; l += 3) sel[l >> 3] |= (uint8_t)(1u << (l & 7));
        CHECK(fl_precondition(sm, 0.7, NULL, 7, NULL, NULL, NULL, 0, err, sizeof err) < 0 && strstr(err, "layout"));
        CHECK(fl_precondition(sm, 0.7, k ? sel : NULL, FL_LAYOUT_MQSIM, NULL, NULL, NULL, 0, err, sizeof err) == 0);
        CHECK(fl_check(sm, err, sizeof err) == 0);
        free(sel);
        fl_free(sm);
    }

    int32_t units[2] = {0, 3};
    CHECK(fl_set_units(s, 0, units, 2, err, sizeof err) == 0);
    int32_t badu[1] = {4};
    CHECK(fl_set_units(s, 0, badu, 1, err, sizeof err) < 0 && strstr(err, "unit 4"));
    fl_set_priority(s, 2, 2);

    uint64_t lp = fl_logical_pages(s);
    int64_t cap = (int64_t)lp * c.page_size;
    enum { N = 4000 };
    static double t[N];
    static int32_t st[N];
    static int64_t off[N], sz[N];
    static uint8_t w[N];
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = i * 40.0;
        st[i] = (int32_t)((x >> 33) % 3);
        sz[i] = 4096 * (int64_t)(1 + (x >> 40) % 4);
        off[i] = (int64_t)((x >> 20) % (uint64_t)((cap - sz[i]) / 4096)) * 4096;
        w[i] = ((x >> 50) % 10) < 7;
    }
    /* a request past the capacity is refused and leaves the simulator unchanged */
    int64_t past = cap;
    CHECK(fl_submit(s, 1, t, st, &past, sz, w, err, sizeof err) < 0 && strstr(err, "capacity"));
    CHECK(fl_submit(s, N, t, st, off, sz, w, err, sizeof err) == 0);
    for (int k = 1; k <= 40; k++) {
        fl_run_until(s, k * 50000.0);
        if (k == 10) CHECK(fl_set_units(s, 1, units, 1, err, sizeof err) == 0);
        CHECK(fl_check(s, err, sizeof err) == 0);
    }
    fl_run_until(s, 1e9);
    CHECK(fl_check(s, err, sizeof err) == 0);
    fl_stream_stats ss[3];
    fl_stream_counters(s, ss);
    int64_t done = ss[0].completed + ss[1].completed + ss[2].completed;
    CHECK(done == N);
    CHECK(fl_latency_count(s) == N);
    int64_t hw, fp, gr, er;
    fl_global_counters(s, &hw, &fp, &gr, &er);
    CHECK(gr > 0 && fp > hw); /* GC ran and moved pages */
    fl_free(s);

    /* MQSim's mode: reads of never-written pages map them; GC and the FTL stay consistent */
    fl_config m = small();
    m.blocks_per_plane = 64;
    m.map_unwritten_reads = 1;
    fl_sim *s2 = fl_new(&m, err, sizeof err);
    CHECK(s2 != NULL);
    /* stream 0's half of the logical space laid out on units {0, 3}, stream 1's on {1, 2} */
    int32_t u03[2] = {0, 3}, u12[2] = {1, 2};
    CHECK(fl_set_units(s2, 0, u03, 2, err, sizeof err) == 0 && fl_set_units(s2, 1, u12, 2, err, sizeof err) == 0);
    int64_t half = (int64_t)fl_logical_pages(s2) / 2, rlo[2] = {0, half}, rhi[2] = {half, 2 * half};
    int32_t rst[2] = {0, 1}, rbad[2] = {0, 5};
    CHECK(fl_precondition(s2, 0.5, NULL, FL_LAYOUT_LINEAR, rlo, rhi, rbad, 2, err, sizeof err) < 0 && strstr(err, "range 1"));
    CHECK(fl_precondition(s2, 0.5, NULL, FL_LAYOUT_LINEAR, rlo, rhi, rst, 2, err, sizeof err) == 0);
    CHECK(fl_check(s2, err, sizeof err) == 0);
    int64_t cap2 = (int64_t)fl_logical_pages(s2) * m.page_size;
    for (int i = 0; i < N; i++) off[i] = off[i] % (cap2 - 16384) / 4096 * 4096;
    CHECK(fl_submit(s2, N, t, st, off, sz, w, err, sizeof err) == 0);
    fl_run_until(s2, 1e9);
    CHECK(fl_check(s2, err, sizeof err) == 0);
    CHECK(fl_latency_count(s2) == N);
    fl_free(s2);

    /* program/erase suspension: negative times refused by name; the same mixed traffic through GC
     * with both suspensions on (low thresholds, so that they happen often, with resumes, background
     * operations on the other die and writes suspending erases): every request completes, the FTL
     * stays consistent after every window, and both kinds of suspension happened */
    bad = small();
    bad.susp_erase_ns = -1;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "suspend_erase_us"));
    bad = small();
    bad.susp_program_read_min_ns = -5;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "suspend_program_for_read_min_us"));
    fl_config sp = small();
    sp.susp_program = sp.susp_erase = 1;
    sp.susp_program_ns = 100000; sp.susp_erase_ns = 200000;
    sp.susp_program_read_min_ns = 50000; sp.susp_erase_read_min_ns = 300000; sp.susp_erase_write_min_ns = 300000;
    fl_sim *s3 = fl_new(&sp, err, sizeof err);
    CHECK(s3 != NULL);
    CHECK(fl_precondition(s3, 0.8, NULL, FL_LAYOUT_LINEAR, NULL, NULL, NULL, 0, err, sizeof err) == 0);
    for (int i = 0; i < N; i++) off[i] = off[i] % (cap - 16384) / 4096 * 4096;
    CHECK(fl_submit(s3, N, t, st, off, sz, w, err, sizeof err) == 0);
    for (int k = 1; k <= 40; k++) {
        fl_run_until(s3, k * 50000.0);
        CHECK(fl_check(s3, err, sizeof err) == 0);
    }
    fl_run_until(s3, 1e9);
    CHECK(fl_check(s3, err, sizeof err) == 0);
    CHECK(fl_latency_count(s3) == N);
    int64_t ps, es, hw3, fp3, gr3, er3;
    fl_suspend_counters(s3, &ps, &es);
    fl_global_counters(s3, &hw3, &fp3, &gr3, &er3);
    CHECK(ps > 0 && es > 0 && gr3 > 0);
    fl_free(s3);

    /* the DRAM data cache: bad settings refused by name; then the mixed traffic (a dense burst, then
     * spread over two simulated seconds, so that the first-write sets are reset) through GC with
     * suspension on, write and read caching, shared and partitioned, a cache of 2048 pages (the
     * slot table grows and rehashes) or of 6 (LRU evictions of dirty pages, write-backs waiting for
     * back pressure): every request completes, FTL and cache stay consistent after every window */
    bad = small();
    bad.cache_mode = 4;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "cache_mode"));
    bad = small();
    bad.cache_mode = FL_CACHE_WRITE; bad.cache_bytes = 4096;
    bad.dram_row_bytes = 8192; bad.dram_burst_bytes = 1; bad.dram_mtps = 100;
    CHECK(fl_new(&bad, err, sizeof err) == NULL && strstr(err, "cache_capacity_bytes"));
    for (int i = 0; i < N; i++) t[i] = i < N / 2 ? i * 20.0 : (N / 2) * 20.0 + (i - N / 2) * 1000.0;
    fl_cache_stats cs[4];
    for (int k = 0; k < 4; k++) {
        fl_config cc = sp;
        cc.cache_mode = k < 2 ? FL_CACHE_WRITE | FL_CACHE_READ : FL_CACHE_WRITE;
        cc.cache_partitioned = k % 2;
        cc.cache_bytes = (k < 2 ? 2048 : 6) * (int64_t)cc.page_size;
        cc.dram_row_bytes = 8192; cc.dram_burst_bytes = k < 2 ? 1 : 4; cc.dram_mtps = k < 2 ? 100 : 800;
        cc.dram_trcd_ns = cc.dram_tcl_ns = cc.dram_trp_ns = 13;
        fl_sim *s4 = fl_new(&cc, err, sizeof err);
        CHECK(s4 != NULL);
        CHECK(fl_precondition(s4, 0.8, NULL, FL_LAYOUT_LINEAR, NULL, NULL, NULL, 0, err, sizeof err) == 0);
        CHECK(fl_submit(s4, N, t, st, off, sz, w, err, sizeof err) == 0);
        for (int j = 1; j <= 60; j++) {
            fl_run_until(s4, j * 50000.0);
            CHECK(fl_check(s4, err, sizeof err) == 0);
        }
        fl_run_until(s4, 1e9);
        CHECK(fl_check(s4, err, sizeof err) == 0);
        CHECK(fl_latency_count(s4) == N);
        fl_cache_counters(s4, &cs[k]);
        CHECK(cs[k].write_pages > 0 && cs[k].writebacks > 0);
        if (k < 2) CHECK(cs[k].read_hits > 0 && cs[k].read_partial_hits > 0);
        else CHECK(cs[k].evictions > 0 && cs[k].waits > 0);
        fl_free(s4);
    }
    printf("test_flash: ok (%lld requests, %lld GC runs, WA %.2f; with suspension: %lld program and %lld erase "
           "suspensions; with a 6-page cache: %lld write-backs, %lld evictions, %lld waits)\n", (long long)done,
           (long long)gr, (double)fp / hw, (long long)ps, (long long)es, (long long)cs[2].writebacks,
           (long long)cs[2].evictions, (long long)cs[2].waits);
    return 0;
}
