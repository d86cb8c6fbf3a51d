/* The HSS core: a request's two phases (hss_begin, hss_finish: placement, the I/O in runs of
 * contiguous slots, the fills) and the core's lifecycle. The top layer of the core's code: it
 * defines the public API (hss.h, with the protocol; the data structures in hss_types.h) on the
 * layers below it, each with its header: the moves, the migration queue and the idle-time work
 * (hss_move.c, hss_move.h), on the LRU queues and the reuse predictor (hss_lru.c, hss_lru.h), on
 * the page table (hss_pt.c, hss_pt.h). */
#include "hss.h"
#include "hss_move.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ requests */

int hss_begin(hss *h, double t, int op, uint64_t offset, uint64_t size)
{
    if (size == 0 || (op != SIMDEV_READ && op != SIMDEV_WRITE) || offset > HSS_MAX_BYTES
        || size > HSS_MAX_BYTES - offset)
        return HSS_EINVAL;
    if (((offset + size - 1) >> 12) - (offset >> 12) >= HSS_MAX_REQ_PAGES)
        return HSS_EBIG;
    if (h->now >= UINT32_MAX - 1)
        return HSS_ESTEPS;
    h->now++;
    hss_req *r = &h->cur;
    int slot = 0;
    for (int i = 1; i < h->qd; i++)
        if (h->inflight[i] < h->inflight[slot])
            slot = i;
    if (h->c.requests == 0)
        h->c.first_arrival = t;
    if (h->inflight[slot] > t) {
        h->c.host_wait_us += h->inflight[slot] - t;
        t = h->inflight[slot];
    }
    r->slot = slot;
    r->t = t;
    r->op = op;
    r->bytes = size;
    r->p0 = offset >> 12;
    r->p1 = (offset + size - 1) >> 12;
    r->active = 1;
    if (h->busy_free1 > 0.0) { /* a queue-full move ran since the last arrival: its delay to t */
        double late = h->busy_free1 - (h->busy_free0 > t ? h->busy_free0 : t);
        if (late > 0)
            h->c.mig_delay_us += late;
        h->busy_free0 = h->busy_free1 = 0.0;
    }
    int rc = hss_run_idle(h, t);
    if (rc != HSS_OK)
        return rc;
    r->needs_placement = op == SIMDEV_WRITE || pt_count_unplaced(&h->pt, r->p0, r->p1, -1) != 0;
    return HSS_OK;
}

int hss_replay(hss *h, const double *t, const uint8_t *op, const int64_t *off, const int64_t *size, int place,
               double *lat, size_t start, size_t stop, size_t *at)
{
    int rc = HSS_OK;
    size_t i;
    for (i = start; i < stop; i++) {
        if (off[i] < 0 || size[i] <= 0) {
            rc = HSS_EINVAL;
            break;
        }
        rc = hss_begin(h, t[i], op[i], (uint64_t)off[i], (uint64_t)size[i]);
        if (rc == HSS_OK)
            rc = hss_finish(h, place, &lat[i]);
        if (rc != HSS_OK)
            break;
    }
    *at = i;
    return rc;
}

/* The background copies of a first-touch read's fill pages to their device, after the read (done):
 * the n pages listed in page[] and pg[] (in page order), or with n = 0 those flagged HSS_F_FILL. */
#define HSS_FILL_STACK 64 /* fill pages hss_finish lists on the stack at most */
static int fill_copies(hss *h, double done, size_t n, const uint64_t *page, hss_page *const *pgs)
{
    const hss_req *r = &h->cur;
    if (n && !h->log.on) { /* the listed pages' copies, one call per device (with the log: below) */
        uint64_t slots[HSS_FILL_STACK];
        for (size_t i = 0, j; i < n; i = j) {
            int d = dev_of(pgs[i]);
            for (j = i; j < n && dev_of(pgs[j]) == d; j++) {
                slots[j - i] = pgs[j]->slot;
                pgs[j]->flags &= (uint8_t)~HSS_F_FILL;
            }
            simdev_io_each(&h->dev[d], SIMDEV_WRITE, slots, j - i, 1, done, 1);
        }
        h->c.fill_pages += n;
        return HSS_OK;
    }
    pt_walk it = {0};
    size_t i = 0;
    for (uint64_t p = r->p0, e = 0; n ? i < n : p <= r->p1; p++) {
        hss_page *pg;
        if (n) {
            p = page[i];
            pg = pgs[i++];
        } else {
            if (p == r->p0 || p > e)
                e = pt_walk_start(&h->pt, &it, p, r->p1);
            pg = pt_walk_next(&it);
            if (!(pg->flags & HSS_F_FILL))
                continue;
        }
        pg->flags &= (uint8_t)~HSS_F_FILL;
        int d = dev_of(pg);
        simdev_io(&h->dev[d], SIMDEV_WRITE, pg->slot, 1, done, 1);
        h->c.fill_pages++;
        int rc = HSS_OK;
        if (h->log.on && ((rc = log_push(h, HSS_LOG_CREAD, h->home, dev_slot(h, h->home, p, pg), p, 1)) != HSS_OK
                          || (rc = log_push(h, HSS_LOG_CWRITE, d, pg->slot, p, 1)) != HSS_OK))
            return rc;
    }
    return HSS_OK;
}

/* Issue one contiguous run of pages on one device. */
static void issue_run(hss *h, int d, uint64_t slot, uint32_t n, double ready, double *done)
{
    double end = simdev_io(&h->dev[d], h->cur.op, slot, n, ready, 0);
    if (end > *done)
        *done = end;
}

/* An error in hss_finish's I/O loop: the fast pages counted so far and the held length written
 * back, as the page-by-page updates would have left them; returns rc. */
static inline int io_fail(hss *h, lru_cur *c, uint64_t fast, int rc)
{
    h->c.fast_pages += fast;
    return lru_cur_done(c, rc);
}

int hss_finish(hss *h, int place, double *latency)
{
    hss_req *r = &h->cur;
    if (!r->active)
        return HSS_EINVAL;
    if (r->needs_placement && (place < 0 || place >= h->ndev))
        return HSS_EINVAL;
    double ready = r->t;
    int rc;
    /* Placement: a write goes wholly to `place`; a read places only its untouched pages. Those
     * hold data that lives on the home device until now: the read is served there, and a
     * background copy (a fill) writes them to `place` once it completes. */
    int fills = 0;
    if (r->needs_placement) {
        h->c.placements++;
        if (place != h->home) {
            uint64_t need = pt_count_unplaced(&h->pt, r->p0, r->p1, r->op == SIMDEV_WRITE ? place : -1);
            uint64_t free_pages = h->cap[place] > h->dev[place].used_pages ? h->cap[place] - h->dev[place].used_pages : 0;
            if (need > free_pages) {
                uint64_t freed;
                double edone;
                if ((rc = evict_batch(h, place, need - free_pages, r->t, &edone, &freed, 0)) != HSS_OK)
                    return rc;
                if (edone > ready)
                    ready = edone;
            }
        }
        /* h's fields in locals (the records' stores could alias them); touched is added up */
        const int fill = r->op == SIMDEV_READ && place != h->home && !h->preloaded;
        const int rd = r->op == SIMDEV_READ;
        const uint32_t now = h->now;
        uint64_t touched = 0;
        pt_walk it = {0};
        for (uint64_t p = r->p0; p <= r->p1;) {
            uint64_t e = p | (HSS_CHUNK - 1);  /* records for the pages of p's chunk */
            if (!pt_create_run(&h->pt, p, e < r->p1 ? e : r->p1))
                return HSS_ENOMEM;
            e = pt_walk_start(&h->pt, &it, p, r->p1);
            for (; p <= e; p++) {
                hss_page *pg = pt_walk_next(&it);
                if (!pg->dev) {
                    touched++;
                    if (fill) {
                        pg->flags |= HSS_F_FILL;
                        fills++;
                    }
                } else if (rd || pg->dev == place + 1) {
                    continue;
                } else if ((rc = detach(h, pg)) != HSS_OK) {
                    h->pt.touched += touched;
                    return rc;
                }
                if ((rc = attach(h, pg, place, r->t, &ready)) < 0) {
                    h->pt.touched += touched;
                    return rc;
                }
                pg->last_move = now;
            }
        }
        h->pt.touched += touched;
    }
    /* Issue the I/O in runs of contiguous slots per device; update metadata. What the loop reads
     * of h is held in locals: the stores to the pages' records could otherwise alias it. The fill
     * pages are listed for fill_copies (up to HSS_FILL_STACK of them; past that it looks for them). */
    double done = ready;
    const int home = h->home, op = r->op, reuse = h->reuse_victims;
    const uint32_t now = h->now;
    const uint64_t home_cap = h->dev[home].p.capacity_pages, p1 = r->p1;
    uint64_t fpage[HSS_FILL_STACK];
    hss_page *fpg[HSS_FILL_STACK];
    size_t nfill = 0; /* pages flagged HSS_F_FILL seen (as a stale flag after an error would be too) */
    int run_dev = -1;
    uint64_t run_slot = 0, run_next = 0, fast = 0; /* run_next: the slot after the run */
    uint32_t run_len = 0; /* <= HSS_MAX_REQ_PAGES */
    lru_cur lc = {NULL, NULL, 0, 0, 0, -1};
    pt_walk it = {0};
    for (uint64_t p = r->p0; p <= p1;) {
        uint64_t e = pt_walk_start(&h->pt, &it, p, p1);
        for (; p <= e; p++) {
            hss_page *pg = pt_walk_next(&it);
            unsigned fl = pg->flags;
            int pd = (int)pg->dev - 1, d = pd; /* dev_of: every page is placed */
            if (fl & HSS_F_FILL) {
                d = home;
                if (nfill < HSS_FILL_STACK) {
                    fpage[nfill] = p;
                    fpg[nfill] = pg;
                }
                nfill++;
            }
            uint64_t s = d != home ? pg->slot : p < home_cap ? p : p % home_cap; /* dev_slot */
            if (d == run_dev && s == run_next) {
                run_len++;
                run_next++;
            } else {
                if (run_len && h->log.on && (rc = log_push(h, op, run_dev, run_slot, p - run_len, run_len)) != HSS_OK)
                    return io_fail(h, &lc, fast, rc);
                if (run_len)
                    issue_run(h, run_dev, run_slot, run_len, ready, &done);
                run_dev = d;
                run_slot = s;
                run_next = s + 1;
                run_len = 1;
            }
            if (fl & HSS_F_CLEANED) { /* its first access since a cleaning moved it down */
                if (d != 0 && op == SIMDEV_READ) {
                    h->c.clean_misses++;
                    h->ghost[fl & HSS_F_ONCE ? 2 : 3] += 1.0;
                    h->dead_ghost[fl & HSS_F_DEADEV ? 1 : 3] += 1.0;
                }
                pg->flags = (uint8_t)(fl & ~(HSS_F_CLEANED | HSS_F_ONCE | HSS_F_DEADEV));
            }
            if (reuse && (rc = reuse_access(h, p, pg, op, d)) != HSS_OK)
                return io_fail(h, &lc, fast, rc);
            unsigned count = pg->count;
            if (!count && pg->last_access)
                prefetch_outcome(h, pg, d == 0 && op == SIMDEV_READ, 0);
            if (pg->count < HSS_COUNT_MAX)
                pg->count++;
            pg->last_access = now;
            fast += d == 0;
            if (pd != home && (rc = lru_cur_push(h, &lc, pd, p, now)) != HSS_OK)
                return io_fail(h, &lc, fast, rc);
        }
    }
    lru_cur_done(&lc, HSS_OK);
    h->c.fast_pages += fast;
    issue_run(h, run_dev, run_slot, run_len, ready, &done);

    uint64_t npages = r->p1 - r->p0 + 1;
    if (h->log.on && ((rc = log_push(h, op, run_dev, run_slot, r->p1 + 1 - run_len, run_len)) != HSS_OK
                      || (rc = log_push(h, HSS_LOG_END, 0, 0, r->p0, (uint32_t)npages)) != HSS_OK))
        return rc;
    /* After the request's END in the log: the real backend runs the fills as background copies. */
    if (fills && (rc = fill_copies(h, done, nfill <= HSS_FILL_STACK ? nfill : 0, fpage, fpg)) != HSS_OK)
        return rc;
    if (h->readahead && r->op == SIMDEV_READ)
        readahead(h, r);
    h->c.requests++;
    h->c.pages_accessed += npages;
    if (r->op == SIMDEV_READ) {
        h->c.reads++;
        h->c.host_bytes_read += r->bytes;
    } else {
        h->c.writes++;
        h->c.host_bytes_written += r->bytes;
    }
    if (done > h->c.last_completion)
        h->c.last_completion = done;
    h->inflight[r->slot] = done;
    *latency = done - r->t;
    h->c.latency_sum += *latency;
    r->active = 0;
    return HSS_OK;
}

/* ------------------------------------------------------------------ lifecycle */

int hss_init(hss *h, int ndev, simdev *dev, const uint64_t *cap, int mq_cap,
             uint32_t min_interval, uint32_t scan_window, int queue_depth)
{
    memset(h, 0, sizeof *h);
#ifdef HSS_HAVE_POPCNT_ASM
    if (!have_popcnt) {
        __builtin_cpu_init();
        have_popcnt = __builtin_cpu_supports("popcnt") ? 1 : 0;
    }
#endif
    if (ndev < 1 || ndev > HSS_MAX_DEV || mq_cap < 0 || scan_window < 1 || queue_depth < 1)
        return HSS_EINVAL;
    h->qd = queue_depth;
    h->inflight = calloc((size_t)queue_depth, sizeof *h->inflight);
    if (!h->inflight)
        return HSS_ENOMEM;
    h->ndev = ndev;
    h->home = ndev - 1;
    h->dev = dev;
    for (int d = 0; d < ndev; d++) {
        if (cap[d] == 0)
            return HSS_EINVAL;
        h->cap[d] = cap[d];
    }
    h->mq_cap = mq_cap;
    h->mq = calloc(mq_cap ? (size_t)mq_cap : 1, sizeof *h->mq);
    h->min_interval = min_interval;
    h->scan_window = scan_window;
    if (!h->mq)
        return HSS_ENOMEM;
    return pt_init(&h->pt);
}

void hss_free(hss *h)
{
    pt_free(&h->pt);
    for (int d = 0; d < HSS_MAX_DEV; d++) {
        free(h->lru[d].buf);
        free(h->dead[d].buf);
        free(h->alloc[d].free);
    }
    free(h->regions.tab);
    memset(&h->regions, 0, sizeof h->regions);
    memset(h->dead, 0, sizeof h->dead);
    free(h->mq);
    free(h->inflight);
    free(h->log.buf);
    memset(&h->log, 0, sizeof h->log);
    h->inflight = NULL;
    memset(h->lru, 0, sizeof h->lru);
    memset(h->alloc, 0, sizeof h->alloc);
    h->mq = NULL;
}

int hss_reset(hss *h, uint64_t seed)
{
    pt_free(&h->pt);
    int rc = pt_init(&h->pt);
    for (int d = 0; d < h->ndev; d++) {
        free(h->lru[d].buf);
        free(h->dead[d].buf);
        free(h->alloc[d].free);
        memset(&h->lru[d], 0, sizeof h->lru[d]);
        memset(&h->dead[d], 0, sizeof h->dead[d]);
        memset(&h->alloc[d], 0, sizeof h->alloc[d]);
        simdev_reset(&h->dev[d], seed + (uint64_t)d);
    }
    h->mq_head = h->mq_len = 0;
    h->clean_k = 0;
    h->clean_depth = h->clean_issued = 0;
    memset(h->clean_end, 0, sizeof h->clean_end);
    memset(h->ghost, 0, sizeof h->ghost);
    memset(h->dead_ghost, 0, sizeof h->dead_ghost);
    free(h->regions.tab);
    memset(&h->regions, 0, sizeof h->regions);
    h->reuse_victims = 0;
    h->readahead = 0;
    memset(h->ra_next, 0, sizeof h->ra_next);
    memset(h->ra_win, 0, sizeof h->ra_win);
    h->ra_slot = 0;
    h->pf_n = h->pf_probe = 0;
    h->pf_outcome[0] = h->pf_outcome[1] = 0.0;
    h->busy_free0 = h->busy_free1 = 0.0;
    memset(h->inflight, 0, (size_t)h->qd * sizeof *h->inflight);
    h->scan_chunk = h->scan_off = 0;
    h->now = 0;
    h->log.len = 0;
    memset(&h->cur, 0, sizeof h->cur);
    memset(&h->c, 0, sizeof h->c);
    return rc;
}

size_t hss_memory_bytes(const hss *h)
{
    const hss_pagetable *pt = &h->pt;
    size_t b = (size_t)(pt->ndense * heap_bytes(HSS_CHUNK * sizeof(hss_page)) + pt->leaf_bytes)
             + pt->dir_cap * sizeof(hss_dir_slot)
             + (size_t)pt->chunks_cap * (sizeof(void *) + sizeof(uint32_t));
    for (int d = 0; d < h->ndev; d++)
        b += (h->lru[d].cap + h->dead[d].cap) * sizeof(hss_lru_ent) + (size_t)h->alloc[d].cap_free * sizeof(uint32_t);
    b += h->regions.cap * sizeof(hss_region);
    return b;
}
