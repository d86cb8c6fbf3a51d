/* C-level test of the HSS core and device model, built with AddressSanitizer + UBSan by
 * `make test-asan`. Drives random requests, placements and migrations through every
 * configuration shape (2-4 devices, tiny capacities to force eviction cascades) and checks the
 * invariants after every request:
 *   - every device's occupancy equals the number of pages the page table says it holds;
 *   - no bounded device exceeds its capacity;
 *   - latencies are finite and >= 0; completions never precede issue.
 * Prints "N passed, 0 failed" (or exits non-zero at the first violation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hss.h"
#include "simdev.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); failures++; return 1; } } while (0)

static uint64_t rs = 88172645463325252ULL;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

static simdev_params ssd(uint64_t cap)
{
    simdev_params p = {0};
    p.kind = SIMDEV_SSD; p.servers = 4; p.read_us = 10; p.write_us = 20;
    p.read_bw = 2000; p.write_bw = 1000; p.capacity_pages = cap;
    p.gc_thr = 0.5; p.gc_max = 2; p.noise_p = 0.01; p.noise_sigma = 1;
    return p;
}

static simdev_params qlc(uint64_t cap)
{
    simdev_params p = ssd(cap);
    p.slc_bytes = 64 * 4096.0; p.slc_refill_bw = 10; p.cliff_bw = 50;
    return p;
}

static simdev_params hdd(uint64_t cap)
{
    simdev_params p = {0};
    p.kind = SIMDEV_HDD; p.servers = 1; p.read_bw = 200; p.write_bw = 200; p.capacity_pages = cap;
    p.seek_min_us = 1000; p.seek_max_us = 15000; p.rotation_us = 8333;
    return p;
}

static int check_invariants(hss *h)
{
    uint64_t held[HSS_MAX_DEV] = {0};
    for (uint32_t c = 0; c < h->pt.nchunks; c++)
        for (uint32_t i = 0; i < HSS_CHUNK; i++) {
            int d = hss_dev_of(&h->pt.chunks[c][i]);
            CHECK(d >= -1 && d < h->ndev, "page on device %d", d);
            if (d >= 0)
                held[d]++;
        }
    for (int d = 0; d < h->ndev; d++) {
        CHECK(held[d] == h->dev[d].used_pages, "device %d: %llu pages held, occupancy %llu", d,
              (unsigned long long)held[d], (unsigned long long)h->dev[d].used_pages);
        if (d != h->home)
            CHECK(held[d] <= h->cap[d], "device %d over capacity", d);
    }
    return 0;
}

static int run(int ndev, int qd, int mq, uint64_t span_pages, int nreq)
{
    simdev dev[HSS_MAX_DEV];
    uint64_t cap[HSS_MAX_DEV];
    for (int d = 0; d < ndev; d++) {
        simdev_params p = d == ndev - 1 ? hdd(1u << 20) : d == 2 ? qlc(64) : ssd(32u << d);
        CHECK(simdev_check(&p) == NULL, "params rejected: %s", simdev_check(&p));
        simdev_init(&dev[d], &p, (uint64_t)d);
        cap[d] = p.capacity_pages;
    }
    hss h;
    CHECK(hss_init(&h, ndev, dev, cap, mq, 4, 8, qd) == HSS_OK, "init");
    CHECK(hss_reset(&h, 7) == HSS_OK, "reset");
    double t = 0;
    for (int i = 0; i < nreq; i++) {
        t += (double)(rnd() % 200);
        int op = (int)(rnd() & 1);
        uint64_t off = (rnd() % span_pages) * 4096 + (rnd() % 3 ? 0 : rnd() % 4096);
        uint64_t size = 1 + rnd() % (16 * 4096);
        if (i % 97 == 0)
            off += (uint64_t)1 << 40; /* a far region: a second page-table chunk family */
        CHECK(hss_begin(&h, t, op, off, size) == HSS_OK, "begin %d", i);
        double lat;
        CHECK(hss_finish(&h, (int)(rnd() % (uint64_t)ndev), &lat) == HSS_OK, "finish %d", i);
        CHECK(isfinite(lat) && lat >= 0, "latency %f", lat);
        uint64_t page;
        if (hss_candidate(&h, &page))
            CHECK(hss_enqueue(&h, page, (int)(rnd() % (uint64_t)ndev)) >= 0, "enqueue");
        if (i % 50 == 0) {
            uint64_t pg = off >> 12;
            double done;
            int rc = hss_move(&h, pg, (int)(rnd() % (uint64_t)ndev), t, &done);
            CHECK(rc == HSS_OK || rc == HSS_EINVAL, "move rc %d", rc);
        }
        if (check_invariants(&h))
            return 1;
    }
    CHECK(h.c.requests == (uint64_t)nreq, "requests counted");
    CHECK(h.c.migrations + h.c.evictions > 0, "no data movement exercised");
    CHECK(hss_memory_bytes(&h) > 0, "memory");
    /* A bad request is refused, not crashed on. */
    CHECK(hss_begin(&h, t, 3, 0, 4096) == HSS_EINVAL, "bad op accepted");
    CHECK(hss_begin(&h, t, 0, 0, 0) == HSS_EINVAL, "zero size accepted");
    hss_free(&h);
    return 0;
}

static int test_device_model(void)
{
    simdev d;
    simdev_params p = hdd(1u << 20);
    simdev_init(&d, &p, 1);
    double seq = 0, rand_ = 0, t = 0;
    for (int i = 0; i < 200; i++) { double e = simdev_io(&d, SIMDEV_READ, (uint64_t)i, 1, t, 0); seq += e - t; t = e; }
    for (int i = 0; i < 200; i++) { double e = simdev_io(&d, SIMDEV_READ, rnd() % (1u << 20), 1, t, 0); rand_ += e - t; t = e; }
    CHECK(rand_ > 20 * seq, "hdd random (%f) not much slower than sequential (%f)", rand_, seq);
    simdev_params bad = p;
    bad.servers = 0;
    CHECK(simdev_check(&bad) != NULL, "servers=0 accepted");
    bad = p;
    bad.read_bw = -1;
    CHECK(simdev_check(&bad) != NULL, "negative bandwidth accepted");
    return 0;
}

int main(void)
{
    int tests = 0;
    tests++; test_device_model();
    for (int ndev = 2; ndev <= 4; ndev++) {
        tests++; run(ndev, 1, 10, 4096, 3000);
        tests++; run(ndev, 32, 3, 200, 3000);   /* tiny span: constant eviction and migration */
        tests++; run(ndev, 8, 0, 100000, 2000); /* no migration queue */
    }
    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
