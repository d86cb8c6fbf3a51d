/* The HSS core's LRU queues and its reuse victims' dead-block predictor, on top of the page table
 * (hss_pt.h: an entry is live while its page's record says it is still there): hss_lru.c holds
 * them, and the layers above (hss_move.h, hss.c) push, pop and predict through them. Here: the
 * pushes, the batched pops and the predictor's per-access step, as static inline functions (every
 * access and every eviction of a page runs them), and the out-of-line parts hss_lru.c defines
 * for them, hidden. */
#ifndef HSS_LRU_H
#define HSS_LRU_H

#include "hss_pt.h"

/* ------------------------------------------------------------------ LRU (lazy queue) */

HSS_HIDDEN int lru_grow(hss_lru *q);
HSS_HIDDEN void lru_compact(hss *h, hss_lru *q, int d);
HSS_HIDDEN int lru_pop(hss *h, int d, uint64_t *page, hss_page **pg);

static inline int lru_push(hss_lru *q, uint64_t page, uint32_t stamp)
{
    if (q->len == q->cap && lru_grow(q) != HSS_OK)
        return HSS_ENOMEM;
    q->buf[(q->head + q->len) & (q->cap - 1)] = (page << HSS_STAMP_BITS) | (stamp & HSS_STAMP_MASK);
    q->len++;
    return HSS_OK;
}

/* An entry is live while the page is still on device d with the same last access. */
static inline hss_page *lru_live(hss *h, hss_lru_ent e, int d)
{
    hss_page *pg = pt_get(&h->pt, e >> HSS_STAMP_BITS);
    return (pg && pg->dev == d + 1 && (pg->last_access & HSS_STAMP_MASK) == (e & HSS_STAMP_MASK)) ? pg : NULL;
}

/* Pop up to k live pages of device d as k calls of lru_pop would (pages[] and pgs[] from `n` on);
 * the queue's position and length in locals meanwhile. Returns the new count. */
static inline uint64_t lru_pop_n(hss *h, int d, uint64_t n, uint64_t k, uint64_t *pages, hss_page **pgs)
{
    hss_lru *q = &h->lru[d];
    const hss_lru_ent *buf = q->buf;
    uint64_t head = q->head, len = q->len, mask = q->cap - 1;
    while (n < k && len) {
        hss_lru_ent e = buf[head];
        head = (head + 1) & mask;
        len--;
        hss_page *pg = lru_live(h, e, d);
        if (pg) {
            pages[n] = e >> HSS_STAMP_BITS;
            pgs[n++] = pg;
        }
    }
    q->head = head;
    q->len = len;
    return n;
}

static inline int lru_touch(hss *h, int d, uint64_t page, uint32_t stamp)
{
    if (d == h->home)
        return HSS_OK;
    int rc = lru_push(&h->lru[d], page, stamp);
    if (rc == HSS_OK && h->lru[d].len > 2 * h->dev[d].used_pages + 4096)
        lru_compact(h, &h->lru[d], d);
    return rc;
}

/* One device's LRU queue held in locals while a request's pages are pushed to it (hss_finish):
 * the ring, the position of its end, and how many pushes it takes before lru_touch would grow the
 * ring (length = capacity) or compact it (length past twice the device's occupancy + 4096, which
 * does not change meanwhile). That push goes through lru_touch itself, so the queue ends as with
 * lru_touch for every page. */
typedef struct lru_cur {
    hss_lru *q;
    hss_lru_ent *buf;
    uint64_t end, mask, room;
    int d;
} lru_cur;

/* Write the held length back (before anything else uses the queue); returns rc. */
static inline int lru_cur_done(lru_cur *c, int rc)
{
    if (c->q)
        c->q->len = c->end - c->q->head;
    c->q = NULL;
    c->d = -1;
    return rc;
}

static inline void lru_cur_load(hss *h, lru_cur *c, int d)
{
    hss_lru *q = &h->lru[d];
    uint64_t limit = 2 * h->dev[d].used_pages + 4096;
    uint64_t room = q->cap - q->len, below = limit > q->len ? limit - q->len : 0;
    if (below < room)
        room = below;
    *c = (lru_cur){q, q->buf, q->head + q->len, q->cap - 1, room, d};
}

/* lru_touch(h, d, page, stamp) for a device d other than home. */
static inline int lru_cur_push(hss *h, lru_cur *c, int d, uint64_t page, uint32_t stamp)
{
    if (d != c->d || !c->room) {
        if (d != c->d) {
            lru_cur_done(c, HSS_OK);
            lru_cur_load(h, c, d);
        }
        if (!c->room) {
            lru_cur_done(c, HSS_OK);
            int rc = lru_touch(h, d, page, stamp);
            lru_cur_load(h, c, d);
            return rc;
        }
    }
    c->buf[c->end++ & c->mask] = (page << HSS_STAMP_BITS) | (stamp & HSS_STAMP_MASK);
    c->room--;
    return HSS_OK;
}

/* ------------------------------------------------------------------ reuse victims */
/* A dead-block predictor (as SHiP and sampling dead-block predictors are for CPU caches): per
 * region of HSS_CHUNK pages, the accesses that followed a write of one of its pages are counted as
 * reads or writes. A page written where few written pages were read again before being rewritten
 * (at least HSS_DEAD_MIN outcomes, reads < HSS_DEAD_RATE of them) is predicted dead: it joins its
 * device's dead queue, which a cleaning takes first, oldest first, while the pages cleaned that
 * way are read again (on the slower device) less often than the others (the ghost counts, as
 * once_first checks its own order); while they are not, the cleaning is plain LRU. */
#define HSS_DEAD_MIN 8
#define HSS_DEAD_RATE 0.1

HSS_HIDDEN int regions_grow(hss_regions *rg);
HSS_HIDDEN int dead_first(const hss *h);

static inline hss_region *region_get(hss_regions *rg, uint64_t region, int create)
{
    if (create && 2 * (rg->n + 1) > rg->cap && regions_grow(rg) != HSS_OK)
        return NULL;
    if (!rg->cap)
        return NULL;
    uint64_t key = region + 1, j = (key * 0x9E3779B97F4A7C15ull) >> 40 & (rg->cap - 1);
    while (rg->tab[j].key && rg->tab[j].key != key)
        j = (j + 1) & (rg->cap - 1);
    if (!rg->tab[j].key) {
        if (!create)
            return NULL;
        rg->tab[j].key = key;
        rg->n++;
    }
    return &rg->tab[j];
}

/* Record the outcome of the page's last write (this access is a read or a write), then predict a
 * write's page: HSS_F_DEAD, and a place in its device's dead queue. */
static inline int reuse_access(hss *h, uint64_t p, hss_page *pg, int op, int d)
{
    uint64_t region = p >> HSS_CHUNK_BITS;
    if (pg->flags & HSS_F_WRITTEN) {
        hss_region *r = region_get(&h->regions, region, 1);
        if (!r)
            return HSS_ENOMEM;
        if (op == SIMDEV_READ)
            r->reads++;
        else
            r->writes++;
        if (r->reads + r->writes >= (1u << 30)) {
            r->reads >>= 1;
            r->writes >>= 1;
        }
    }
    pg->flags &= (uint8_t)~(HSS_F_WRITTEN | HSS_F_DEAD);
    if (op != SIMDEV_WRITE)
        return HSS_OK;
    pg->flags |= HSS_F_WRITTEN;
    if (d == h->home)
        return HSS_OK;
    hss_region *r = region_get(&h->regions, region, 0);
    if (!r || r->reads + r->writes < HSS_DEAD_MIN
        || (r->reads + 0.5) / (r->reads + r->writes + 1.0) >= HSS_DEAD_RATE)
        return HSS_OK;
    pg->flags |= HSS_F_DEAD;
    hss_lru *q = &h->dead[d];
    if (lru_push(q, p, h->now) != HSS_OK)
        return HSS_ENOMEM;
    if (q->len > 2 * h->dev[d].used_pages + 4096)
        lru_compact(h, q, d);
    return HSS_OK;
}

/* Defined in hss_lru.c and exported: hss.h declares it for the bindings, with its contract;
 * repeated here, as hss_pt.h and hss_move.h repeat theirs, so the compiler checks it. */
int hss_set_reuse_victims(hss *h, int on);

#endif
