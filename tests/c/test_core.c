/* C-level test of the HSS core and device model, built with AddressSanitizer + UBSan by
 * `make test-asan`. Drives random requests, placements and migrations through every
 * configuration shape (2-4 devices, tiny capacities to force eviction cascades) and checks the
 * invariants after every request:
 *   - every device's occupancy equals the number of pages the page table says it holds;
 *   - no bounded device exceeds its capacity;
 *   - latencies are finite and >= 0; completions never precede issue;
 *   - hss_replay gives what a begin/finish loop with the same placement does.
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
            uint64_t key = h->pt.chunk_keys[c] & ~HSS_DENSE_BIT;
            int d = hss_dev_of(hss_lookup(h, (key << HSS_CHUNK_BITS) | i));
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

static int reuse_on; /* run(): cleanings with reuse victims */
static uint32_t readahead_on; /* run(): readahead window (0: off) */

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
    hss_set_reuse_victims(&h, reuse_on);
    CHECK(hss_set_readahead(&h, readahead_on) == HSS_OK, "readahead");
    double t = 0;
    uint64_t next = 0;
    for (int i = 0; i < nreq; i++) {
        t += (double)(rnd() % 200) + (readahead_on && rnd() % 4 == 0 ? 30000.0 : 0.0); /* idle disk time */
        int op = readahead_on ? rnd() % 4 == 0 : (int)(rnd() & 1); /* readahead: mostly reads */
        uint64_t off = (rnd() % span_pages) * 4096 + (rnd() % 3 ? 0 : rnd() % 4096);
        if (readahead_on && rnd() % 4)
            off = next; /* a sequential stream, for the readahead */
        uint64_t size = 1 + rnd() % (16 * 4096);
        if (i % 97 == 0)
            off += (uint64_t)1 << 40; /* a far region: a second page-table chunk family */
        CHECK(hss_begin(&h, t, op, off, size) == HSS_OK, "begin %d", i);
        double lat;
        /* with readahead, everything is placed home: the faster devices are left to it (and to the
         * migrations), and the streams run over pages at home */
        int place = readahead_on ? ndev - 1 : (int)(rnd() % (uint64_t)ndev);
        CHECK(hss_finish(&h, place, &lat) == HSS_OK, "finish %d", i);
        CHECK(isfinite(lat) && lat >= 0, "latency %f", lat);
        next = (off + size + 4095) / 4096 * 4096;
        uint64_t page;
        if (hss_candidate(&h, &page))
            CHECK(hss_enqueue(&h, page, (int)(rnd() % (uint64_t)ndev)) >= 0, "enqueue");
        if (i % 37 == 0) { /* a background cleaning of a faster device (cascades included) */
            int cd = (int)(rnd() % (uint64_t)(ndev - 1)); /* drawn in a fixed order */
            uint32_t ck = 1 + (uint32_t)(rnd() % 64);
            int force = (int)(rnd() & 1);
            uint32_t chunk = (uint32_t)(rnd() % 3) * 8, first = (uint32_t)(rnd() % 3);
            if (readahead_on)
                first = 0; /* whole chunks leave the readahead room to work with */
            int rc = hss_clean(&h, cd, ck, force, chunk, first);
            CHECK(rc == 0 || rc == 1, "clean rc %d", rc);
        }
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
    CHECK(!readahead_on || h.c.prefetched > 0, "no readahead exercised (%d devices, span %llu)", ndev, (unsigned long long)span_pages);
    CHECK(hss_memory_bytes(&h) > 0, "memory");
    /* A bad request is refused, not crashed on. */
    CHECK(hss_begin(&h, t, 3, 0, 4096) == HSS_EINVAL, "bad op accepted");
    CHECK(hss_begin(&h, t, 0, 0, 0) == HSS_EINVAL, "zero size accepted");
    /* More pages than one request may touch: refused before any work (an unaligned 1 GiB spans
     * one page more than the bound); the bound itself is accepted. */
    uint32_t now = h.now;
    CHECK(hss_begin(&h, t, 1, 1, HSS_MAX_REQ_PAGES << 12) == HSS_EBIG, "too many pages accepted");
    CHECK(hss_begin(&h, t, 1, 1ull << 40, 1ull << 40) == HSS_EBIG, "a 1 TiB request accepted");
    CHECK(h.now == now && !h.cur.active, "a refused request changed the state");
    CHECK(hss_begin(&h, t, 1, 0, HSS_MAX_REQ_PAGES << 12) == HSS_OK, "the bound refused");
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


/* The candidate scan as it was with dense chunks only, over hss_lookup (an absent page is a
 * never-placed record): the leaves must give the same candidates and cursor. */
static int ref_candidate(hss *h, uint32_t *chunk, uint32_t *off, uint64_t *page)
{
    hss_pagetable *pt = &h->pt;
    if (!pt->nchunks)
        return 0;
    uint32_t examined = 0, budget = h->scan_window * 16, seen = 0;
    uint64_t best = 0;
    int found = 0;
    while (examined < budget && seen < h->scan_window) {
        if (*chunk >= pt->nchunks)
            *chunk = *off = 0;
        uint64_t pno = ((uint64_t)(pt->chunk_keys[*chunk] & ~HSS_DENSE_BIT) << HSS_CHUNK_BITS) | *off;
        hss_page *pg = hss_lookup(h, pno);
        if (++*off == HSS_CHUNK) {
            *off = 0;
            ++*chunk;
        }
        examined++;
        if (!pg || !pg->dev)
            continue;
        seen++;
        uint64_t interval = h->now - pg->last_move;
        if ((pg->flags & HSS_F_QUEUED) || interval < h->min_interval || pg->last_access == h->now)
            continue;
        if (!found || interval > best) {
            best = interval;
            *page = pno;
            found = 1;
        }
    }
    return found;
}

/* Sparse leaves and dense chunks: records survive leaf growth and densification, lookups of
 * absent pages give NULL, the scan equals the dense-only scan, memory per touched page stays
 * <= 32 bytes for any spread and ~16 for a dense space, reset frees everything (ASan). */
static int test_sparse(const char *shape, uint64_t npages, uint32_t scan_window)
{
    simdev dev[2];
    simdev_params ps[2] = {ssd(npages / 8 + 1), hdd(1u << 20)};
    uint64_t cap[2];
    for (int d = 0; d < 2; d++) {
        simdev_init(&dev[d], &ps[d], (uint64_t)d);
        cap[d] = ps[d].capacity_pages;
    }
    hss h;
    CHECK(hss_init(&h, 2, dev, cap, 4, 16, scan_window, 1) == HSS_OK, "init");
    uint64_t *pages = malloc(npages * sizeof *pages);
    CHECK(pages != NULL, "malloc");
    for (int round = 0; round < 2; round++) { /* the second round after a reset */
        CHECK(hss_reset(&h, (uint64_t)round) == HSS_OK, "reset");
        CHECK(h.pt.nchunks == 0 && h.pt.touched == 0 && h.pt.leaf_bytes == 0, "reset left pages");
        for (uint64_t i = 0; i < npages; i++) {
            uint64_t r = rnd();
            switch (shape[0]) {
            case 'd': pages[i] = i; break;                                  /* dense */
            case 'r': pages[i] = r % (npages * 27); break;  /* bench_memory's density: 10 M pages in 1 TiB */
            case 'e': pages[i] = (r % ((uint64_t)1 << 31)) << 9; break;     /* one per chunk */
            case 'm': pages[i] = i % 3 ? r % (1u << 16) : r % ((uint64_t)1 << 39); break; /* mixed */
            default: pages[i] = (i / 600) * 4096 + r % 512; break;          /* around the threshold */
            }
        }
        for (uint64_t i = npages; i > 1; i--) { /* touch in random order */
            uint64_t j = rnd() % i, tmp = pages[i - 1];
            pages[i - 1] = pages[j];
            pages[j] = tmp;
        }
        double t = 0, lat;
        uint32_t rc_chunk = 0, rc_off = 0;
        for (uint64_t i = 0; i < npages; i++) {
            t += 5;
            CHECK(hss_begin(&h, t, (int)(i & 1), pages[i] << 12, 4096) == HSS_OK, "begin");
            CHECK(hss_finish(&h, (int)(rnd() % 2), &lat) == HSS_OK, "finish");
            hss_page *pg = hss_lookup(&h, pages[i]);
            CHECK(pg && pg->dev && pg->last_access == h.now, "page %llu lost", (unsigned long long)pages[i]);
            CHECK(hss_lookup(&h, pages[i] ^ 1) == NULL || hss_lookup(&h, pages[i] ^ 1)->last_access <= h.now, "lookup");
            if (i % 7 == 0) {
                uint64_t a = 0, b = 0;
                rc_chunk = h.scan_chunk;
                rc_off = h.scan_off;
                int fr = ref_candidate(&h, &rc_chunk, &rc_off, &b);
                int fa = hss_candidate(&h, &a);
                CHECK(fa == fr && (!fa || a == b) && rc_chunk == h.scan_chunk && rc_off == h.scan_off,
                      "%s: scan differs: %d/%d page %llu/%llu cursor %u:%u / %u:%u", shape, fa, fr,
                      (unsigned long long)a, (unsigned long long)b, h.scan_chunk, h.scan_off, rc_chunk, rc_off);
                if (fa && i % 2)
                    CHECK(hss_enqueue(&h, a, 1 - hss_dev_of(hss_lookup(&h, a))) >= 0, "enqueue");
            }
        }
        /* every touched page is there with its last access; absent neighbours are NULL */
        uint64_t absent = 0;
        for (uint64_t i = 0; i < npages; i++) {
            hss_page *pg = hss_lookup(&h, pages[i]);
            CHECK(pg && pg->dev && pg->last_access >= 1 && pg->count >= 1, "page %llu", (unsigned long long)pages[i]);
            uint64_t probe = pages[i] + 1 + rnd() % 1000;
            hss_page *q = hss_lookup(&h, probe);
            absent += q == NULL;
        }
        CHECK(hss_lookup(&h, (uint64_t)1 << 50) == NULL && hss_lookup(&h, UINT64_MAX) == NULL, "far lookup");
        if (check_invariants(&h))
            return 1;
        size_t table = hss_memory_bytes(&h);
        for (int d = 0; d < 2; d++)
            table -= h.lru[d].cap * sizeof(hss_lru_ent) + (size_t)h.alloc[d].cap_free * sizeof(uint32_t);
        double per = (double)table / (double)h.pt.touched;
        printf("  %-10s %6llu pages, %6u chunks (%5llu dense): %6.2f bytes/page in the page table\n", shape,
               (unsigned long long)h.pt.touched, h.pt.nchunks, (unsigned long long)h.pt.ndense, per);
        CHECK(per <= (shape[0] == 'e' || shape[0] == 'm' ? 200 : 32), "%s: %.2f bytes/page", shape, per);
        if (shape[0] == 'd')
            CHECK(h.pt.ndense + 1 >= h.pt.nchunks && per <= 16.2 + 16384.0 / (double)npages, "dense: %.2f bytes/page", per);
        if (shape[0] == 'r' || shape[0] == 'e')
            CHECK(h.pt.ndense == 0 && absent > npages / 4, "sparse chunks densified");
        (void)absent;
    }
    free(pages);
    hss_free(&h);
    return 0;
}

/* Multi-page requests over a few chunks (random runs, overlapping pages already there, through
 * the leaves' growth and densification): every page gets a record of its own, found again with
 * its last access, and a page never touched has none. */
static int test_leaf_runs(void)
{
    enum { SPAN = 8 * HSS_CHUNK };
    simdev dev[2];
    simdev_params ps[2] = {ssd(256), hdd(1u << 20)};
    uint64_t cap[2], base = (uint64_t)77 << HSS_CHUNK_BITS;
    for (int d = 0; d < 2; d++) {
        simdev_init(&dev[d], &ps[d], (uint64_t)d);
        cap[d] = ps[d].capacity_pages;
    }
    hss h;
    CHECK(hss_init(&h, 2, dev, cap, 0, 16, 64, 1) == HSS_OK, "init");
    CHECK(hss_reset(&h, 3) == HSS_OK, "reset");
    static uint32_t last[SPAN]; /* the step of each page's last access, 0: never */
    double t = 0, lat;
    int leaves = 0; /* checks while some chunk was a leaf */
    for (int i = 0; i < 1500; i++) {
        uint64_t p = rnd() % SPAN, n = 1 + rnd() % (i % 5 ? 12 : 80);
        if (p + n > SPAN)
            n = SPAN - p;
        t += 20;
        CHECK(hss_begin(&h, t, (int)(rnd() & 1), (base + p) << 12, n << 12) == HSS_OK, "begin %d", i);
        CHECK(hss_finish(&h, (int)(rnd() % 2), &lat) == HSS_OK, "finish %d", i);
        for (uint64_t q = p; q < p + n; q++)
            last[q] = h.now;
        if (i % 8)
            continue;
        leaves += h.pt.ndense < h.pt.nchunks;
        for (uint64_t q = 0; q < SPAN; q++) {
            hss_page *pg = hss_lookup(&h, base + q);
            if (pg && !pg->dev) /* a dense chunk's record of a page never placed */
                pg = NULL;
            CHECK((pg != NULL) == (last[q] != 0), "request %d: page %llu %s", i, (unsigned long long)q,
                  pg ? "placed, never touched" : "lost");
            if (!pg)
                continue;
            CHECK(pg->last_access == last[q], "request %d: page %llu: last access %u, not %u", i,
                  (unsigned long long)q, pg->last_access, last[q]);
            CHECK(!(pg->flags & HSS_F_MARK), "request %d: page %llu shares a record", i, (unsigned long long)q);
            pg->flags |= HSS_F_MARK;
        }
        for (uint64_t q = 0; q < SPAN; q++)
            if (last[q])
                hss_lookup(&h, base + q)->flags &= (uint8_t)~HSS_F_MARK;
    }
    CHECK(leaves > 10 && h.pt.ndense > 0, "leaves checked %d times, %llu dense chunks", leaves,
          (unsigned long long)h.pt.ndense);
    hss_free(&h);
    return 0;
}

/* An HSS of two SSDs with `servers` servers each, a 1000-page fast one and its home, after a reset. */
static int two_ssds(hss *h, simdev dev[2], int servers)
{
    simdev_params p[2] = {ssd(1u << 20), ssd(1u << 20)};
    p[0].servers = p[1].servers = servers;
    for (int d = 0; d < 2; d++)
        simdev_init(&dev[d], &p[d], 1);
    uint64_t cap[2] = {1000, 1u << 20};
    CHECK(hss_init(h, 2, dev, cap, 4, 16, 32, 1) == HSS_OK && hss_reset(h, 3) == HSS_OK, "init");
    return 0;
}

/* A cleaning asked for in chunks runs each chunk only while both devices have a free server:
 * with one server each, a host request arriving right after the devices freed up lets one chunk
 * run before it (and waits for that chunk at most); a long idle gap runs the rest. Without
 * chunks the whole batch runs in the first idle time. With `first`, that one chunk is `first`
 * pages, and a second short idle period starts at `first` again (the chunks grow only within
 * one idle period). */
static int test_clean_chunks(uint32_t chunk, uint32_t first)
{
    simdev dev[2];
    hss h = {0};
    if (two_ssds(&h, dev, 1))
        return 1;
    double t = 0, lat;
    for (int i = 0; i < 8; i++, t += 1e5) { /* 800 pages written to the fast device, the last at 0.7 s */
        CHECK(hss_begin(&h, t, SIMDEV_WRITE, (uint64_t)i * 100 * 4096, 100 * 4096) == HSS_OK, "begin");
        CHECK(hss_finish(&h, 0, &lat) == HSS_OK, "finish");
    }
    CHECK(h.dev[0].used_pages == 800, "fast holds %llu", (unsigned long long)h.dev[0].used_pages);
    CHECK(hss_clean(&h, 0, 640, 0, chunk, first) == 1, "clean asked");
    uint64_t want = chunk ? (first ? first : chunk) : 640u, cleaned = 0;
    for (int slot = 0; slot < (first ? 2 : 1); slot++) {
        double idle = simdev_free_at(&dev[0]) > simdev_free_at(&dev[1]) ? simdev_free_at(&dev[0])
                                                                         : simdev_free_at(&dev[1]);
        /* a read of a home page arriving just after the devices are free */
        CHECK(hss_begin(&h, idle + 1, SIMDEV_READ, (900 + (uint64_t)slot) * 4096, 4096) == HSS_OK, "begin read");
        CHECK(hss_finish(&h, 1, &lat) == HSS_OK, "finish read");
        uint64_t now = 800 - h.dev[0].used_pages - cleaned;
        CHECK(now == want, "idle slot %d cleaned %llu pages (chunk %u, first %u)", slot, (unsigned long long)now,
              chunk, first);
        cleaned += now;
    }
    CHECK(h.clean_k == 640u - cleaned, "pending %u", h.clean_k);
    CHECK(hss_begin(&h, simdev_free_at(&dev[1]) + 1e7, SIMDEV_READ, 910 * 4096, 4096) == HSS_OK, "begin later read");
    CHECK(hss_finish(&h, 1, &lat) == HSS_OK, "finish later read");
    CHECK(h.dev[0].used_pages == 160 && h.clean_k == 0, "after a long idle gap: %llu held, %u pending",
          (unsigned long long)h.dev[0].used_pages, h.clean_k);
    CHECK(h.c.cleaned == 640, "cleaned %llu", (unsigned long long)h.c.cleaned);
    hss_free(&h);
    return 0;
}

/* hss_set_clean_depth: with four servers per device, the first idle moment starts a chunk per free
 * server with no limit (depth 0 comes first and sets *unlimited), or `depth` of them (the next
 * waits for the one `depth` before it to complete); a long idle gap then runs the rest, the ring of
 * completions wrapping; reset clears the depth. */
static int test_clean_depth(uint32_t depth, uint64_t *unlimited)
{
    simdev dev[2];
    hss h = {0};
    if (two_ssds(&h, dev, 4))
        return 1;
    CHECK(hss_set_clean_depth(&h, HSS_CLEAN_DEPTH_MAX + 1) == HSS_EINVAL, "depth too large refused");
    CHECK(hss_set_clean_depth(&h, depth) == HSS_OK && h.clean_depth == depth, "depth %u", depth);
    double t = 0, lat;
    for (int i = 0; i < 8; i++, t += 1e5) {
        CHECK(hss_begin(&h, t, SIMDEV_WRITE, (uint64_t)i * 100 * 4096, 100 * 4096) == HSS_OK, "begin");
        CHECK(hss_finish(&h, 0, &lat) == HSS_OK, "finish");
    }
    CHECK(hss_clean(&h, 0, 640, 0, 8, 0) == 1, "clean asked");
    double idle = simdev_free_at(&dev[0]) > simdev_free_at(&dev[1]) ? simdev_free_at(&dev[0]) : simdev_free_at(&dev[1]);
    /* a read of a home page arriving just after the devices are free */
    CHECK(hss_begin(&h, idle + 1, SIMDEV_READ, 900 * 4096, 4096) == HSS_OK, "begin read");
    CHECK(hss_finish(&h, 1, &lat) == HSS_OK, "finish read");
    uint64_t cleaned = 800 - h.dev[0].used_pages;
    if (!depth)
        *unlimited = cleaned;
    CHECK(depth ? cleaned == 8u * depth || (cleaned == *unlimited && 8u * depth > *unlimited) : cleaned > 16,
          "depth %u: %llu pages cleaned in the first idle moment (%llu with no limit)", depth,
          (unsigned long long)cleaned, (unsigned long long)*unlimited);
    CHECK(hss_begin(&h, idle + 1e7, SIMDEV_READ, 910 * 4096, 4096) == HSS_OK, "begin later read");
    CHECK(hss_finish(&h, 1, &lat) == HSS_OK, "finish later read");
    CHECK(h.dev[0].used_pages == 160 && h.clean_k == 0 && h.clean_issued == 80,
          "after a long idle gap: %llu held, %u pending, %u chunks", (unsigned long long)h.dev[0].used_pages, h.clean_k,
          h.clean_issued);
    CHECK(hss_reset(&h, 3) == HSS_OK && h.clean_depth == 0 && h.clean_issued == 0, "reset clears the depth");
    hss_free(&h);
    return 0;
}

/* Reuse victims: region A's written pages are read again, region B's only rewritten. With the
 * fast device holding A's pages (older) and B's (newer), a cleaning takes B's first; without reuse
 * victims, A's (the least recently used). Then a reset switches it off. */
static int test_reuse_victims(int on)
{
    simdev dev[2];
    simdev_params p[2] = {ssd(1u << 20), ssd(1u << 20)};
    for (int d = 0; d < 2; d++)
        simdev_init(&dev[d], &p[d], 1);
    uint64_t cap[2] = {1000, 1u << 20};
    const uint64_t A = 0, B = 10 * HSS_CHUNK; /* first pages of two regions */
    hss h = {0};
    CHECK(hss_init(&h, 2, dev, cap, 4, 16, 32, 1) == HSS_OK && hss_reset(&h, 3) == HSS_OK, "init");
    hss_set_reuse_victims(&h, on);
    double t = 0, lat;
    for (uint64_t i = 0; i < 20; i++) { /* outcomes: A's writes are read, B's rewritten */
        uint64_t pages[4] = {A + 400 + i, A + 400 + i, B + 400 + i, B + 400 + i};
        int ops[4] = {SIMDEV_WRITE, SIMDEV_READ, SIMDEV_WRITE, SIMDEV_WRITE};
        for (int k = 0; k < 4; k++, t += 1e4)
            CHECK(hss_begin(&h, t, ops[k], pages[k] * 4096, 4096) == HSS_OK && hss_finish(&h, 1, &lat) == HSS_OK,
                  "warm-up request");
    }
    for (uint64_t base = A; base <= B; base += B, t += 1e4) /* 100 pages of A, then 100 of B, on fast */
        CHECK(hss_begin(&h, t, SIMDEV_WRITE, base * 4096, 100 * 4096) == HSS_OK && hss_finish(&h, 0, &lat) == HSS_OK,
              "fill");
    CHECK(hss_clean(&h, 0, 100, 0, 0, 0) == 1, "clean asked");
    CHECK(hss_begin(&h, t + 1e7, SIMDEV_READ, 900 * 4096, 4096) == HSS_OK && hss_finish(&h, 1, &lat) == HSS_OK,
          "a request after idle time");
    CHECK(h.c.cleaned == 100, "cleaned %llu", (unsigned long long)h.c.cleaned);
    for (uint64_t i = 0; i < 100; i++) {
        int a = hss_dev_of(hss_lookup(&h, A + i)), b = hss_dev_of(hss_lookup(&h, B + i));
        CHECK(a == (on ? 0 : 1) && b == (on ? 1 : 0), "reuse victims %d: page %llu of A on %d, of B on %d", on,
              (unsigned long long)i, a, b);
    }
    CHECK(hss_reset(&h, 3) == HSS_OK && h.reuse_victims == 0 && h.regions.n == 0, "reset keeps reuse victims");
    hss_free(&h);
    return 0;
}

/* Readahead: 25 sequential 4-page reads of pages 1000-1099 on the home device, with idle time
 * between them, twice. The first pass prefetches nothing: its pages were never touched (a first-touch
 * read stays home). In the second, the third read continues its stream a second time and the
 * pages after it (1012 on, read before, at home) are copied to the fast device, the window doubling
 * from 8 pages; with 40 pages of room the prefetches stop at 1051, and reads 3-12 find their pages
 * there (40 prefetch hits). Off by default and after a reset; off, nothing moves. Then a stream of
 * triples of sequential reads, each triple's prefetched pages skipped by the next: the outcomes
 * (cleaned before any access) close the gate, and one continued stream in 16 still prefetches. */
static int test_readahead(uint32_t window)
{
    simdev dev[2];
    simdev_params p[2] = {ssd(1u << 20), hdd(1u << 20)};
    for (int d = 0; d < 2; d++)
        simdev_init(&dev[d], &p[d], 1);
    uint64_t cap[2] = {window ? 40 : 1000, 1u << 20};
    hss h = {0};
    CHECK(hss_init(&h, 2, dev, cap, 4, 16, 32, 1) == HSS_OK && hss_reset(&h, 3) == HSS_OK, "init");
    CHECK(h.readahead == 0, "readahead on after reset");
    CHECK(hss_set_readahead(&h, (uint32_t)HSS_MAX_REQ_PAGES + 1) == HSS_EINVAL, "a window over the bound accepted");
    CHECK(hss_set_readahead(&h, window) == HSS_OK, "set readahead");
    double t = 0, lat;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < 25; i++, t += 1e6) {
            CHECK(hss_begin(&h, t, SIMDEV_READ, 1000 * 4096 + i * 4 * 4096, 4 * 4096) == HSS_OK
                  && hss_finish(&h, 1, &lat) == HSS_OK, "pass %d, read %llu", pass, (unsigned long long)i);
            if (!pass)
                CHECK(h.c.prefetched == 0, "a first-touch read prefetched");
            int d = hss_dev_of(hss_lookup(&h, 1000 + i * 4));
            CHECK(d == (window && pass && i >= 3 && i <= 12 ? 0 : 1), "pass %d, read %llu: its page on %d", pass,
                  (unsigned long long)i, d);
        }
    if (!window) {
        CHECK(h.c.prefetched == 0 && h.dev[0].used_pages == 0, "readahead off moved %llu pages",
              (unsigned long long)h.c.prefetched);
        hss_free(&h);
        return 0;
    }
    CHECK(h.c.prefetched == 40 && h.dev[0].used_pages == 40, "prefetched %llu, fast holds %llu",
          (unsigned long long)h.c.prefetched, (unsigned long long)h.dev[0].used_pages);
    CHECK(h.c.prefetch_hits == 40, "prefetch hits %llu", (unsigned long long)h.c.prefetch_hits);
    CHECK(check_invariants(&h) == 0, "invariants");
    CHECK(hss_reset(&h, 3) == HSS_OK && h.readahead == 0 && h.pf_n == 0, "reset keeps readahead");
    /* the gate: 2,000 pages written at home, then triples of sequential reads 10 pages apart */
    h.cap[0] = 1u << 20;
    hss_set_readahead(&h, window);
    CHECK(hss_begin(&h, t, SIMDEV_WRITE, 5000 * 4096, 2000 * 4096) == HSS_OK && hss_finish(&h, 1, &lat) == HSS_OK,
          "write at home");
    for (uint64_t k = 0; k < 200; k++)
        for (uint64_t i = 0; i < 3; i++) {
            t += 1e6;
            CHECK(hss_begin(&h, t, SIMDEV_READ, (5000 + 10 * k + i) * 4096, 4096) == HSS_OK
                  && hss_finish(&h, 1, &lat) == HSS_OK, "triple %llu, read %llu", (unsigned long long)k,
                  (unsigned long long)i);
            if (i == 2)
                CHECK(hss_clean(&h, 0, 1000, 1, 0, 0) >= 0, "clean"); /* the wasted prefetches move down */
        }
    CHECK(h.c.prefetch_hits == 0 && h.pf_outcome[1] > 0, "hits %llu, wasted %g", (unsigned long long)h.c.prefetch_hits,
          h.pf_outcome[1]);
    CHECK(h.c.prefetched > 0 && h.c.prefetched < 80, "the gate did not close: %llu pages prefetched",
          (unsigned long long)h.c.prefetched);
    hss_free(&h);
    return 0;
}

/* hss_replay: the latencies of a begin/finish loop with one placement, and a bad request's index. */
static int test_replay(void)
{
    enum { N = 2000 };
    static double t[N], lat[N], ref[N];
    static uint8_t op[N];
    static int64_t off[N], size[N];
    for (int i = 0; i < N; i++) {
        t[i] = 3.0 * i;
        op[i] = (uint8_t)(rnd() & 1);
        off[i] = (int64_t)(rnd() % 500) * 4096;
        size[i] = (int64_t)(1 + rnd() % (4 * 4096));
    }
    simdev dev[2][2];
    hss h[2];
    for (int k = 0; k < 2; k++) {
        simdev_params p[2] = {ssd(64), hdd(1u << 20)};
        uint64_t cap[2] = {64, 1u << 20};
        for (int d = 0; d < 2; d++)
            simdev_init(&dev[k][d], &p[d], (uint64_t)d);
        CHECK(hss_init(&h[k], 2, dev[k], cap, 4, 4, 8, 8) == HSS_OK && hss_reset(&h[k], 3) == HSS_OK, "init");
    }
    size_t at;
    CHECK(hss_replay(&h[0], t, op, off, size, 0, lat, 0, N / 2, &at) == HSS_OK && at == N / 2, "replay");
    CHECK(hss_replay(&h[0], t, op, off, size, 0, lat, N / 2, N, &at) == HSS_OK && at == N, "replay, second half");
    for (int i = 0; i < N; i++) {
        CHECK(hss_begin(&h[1], t[i], op[i], (uint64_t)off[i], (uint64_t)size[i]) == HSS_OK
              && hss_finish(&h[1], 0, &ref[i]) == HSS_OK, "request %d", i);
        CHECK(lat[i] == ref[i], "request %d: replay %g, begin/finish %g", i, lat[i], ref[i]);
    }
    CHECK(h[0].c.evictions == h[1].c.evictions && h[0].c.evictions > 0, "evictions differ or none");
    off[N - 5] = -4096;
    CHECK(hss_replay(&h[0], t, op, off, size, 0, lat, N - 10, N, &at) == HSS_EINVAL && at == N - 5,
          "a negative offset: stopped at %zu", at);
    for (int k = 0; k < 2; k++)
        hss_free(&h[k]);
    return 0;
}

int main(void)
{
    int tests = 0;
    tests++; test_device_model();
    tests++; test_replay();
    tests++; test_leaf_runs();
    tests++; test_clean_chunks(64, 0);
    tests++; test_clean_chunks(64, 4);
    tests++; test_clean_chunks(0, 0);
    uint64_t unlimited = 0;
    for (uint32_t depth = 0; depth <= 5; depth++) {
        tests++;
        test_clean_depth(depth, &unlimited);
    }
    tests++; test_reuse_victims(1);
    tests++; test_reuse_victims(0);
    tests++; test_readahead(32);
    tests++; test_readahead(0);
    for (int ndev = 2; ndev <= 4; ndev++) {
        tests++; run(ndev, 1, 10, 4096, 3000);
        tests++; run(ndev, 32, 3, 200, 3000);   /* tiny span: constant eviction and migration */
        tests++; run(ndev, 8, 0, 100000, 2000); /* no migration queue */
        reuse_on = 1;
        tests++; run(ndev, 32, 3, 200, 3000);   /* the same with reuse victims */
        tests++; run(ndev, 1, 10, 4096, 3000);
        readahead_on = 16;
        tests++; run(ndev, 32, 3, 200, 6000);   /* with readahead too */
        tests++; run(ndev, 1, 10, 4096, 6000);
        reuse_on = 0;
        readahead_on = 0;
    }
    const char *shapes[] = {"dense", "random", "extreme", "mixed", "threshold"};
    for (int i = 0; i < 5; i++) {
        tests++; test_sparse(shapes[i], 20000, 64);
        tests++; test_sparse(shapes[i], 3000, 1); /* a tiny scan window: cursor mid-chunk */
    }
    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
