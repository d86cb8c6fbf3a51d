/* The HSS core's LRU queues (lazy: an access pushes an entry, and an entry is live while its page
 * is still on the device with the same last access) and the reuse victims' dead-block predictor:
 * their growth, compaction and pops. On top of the page table (an entry's liveness is its page's
 * record). The pushes and the predictor's per-access step, which the per-page loops inline, are in
 * hss_lru.h. */
#include "hss_lru.h"

#include <stdlib.h>

/* Double a full queue's ring (out of line: pushes are on every access). The capacity stays a power
 * of two, so ring positions wrap with a mask, not a division. */
__attribute__((noinline)) int lru_grow(hss_lru *q)
{
    uint64_t ncap = q->cap ? q->cap * 2 : 1024;
    hss_lru_ent *nb = malloc(ncap * sizeof *nb);
    if (!nb)
        return HSS_ENOMEM;
    for (uint64_t i = 0; i < q->len; i++)
        nb[i] = q->buf[(q->head + i) & (q->cap - 1)];
    free(q->buf);
    q->buf = nb;
    q->head = 0;
    q->cap = ncap;
    return HSS_OK;
}

/* Drop dead entries (and duplicates) when the queue outgrows the device's live pages. */
void lru_compact(hss *h, hss_lru *q, int d)
{
    uint64_t w = 0;
    for (uint64_t i = 0; i < q->len; i++) {
        hss_lru_ent e = q->buf[(q->head + i) & (q->cap - 1)];
        hss_page *pg = lru_live(h, e, d);
        if (pg && !(pg->flags & HSS_F_MARK)) {
            pg->flags |= HSS_F_MARK;
            q->buf[(q->head + w) & (q->cap - 1)] = e;
            w++;
        }
    }
    /* Rewrite from the start of the ring so the order stays oldest -> newest. */
    for (uint64_t i = 0; i < w; i++) {
        hss_lru_ent e = q->buf[(q->head + i) & (q->cap - 1)];
        hss_page *pg = pt_get(&h->pt, e >> HSS_STAMP_BITS);
        pg->flags &= (uint8_t)~HSS_F_MARK;
    }
    q->len = w;
}

/* Pop the least recently used live page of device d (*page, its record *pg); returns 0 if there is
 * none. */
int lru_pop(hss *h, int d, uint64_t *page, hss_page **pg)
{
    hss_lru *q = &h->lru[d];
    while (q->len) {
        hss_lru_ent e = q->buf[q->head];
        q->head = (q->head + 1) & (q->cap - 1);
        q->len--;
        if ((*pg = lru_live(h, e, d)) != NULL) {
            *page = e >> HSS_STAMP_BITS;
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ reuse victims */

/* Double the regions' table, or allocate it (out of line: region_get is on every write). */
int regions_grow(hss_regions *rg)
{
    uint64_t cap = rg->cap ? 2 * rg->cap : 1024;
    hss_region *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return HSS_ENOMEM;
    for (uint64_t i = 0; i < rg->cap; i++) {
        if (!rg->tab[i].key)
            continue;
        uint64_t j = (rg->tab[i].key * 0x9E3779B97F4A7C15ull) >> 40 & (cap - 1);
        while (tab[j].key)
            j = (j + 1) & (cap - 1);
        tab[j] = rg->tab[i];
    }
    free(rg->tab);
    rg->tab = tab;
    rg->cap = cap;
    return HSS_OK;
}

/* Whether a cleaning takes the predicted-dead pages first: until 64 of them were cleaned, and then
 * while they are read again (from the slower device) less often than the other cleaned pages
 * (priors as once_first's), which are read again at all: where no cleaned page is read back there is
 * no read to save, and the pages predicted dead are the ones rewritten most (a write-only stream's
 * every region), which LRU keeps on the fast device. */
int dead_first(const hss *h)
{
    const double *q = h->dead_ghost;
    return q[0] < 64.0 || (q[3] >= 1.0 && (q[1] + 1.0) / (q[0] + 16.0) < (q[3] + 1.0) / (q[2] + 16.0));
}

int hss_set_reuse_victims(hss *h, int on)
{
    h->reuse_victims = on ? 1 : 0;
    return HSS_OK;
}
