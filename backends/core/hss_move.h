/* Where the HSS core moves pages, on top of its LRU queues (hss_lru.h: the victims) and its page
 * table (hss_pt.h): hss_move.c holds the moves, the migration queue and the idle-time work, and
 * hss.c places a request's pages through them. Here: the slots of the devices below home, a page's
 * attach and detach, a prefetched page's outcome and the readahead, as static inline functions
 * (the per-page loops of hss_finish and of the moves run them), and the out-of-line parts
 * hss_move.c defines for them, hidden: the I/O log, making room on a full device, the batched
 * evictions. */
#ifndef HSS_MOVE_H
#define HSS_MOVE_H

#include "hss_lru.h"

/* ------------------------------------------------------------------ slots */

HSS_HIDDEN int slot_grow(hss_alloc *a);

static inline int slot_alloc(hss *h, int d, uint32_t *slot)
{
    hss_alloc *a = &h->alloc[d];
    if (a->nfree) {
        *slot = a->free[--a->nfree];
        return HSS_OK;
    }
    if (a->next == UINT32_MAX)
        return HSS_EFULL;
    *slot = a->next++;
    return HSS_OK;
}

static inline int slot_release(hss *h, int d, uint32_t slot)
{
    hss_alloc *a = &h->alloc[d];
    if (a->nfree == a->cap_free && slot_grow(a) != HSS_OK)
        return HSS_ENOMEM;
    a->free[a->nfree++] = slot;
    return HSS_OK;
}

static inline uint64_t dev_slot(const hss *h, int d, uint64_t page, const hss_page *pg)
{
    if (d != h->home)
        return pg->slot;
    uint64_t cap = h->dev[d].p.capacity_pages;
    return page < cap ? page : page % cap; /* no division for the common in-range page */
}

/* ------------------------------------------------------------------ moves */

HSS_HIDDEN int log_push(hss *h, int kind, int d, uint64_t slot, uint64_t page, uint32_t n);
HSS_HIDDEN int attach_room(hss *h, int d, double t, double *ready);
HSS_HIDDEN int evict_batch(hss *h, int d, uint64_t k, double t, double *done, uint64_t *freed, uint8_t mark);

/* Detach a page from its device (slot freed, occupancy decremented). */
static inline int detach(hss *h, hss_page *pg)
{
    int d = dev_of(pg);
    if (d < 0)
        return HSS_OK;
    h->dev[d].used_pages--;
    pg->dev = 0;
    return d == h->home ? HSS_OK : slot_release(h, d, pg->slot);
}

/* Attach a page to device d, evicting d's LRU page first when d is full (attach_room), so a page
 * is never lost. Returns the device used, or an error. */
static inline int attach(hss *h, hss_page *pg, int d, double t, double *ready)
{
    if (d != h->home && h->dev[d].used_pages >= h->cap[d] && (d = attach_room(h, d, t, ready)) < 0)
        return d;
    if (d != h->home) {
        int rc = slot_alloc(h, d, &pg->slot);
        if (rc != HSS_OK)
            return rc;
    }
    pg->dev = (uint8_t)(d + 1);
    h->dev[d].used_pages++;
    return d;
}

/* ------------------------------------------------------------------ readahead */

/* A prefetched page's outcome (a page with an access stamp and no access count is one whose outcome
 * is not known), at its first access (`moved` 0: the access counts it) or its first move down
 * (`moved` 1: counted as one access, so it is resolved): a read of it where it was prefetched is a
 * hit; a write, or a move down before any access, wasted it. Counts decay as the cleanings'
 * ghosts do. */
static inline void prefetch_outcome(hss *h, hss_page *pg, int hit, int moved)
{
    if (pg->count || !pg->last_access)
        return;
    if (moved)
        pg->count = 1;
    h->pf_outcome[hit ? 0 : 1] += 1.0;
    if (hit)
        h->c.prefetch_hits++;
    if (h->pf_outcome[0] + h->pf_outcome[1] >= 4096.0) {
        h->pf_outcome[0] *= 0.5;
        h->pf_outcome[1] *= 0.5;
    }
}

/* Whether readahead pays: while at least half of the prefetched pages whose outcome is known were
 * hits (a prior of one hit in two); when it does not, one continued stream in 16 still prefetches,
 * so the count follows a workload that changes. */
static inline int prefetch_pays(const hss *h)
{
    return 2.0 * (h->pf_outcome[0] + 1.0) >= h->pf_outcome[0] + h->pf_outcome[1] + 2.0;
}

/* Readahead after a read (hss_set_readahead): continue the stream the read continues, or start
 * one. A stream continued twice is sequential (one continuation happens by chance among random
 * reads); its window doubles, from twice the read's size, up to h->readahead pages, and the pages
 * after the read, up to the window, become the pending prefetch. */
static inline void readahead(hss *h, const hss_req *r)
{
    uint32_t n = (uint32_t)(r->p1 - r->p0 + 1);
    for (int i = 0; i < HSS_RA_STREAMS; i++) {
        if (h->ra_next[i] != r->p0 || !r->p0)
            continue;
        h->ra_next[i] = r->p1 + 1;
        if (!h->ra_win[i]) { /* continued once: a stream, not yet a sequential one */
            h->ra_win[i] = 1;
            return;
        }
        uint32_t w = h->ra_win[i] > 1 ? 2 * h->ra_win[i] : 2 * n;
        if (w > h->readahead)
            w = h->readahead;
        h->ra_win[i] = w;
        if (prefetch_pays(h) || ++h->pf_probe % 16 == 0) {
            h->pf_p0 = r->p1 + 1;
            h->pf_n = w;
        }
        return;
    }
    h->ra_next[h->ra_slot] = r->p1 + 1;
    h->ra_win[h->ra_slot] = 0;
    h->ra_slot = (h->ra_slot + 1) % HSS_RA_STREAMS;
}

/* Defined in hss_move.c and exported: hss.h declares them for the bindings, with their contracts;
 * repeated here, so the compiler checks the definitions against these and, in hss.c, which
 * includes both, these against hss.h's. */
uint64_t hss_slot_of(const hss *h, uint64_t page, const hss_page *pg);
void hss_log_enable(hss *h, int on);
uint64_t hss_used(const hss *h, int d);
int hss_move(hss *h, uint64_t page, int target, double t, double *done);
int hss_remap(hss *h, uint64_t page, int target);
int hss_set_readahead(hss *h, uint32_t pages);
int hss_run_idle(hss *h, double t);
int hss_set_clean_depth(hss *h, uint32_t depth);
int hss_clean(hss *h, int d, uint32_t k, int force, uint32_t chunk, uint32_t first);
int hss_enqueue(hss *h, uint64_t page, int target);
int hss_candidate(hss *h, uint64_t *page);

#endif
