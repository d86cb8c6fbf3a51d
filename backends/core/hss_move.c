/* Where the HSS core moves pages: the slots of the devices below home, the I/O log a real backend
 * replays, single moves and batched evictions (cascading down the hierarchy), the migration queue
 * and the candidate scanner, and what runs in idle time (queued moves, the readahead's prefetch,
 * the cleanings). On top of the LRU queues (the victims) and the page table. A page's attach and
 * detach, which the per-page loops inline, are in hss_move.h. */
#include "hss_move.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ slots */

/* Double a full free list (out of line: releases are on every eviction). */
__attribute__((noinline)) int slot_grow(hss_alloc *a)
{
    uint32_t ncap = a->cap_free ? a->cap_free * 2 : 1024;
    uint32_t *nf = realloc(a->free, ncap * sizeof *nf);
    if (!nf)
        return HSS_ENOMEM;
    a->free = nf;
    a->cap_free = ncap;
    return HSS_OK;
}

uint64_t hss_slot_of(const hss *h, uint64_t page, const hss_page *pg)
{
    return dev_slot(h, dev_of(pg), page, pg);
}

/* ------------------------------------------------------------------ I/O log (real backend) */

void hss_log_enable(hss *h, int on)
{
    h->log.on = on;
    h->log.len = 0;
}

int log_push(hss *h, int kind, int d, uint64_t slot, uint64_t page, uint32_t n)
{
    hss_log *l = &h->log;
    if (l->len == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256;
        hss_log_ent *nb = realloc(l->buf, ncap * sizeof *nb);
        if (!nb)
            return HSS_ENOMEM;
        l->buf = nb;
        l->cap = ncap;
    }
    l->buf[l->len++] = (hss_log_ent){page, slot, n, (uint8_t)kind, (uint8_t)d, {0, 0}};
    return HSS_OK;
}

uint64_t hss_used(const hss *h, int d)
{
    return h->dev[d].used_pages;
}

static int evict_one(hss *h, int d, double t, double *done);

/* Make room on device d (full) by evicting its LRU page (critical path: *ready is raised to when
 * the eviction completes); a full device with nothing to evict passes on to the next slower one.
 * Returns the device that has room, or an error. Out of line: most attaches find room. */
__attribute__((noinline)) int attach_room(hss *h, int d, double t, double *ready)
{
    while (d != h->home && h->dev[d].used_pages >= h->cap[d]) {
        double done;
        int rc = evict_one(h, d, t, &done);
        if (rc == HSS_OK) {
            if (done > *ready)
                *ready = done;
            break;
        }
        if (rc != HSS_EFULL)
            return rc;
        d++;
    }
    return d;
}

/* Copy one page from its device to `target`, starting at t; *done = completion. The page keeps
 * its access stamp, so its LRU position on the target reflects its last real access. */
static int move_page(hss *h, uint64_t page, hss_page *pg, int target, double t, double *done)
{
    int src = dev_of(pg);
    double rdone = simdev_io(&h->dev[src], SIMDEV_READ, dev_slot(h, src, page, pg), 1, t, 1);
    int rc = h->log.on ? log_push(h, HSS_LOG_CREAD, src, dev_slot(h, src, page, pg), page, 1) : HSS_OK;
    if (rc == HSS_OK)
        rc = detach(h, pg);
    if (rc != HSS_OK)
        return rc;
    double ready = rdone;
    rc = attach(h, pg, target, rdone, &ready);
    if (rc < 0)
        return rc;
    target = rc;
    *done = simdev_io(&h->dev[target], SIMDEV_WRITE, dev_slot(h, target, page, pg), 1, ready, 1);
    if (h->log.on && (rc = log_push(h, HSS_LOG_CWRITE, target, dev_slot(h, target, page, pg), page, 1)) != HSS_OK)
        return rc;
    pg->last_move = h->now;
    h->c.mig_bytes_written += (uint64_t)SIMDEV_PAGE;
    h->c.mig_pages_out[src]++;
    h->c.mig_pages_in[target]++;
    return lru_touch(h, target, page, pg->last_access);
}

static int evict_one(hss *h, int d, double t, double *done)
{
    uint64_t victim;
    hss_page *pg;
    if (d == h->home || !lru_pop(h, d, &victim, &pg))
        return HSS_EFULL;
    h->c.evictions++;
    prefetch_outcome(h, pg, 0, 1);
    return move_page(h, victim, pg, d + 1, t, done);
}

/* Whether a cleaning takes the pages accessed once first: when the cleaned pages that had been
 * accessed more than once are read again (on the slower device) more often than those accessed
 * once, as ARC adapts between recency and frequency by the hits on what it evicted. Counts decay
 * (halved every 4096 cleaned pages); a prior of one read in 16 keeps the first cleanings in LRU
 * order. */
static int once_first(const hss *h)
{
    const double *g = h->ghost;
    return (g[3] + 1.0) / (g[1] + 16.0) > (g[2] + 1.0) / (g[0] + 16.0);
}

/* Free `k` pages of device d by moving its k least recently used pages to d + 1 as one batch:
 * one k-page read from d and one k-page write to d + 1 (an HSS evicts in batches, so the slower
 * device sees one larger write instead of k random ones). Cascades when d + 1 is full too.
 * *done = completion; returns the number of pages freed (fewer if d has fewer live victims). */
#define HSS_EVICT_STACK 16 /* evict_batch's victims held on the stack at most */
int evict_batch(hss *h, int d, uint64_t k, double t, double *done, uint64_t *freed, uint8_t mark)
{
    *done = t;
    *freed = 0;
    if (d == h->home || k == 0)
        return HSS_OK;
    /* the victims' pages and records (no record moves while they are moved: no page is created),
     * on the stack for the few pages a request's placement evicts, else on the heap */
    uint64_t vbuf[HSS_EVICT_STACK];
    hss_page *pbuf[HSS_EVICT_STACK];
    uint64_t *victims = vbuf;
    hss_page **vpg = pbuf;
    if (k > HSS_EVICT_STACK) {
        if (!(victims = malloc(k * (sizeof *victims + sizeof(hss_page *)))))
            return HSS_ENOMEM;
        vpg = (hss_page **)(void *)(victims + k);
    }
    uint64_t n = 0;
    if ((mark & HSS_F_CLEANED) && h->reuse_victims && dead_first(h)) {
        hss_lru *q = &h->dead[d];
        while (n < k && q->len) {
            hss_lru_ent e = q->buf[q->head];
            q->head = (q->head + 1) & (q->cap - 1);
            q->len--;
            hss_page *pg = lru_live(h, e, d);
            if (pg && !(pg->flags & HSS_F_MARK)) {
                pg->flags |= HSS_F_MARK;
                vpg[n] = pg;
                victims[n++] = e >> HSS_STAMP_BITS;
            }
        }
    }
    uint64_t dead = n;
    if ((mark & HSS_F_CLEANED) && once_first(h)) {
        /* A cleaning takes first the pages accessed once (written or read, never again: a scan
         * or a write-once stream), oldest first, then the least recently used others (as 2Q
         * and SLRU keep re-accessed pages from being pushed out by a scan). */
        hss_lru *q = &h->lru[d];
        uint64_t budget = 64 * k;
        for (uint64_t i = 0; i < q->len && i < budget && n < k; i++) {
            hss_lru_ent e = q->buf[(q->head + i) & (q->cap - 1)];
            hss_page *pg = lru_live(h, e, d);
            if (pg && pg->count <= 1 && !(pg->flags & HSS_F_MARK)) {
                pg->flags |= HSS_F_MARK;
                vpg[n] = pg;
                victims[n++] = e >> HSS_STAMP_BITS;
            }
        }
        uint64_t once = n;
        while (n < k && lru_pop(h, d, &victims[n], &vpg[n]))
            if (!(vpg[n]->flags & HSS_F_MARK))
                n++;
        for (uint64_t i = 0; i < once; i++)
            vpg[i]->flags &= (uint8_t)~HSS_F_MARK;
    } else if (!dead) {
        n = lru_pop_n(h, d, n, k, victims, vpg);
    } else {
        while (n < k && lru_pop(h, d, &victims[n], &vpg[n]))
            if (!(vpg[n]->flags & HSS_F_MARK))
                n++;
        for (uint64_t i = 0; i < dead; i++)
            vpg[i]->flags &= (uint8_t)~HSS_F_MARK;
    }
    int rc = HSS_OK;
    int t2 = d + 1;
    double ready = t;
    if (n && t2 != h->home && h->dev[t2].used_pages + n > h->cap[t2]) {
        uint64_t got;
        double cdone;
        rc = evict_batch(h, t2, h->dev[t2].used_pages + n - h->cap[t2], t, &cdone, &got, mark);
        if (cdone > ready)
            ready = cdone;
    }
    if (rc == HSS_OK && n) {
        double rdone = simdev_io(&h->dev[d], SIMDEV_READ, vpg[0]->slot, (uint32_t)n, t, 1);
        for (uint64_t i = 0; i < n && h->log.on && rc == HSS_OK; i++)
            rc = log_push(h, HSS_LOG_CREAD, d, vpg[i]->slot, victims[i], 1);
        if (rdone > ready)
            ready = rdone;
        uint64_t wslot = 0;
        for (uint64_t i = 0; i < n && rc >= 0; i++) {
            hss_page *pg = vpg[i];
            double unused = ready;
            rc = detach(h, pg);
            if (rc == HSS_OK)
                rc = attach(h, pg, t2, ready, &unused);
            if (rc >= 0 && h->log.on) {
                int lr = log_push(h, HSS_LOG_CWRITE, rc, dev_slot(h, rc, victims[i], pg), victims[i], 1);
                if (lr != HSS_OK)
                    rc = lr;
            }
            if (rc >= 0) {
                if (i == 0)
                    wslot = dev_slot(h, rc, victims[i], pg);
                prefetch_outcome(h, pg, 0, 1);
                pg->last_move = h->now;
                pg->flags |= mark;
                if (mark & HSS_F_CLEANED) {
                    int once = pg->count <= 1;
                    if (once)
                        pg->flags |= HSS_F_ONCE;
                    h->ghost[once ? 0 : 1] += 1.0;
                    if (pg->flags & HSS_F_DEAD)
                        pg->flags |= HSS_F_DEADEV;
                    h->dead_ghost[pg->flags & HSS_F_DEAD ? 0 : 2] += 1.0;
                }
                h->c.evictions++;
                h->c.mig_bytes_written += (uint64_t)SIMDEV_PAGE;
                h->c.mig_pages_out[d]++;
                h->c.mig_pages_in[rc]++;
                int lr = lru_touch(h, rc, victims[i], pg->last_access);
                if (lr != HSS_OK)
                    rc = lr;
            }
        }
        if (rc >= 0) {
            *done = simdev_io(&h->dev[t2], SIMDEV_WRITE, wslot, (uint32_t)n, ready, 1);
            rc = HSS_OK;
        }
    }
    if (victims != vbuf)
        free(victims);
    *freed = n;
    return rc;
}

int hss_move(hss *h, uint64_t page, int target, double t, double *done)
{
    hss_page *pg = pt_get(&h->pt, page);
    if (!pg || !pg->dev || target < 0 || target >= h->ndev)
        return HSS_EINVAL;
    *done = t;
    if (dev_of(pg) == target)
        return HSS_OK;
    h->c.migrations++;
    return move_page(h, page, pg, target, t, done);
}

/* Move a page to `target` instantly, with no device time: an idealised migration (the Oracle's
 * "free idle-time migration"). The target must have room. Counted as a migration, and its bytes
 * in the write amplification, like any other move. */
int hss_remap(hss *h, uint64_t page, int target)
{
    hss_page *pg = pt_get(&h->pt, page);
    if (!pg || !pg->dev || target < 0 || target >= h->ndev)
        return HSS_EINVAL;
    int src = dev_of(pg);
    if (src == target)
        return HSS_OK;
    if (target != h->home && h->dev[target].used_pages >= h->cap[target])
        return HSS_EFULL;
    int rc = h->log.on ? log_push(h, HSS_LOG_CREAD, src, dev_slot(h, src, page, pg), page, 1) : HSS_OK;
    if (rc == HSS_OK) /* a real backend still copies the page (the I/O log) */
        rc = detach(h, pg);
    if (rc != HSS_OK)
        return rc;
    double ready = 0.0;
    if ((rc = attach(h, pg, target, 0.0, &ready)) < 0)
        return rc;
    if (h->log.on && (rc = log_push(h, HSS_LOG_CWRITE, rc, dev_slot(h, rc, page, pg), page, 1)) != HSS_OK)
        return rc;
    pg->last_move = h->now;
    h->c.migrations++;
    h->c.mig_bytes_written += (uint64_t)SIMDEV_PAGE;
    h->c.mig_pages_out[src]++;
    h->c.mig_pages_in[target]++;
    return lru_touch(h, target, page, pg->last_access);
}

/* ------------------------------------------------------------------ migration queue */

/* When the later of two devices is free again (for the delay a move adds to host I/O). */
static double busy_until(const hss *h, int a, int b)
{
    double fa = simdev_free_at(&h->dev[a]), fb = simdev_free_at(&h->dev[b]);
    return fa > fb ? fa : fb;
}

/* Run the pending cleaning's next chunk (hss_clean; all of it without chunks) from `start`:
 * evict_batch's moves, counted as migrations. With clean_first, an idle period's chunks start at
 * that size and double up to clean_chunk, so a host request that ends a short idle period waits
 * behind a small chunk, and a long one still runs in full chunks. */
static int run_clean(hss *h, double start)
{
    uint64_t before = h->c.evictions, freed;
    double done;
    uint32_t c = h->clean_chunk;
    if (c && h->clean_first) {
        c = h->clean_run ? 2 * h->clean_run : h->clean_first;
        if (c > h->clean_chunk)
            c = h->clean_chunk;
        h->clean_run = c;
    }
    uint32_t k = c && h->clean_k > c ? c : h->clean_k;
    h->clean_k -= k;
    int rc = evict_batch(h, h->clean_dev, k, start, &done, &freed, HSS_F_CLEANED);
    if (freed && h->clean_dev + 1 == h->home)
        h->clean_end[h->clean_issued++ % HSS_CLEAN_DEPTH_MAX] = done;
    if (freed < k)
        h->clean_k = 0; /* nothing left to clean */
    uint64_t moved = h->c.evictions - before; /* cascades included: moves, not evictions */
    h->c.evictions = before;
    h->c.migrations += moved;
    h->c.cleaned += moved;
    if (h->ghost[0] + h->ghost[1] >= 4096.0) {
        for (int i = 0; i < 4; i++)
            h->ghost[i] *= 0.5;
        for (int i = 0; i < 4; i++)
            h->dead_ghost[i] *= 0.5;
    }
    return rc;
}

/* Run the pending prefetch from `start`: past the pages already on a faster device than home, the
 * run of pages that follows at home (read before, not queued) is copied to the fastest device, as
 * much of it as the device has free room for: one read from home, where the stream left the disk
 * head, and one write. Untouched pages end the run (a first-touch read stays home, whoever reads it).
 * The pages enter the fastest device's LRU as just accessed, with an access count of 0 (a read of
 * one there before any other access is a prefetch hit). Counted as migrations. */
static int run_prefetch(hss *h, double start)
{
    uint64_t p0 = h->pf_p0, e = h->pf_p0 + h->pf_n - 1;
    h->pf_n = 0;
    uint64_t room = h->cap[0] > h->dev[0].used_pages ? h->cap[0] - h->dev[0].used_pages : 0;
    if (!room || h->home == 0)
        return HSS_OK;
    uint64_t m = 0, first = 0;
    uint32_t wslot = 0;
    for (uint64_t p = p0; p <= e && m < room; p++) {
        hss_page *pg = pt_get(&h->pt, p);
        int d = dev_of(pg);
        if (!m && d >= 0 && d != h->home)
            continue; /* prefetched before, or written there */
        if (d != h->home || (pg->flags & HSS_F_QUEUED))
            break;
        int rc;
        if ((rc = detach(h, pg)) != HSS_OK)
            return rc;
        double ready = start;
        if ((rc = attach(h, pg, 0, start, &ready)) < 0)
            return rc;
        if (h->log.on && ((rc = log_push(h, HSS_LOG_CREAD, h->home, dev_slot(h, h->home, p, pg), p, 1)) != HSS_OK
                          || (rc = log_push(h, HSS_LOG_CWRITE, 0, pg->slot, p, 1)) != HSS_OK))
            return rc;
        if (!m) {
            first = p;
            wslot = pg->slot;
        }
        m++;
        pg->count = 0;
        pg->last_access = h->now;
        pg->last_move = h->now;
        pg->flags &= (uint8_t)~(HSS_F_CLEANED | HSS_F_ONCE | HSS_F_DEADEV);
        if ((rc = lru_touch(h, 0, p, h->now)) != HSS_OK)
            return rc;
    }
    if (!m)
        return HSS_OK;
    double rdone = simdev_io(&h->dev[h->home], SIMDEV_READ, dev_slot(h, h->home, first, NULL), (uint32_t)m, start, 1);
    simdev_io(&h->dev[0], SIMDEV_WRITE, wslot, (uint32_t)m, rdone, 1);
    h->c.prefetched += m;
    h->c.migrations += m;
    h->c.mig_bytes_written += m * (uint64_t)SIMDEV_PAGE;
    h->c.mig_pages_out[h->home] += m;
    h->c.mig_pages_in[0] += m;
    return HSS_OK;
}

int hss_set_readahead(hss *h, uint32_t pages)
{
    if (pages > HSS_MAX_REQ_PAGES)
        return HSS_EINVAL;
    h->readahead = pages;
    return HSS_OK;
}

int hss_run_idle(hss *h, double t)
{
    h->clean_run = 0; /* an idle period begins: a cleaning's chunks start small again */
    while (h->mq_len) {
        hss_mq_ent *e = &h->mq[h->mq_head];
        hss_page *pg = pt_get(&h->pt, e->page);
        int src = dev_of(pg);
        if (src < 0 || src == e->target) { /* rewritten elsewhere meanwhile: stale */
            if (pg)
                pg->flags &= (uint8_t)~HSS_F_QUEUED;
            h->c.migrations_stale++;
        } else {
            double a = simdev_free_at(&h->dev[src]), b = simdev_free_at(&h->dev[e->target]);
            double start = a > b ? a : b;
            if (start >= t)
                return HSS_OK; /* no idle time left before this request */
            double done;
            pg->flags &= (uint8_t)~HSS_F_QUEUED;
            int rc = hss_move(h, e->page, e->target, start, &done);
            if (rc != HSS_OK && rc != HSS_EFULL)
                return rc;
            /* Both devices were free before t: what the move keeps them busy past t delays the
             * host request arriving at t (measured only; it changes no timing). */
            double late = busy_until(h, src, e->target) - t;
            if (late > 0)
                h->c.mig_delay_us += late;
        }
        h->mq_head = (h->mq_head + 1) % h->mq_cap;
        h->mq_len--;
    }
    if (h->pf_n) { /* a prefetch, after the queued moves and before a cleaning */
        double a = simdev_free_at(&h->dev[h->home]), b = simdev_free_at(&h->dev[0]);
        double start = a > b ? a : b;
        if (start >= t)
            return HSS_OK;
        int rc = run_prefetch(h, start);
        if (rc != HSS_OK)
            return rc;
        double late = busy_until(h, 0, h->home) - t;
        if (late > 0)
            h->c.mig_delay_us += late;
    }
    while (h->clean_k) { /* a cleaning, after the queued moves: a chunk at a time while idle */
        int d = h->clean_dev;
        double a = simdev_free_at(&h->dev[d]), b = simdev_free_at(&h->dev[d + 1]);
        double start = a > b ? a : b;
        uint32_t depth = h->clean_depth;
        if (depth && d + 1 == h->home && h->clean_issued >= depth) {
            double e = h->clean_end[(h->clean_issued - depth) % HSS_CLEAN_DEPTH_MAX];
            if (e > start)
                start = e; /* no more than `depth` chunks in flight into the home */
        }
        if (start >= t)
            return HSS_OK;
        int rc = run_clean(h, start);
        if (rc != HSS_OK)
            return rc;
        double late = busy_until(h, d, d + 1) - t;
        if (late > 0)
            h->c.mig_delay_us += late;
    }
    return HSS_OK;
}

int hss_set_clean_depth(hss *h, uint32_t depth)
{
    if (depth > HSS_CLEAN_DEPTH_MAX)
        return HSS_EINVAL;
    h->clean_depth = depth;
    return HSS_OK;
}

int hss_clean(hss *h, int d, uint32_t k, int force, uint32_t chunk, uint32_t first)
{
    if (d < 0 || d >= h->home || k == 0)
        return HSS_EINVAL;
    if (h->clean_k) {
        if (!force)
            return 0;
        /* The pending one runs now, at low priority behind the devices' queued I/O (as a move
         * of a full migration queue does); its delay is settled at the next arrival. */
        int p = h->clean_dev;
        double f0 = busy_until(h, p, p + 1);
        int rc = run_clean(h, h->cur.t);
        if (rc != HSS_OK)
            return rc;
        if (h->busy_free1 <= 0.0)
            h->busy_free0 = f0;
        h->busy_free1 = busy_until(h, p, p + 1);
    }
    h->clean_dev = d;
    h->clean_k = k;
    h->clean_chunk = chunk;
    h->clean_first = first;
    return 1;
}

int hss_enqueue(hss *h, uint64_t page, int target)
{
    hss_page *pg = pt_get(&h->pt, page);
    if (!pg || !pg->dev || target < 0 || target >= h->ndev || dev_of(pg) == target
        || (pg->flags & HSS_F_QUEUED) || h->mq_cap == 0)
        return 0;
    if (h->mq_len == h->mq_cap) {
        /* Full: the oldest move runs now, at low priority behind the device's queued I/O. */
        hss_mq_ent *e = &h->mq[h->mq_head];
        hss_page *old = pt_get(&h->pt, e->page);
        old->flags &= (uint8_t)~HSS_F_QUEUED;
        double done;
        int src = dev_of(old), rc = HSS_OK;
        if (src >= 0 && src != e->target) {
            double f0 = busy_until(h, src, e->target);
            rc = hss_move(h, e->page, e->target, h->cur.t, &done);
            if (h->busy_free1 <= 0.0) /* first queue-full move since the last arrival */
                h->busy_free0 = f0;
            h->busy_free1 = busy_until(h, src, e->target);
        }
        if (rc == HSS_OK)
            h->c.migrations_busy++;
        else if (rc != HSS_EFULL)
            return rc;
        h->mq_head = (h->mq_head + 1) % h->mq_cap;
        h->mq_len--;
    }
    int i = (h->mq_head + h->mq_len) % h->mq_cap;
    h->mq[i] = (hss_mq_ent){page, h->now, (uint8_t)target};
    h->mq_len++;
    pg->flags |= HSS_F_QUEUED;
    return 1;
}

int hss_candidate(hss *h, uint64_t *page)
{
    hss_pagetable *pt = &h->pt;
    if (!pt->nchunks)
        return 0;
    uint32_t examined = 0, budget = h->scan_window * 16, seen = 0; /* >= one chunk by default */
    uint64_t best_interval = 0;
    int found = 0;
    while (examined < budget && seen < h->scan_window) {
        if (h->scan_chunk >= pt->nchunks) {
            h->scan_chunk = 0;
            h->scan_off = 0;
        }
        uint32_t ck = pt->chunk_keys[h->scan_chunk];
        hss_page *pg;
        if (ck & HSS_DENSE_BIT) {
            pg = &((hss_page *)pt->chunks[h->scan_chunk])[h->scan_off];
        } else {
            /* A leaf: skip its absent pages at once, each counted as examined (as a dense
             * chunk's never-placed records are), so the scan is the same whatever the form. */
            hss_leaf *l = pt->chunks[h->scan_chunk];
            unsigned off = h->scan_off, w = off >> 6;
            uint64_t b = l->bits[w] & (~(uint64_t)0 << (off & 63));
            while (!b && ++w < HSS_CHUNK / 64)
                b = l->bits[w];
            unsigned next = b ? w * 64 + (unsigned)__builtin_ctzll(b) : HSS_CHUNK;
            uint32_t skip = next - off;
            if (skip) {
                if (skip > budget - examined)
                    skip = budget - examined;
                examined += skip;
                h->scan_off += skip;
                if (h->scan_off == HSS_CHUNK) {
                    h->scan_off = 0;
                    h->scan_chunk++;
                }
                continue;
            }
            pg = leaf_get(l, off);
        }
        uint64_t pno = ((uint64_t)(ck & ~HSS_DENSE_BIT) << HSS_CHUNK_BITS) | h->scan_off;
        if (++h->scan_off == HSS_CHUNK) {
            h->scan_off = 0;
            h->scan_chunk++;
        }
        examined++;
        if (!pg->dev)
            continue;
        seen++;
        uint64_t interval = h->now - pg->last_move;
        if ((pg->flags & HSS_F_QUEUED) || interval < h->min_interval || pg->last_access == h->now)
            continue;
        if (!found || interval > best_interval) {
            best_interval = interval;
            *page = pno;
            found = 1;
        }
    }
    return found;
}
