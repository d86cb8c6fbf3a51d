/* What the HSS core's files share (hss_pt.c, hss_lru.c, hss_move.c, hss.c; hss.h has the data
 * structures): the per-request and per-page fast paths of the page table, the LRU queues, the reuse
 * predictor, the slots and a page's attach and detach, the prefetch's outcome and the readahead, as
 * static inline functions, since hss_finish and the moves call them for every page and a call to
 * another file would not be inlined; and the out-of-line parts the files call each other for,
 * hidden (a direct call, not one through the PLT, and no export from the extension). */
#ifndef HSS_INTERNAL_H
#define HSS_INTERNAL_H

#include "hss.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define HSS_HIDDEN __attribute__((visibility("hidden")))
#else
#define HSS_HIDDEN
#endif

/* ------------------------------------------------------------------ page table (hss_pt.c) */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Bytes a heap block of `req` bytes takes (glibc: an 8-byte header, 16-byte granules). */
static inline uint64_t heap_bytes(uint64_t req)
{
    uint64_t b = (req + 8 + 15) & ~(uint64_t)15;
    return b < 32 ? 32 : b;
}

/* Set bits of x, inline (without -mpopcnt, __builtin_popcountll is a libgcc call). On x86-64,
 * the POPCNT instruction when the CPU has it (hss_init checks; the build assumes no -mpopcnt), and
 * the portable count out of line there, so the page-table lookups that inline this stay small
 * enough to be inlined themselves. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HSS_NO_POPCNT_ASM)
#define HSS_HAVE_POPCNT_ASM 1
HSS_HIDDEN extern int have_popcnt; /* hss_pt.c */
#define HSS_POPCOUNT_SOFT static __attribute__((noinline, unused)) unsigned
#else
#define HSS_POPCOUNT_SOFT static inline unsigned
#endif
HSS_POPCOUNT_SOFT popcount64_soft(uint64_t x)
{
    x -= (x >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}

static inline unsigned popcount64(uint64_t x)
{
#ifdef HSS_HAVE_POPCNT_ASM
    if (have_popcnt) {
        uint64_t r;
        __asm__("popcntq %1, %0" : "=r"(r) : "r"(x) : "cc");
        return (unsigned)r;
    }
#endif
    return popcount64_soft(x);
}

static inline hss_page *leaf_rec(hss_leaf *l)
{
    return (hss_page *)(void *)(l + 1);
}

static inline uint16_t *leaf_perm(hss_leaf *l)
{
    return (uint16_t *)(void *)(leaf_rec(l) + l->cap);
}

static inline hss_page *leaf_get(hss_leaf *l, unsigned off)
{
    unsigned w = off >> 6;
    uint64_t b = l->bits[w], m = (uint64_t)1 << (off & 63);
    if (!(b & m))
        return NULL;
    return &leaf_rec(l)[leaf_perm(l)[l->cum[w] + popcount64(b & (m - 1))]];
}

static inline void pt_cache(hss_pagetable *pt, uint64_t key, uint32_t idx)
{
    pt->cached_key = key;
    pt->cached_idx = idx;
    pt->cached = pt->chunks[idx];
    pt->cached_dense = (pt->chunk_keys[idx] & HSS_DENSE_BIT) != 0;
}

HSS_HIDDEN int pt_chunk_new(hss_pagetable *pt, uint64_t key);

/* Find (or create, as an empty leaf) the chunk `key` and make it the cached one; 0 if absent. */
static inline int pt_chunk(hss_pagetable *pt, uint64_t key, int create)
{
    if (key >= HSS_DENSE_BIT)
        return 0;
    uint64_t i = mix64(key) & (pt->dir_cap - 1);
    while (pt->dir[i].idx) {
        if (pt->dir[i].key == key) {
            pt_cache(pt, key, pt->dir[i].idx - 1);
            return 1;
        }
        i = (i + 1) & (pt->dir_cap - 1);
    }
    return create && pt_chunk_new(pt, key);
}

HSS_HIDDEN void *leaf_reserve(hss_pagetable *pt, uint32_t need, int *dense);

/* The bits of offsets a..b (a <= b) in word w of a leaf's map. */
static inline uint64_t run_bits(unsigned w, unsigned a, unsigned b)
{
    uint64_t m = ~(uint64_t)0;
    if (w == a >> 6)
        m &= ~(uint64_t)0 << (a & 63);
    if (w == b >> 6)
        m &= ~(uint64_t)0 >> (63 - (b & 63));
    return m;
}

/* Add the absent pages among offsets a..b (k of them) to the cached leaf, which has room for them:
 * zeroed records appended in ascending offset order, leaving the ranks, bits and counts that adding
 * them one at a time in that order would. */
static inline void leaf_insert_run(hss_leaf *l, unsigned a, unsigned b, uint32_t k)
{
    uint16_t *perm = leaf_perm(l);
    unsigned wa = a >> 6, wb = b >> 6;
    uint32_t n = l->n, span = b - a + 1, present = span - k;
    uint32_t ra = l->cum[wa] + popcount64(l->bits[wa] & (((uint64_t)1 << (a & 63)) - 1)); /* rank of a */
    /* the ranks of the offsets past b move up by k */
    memmove(perm + ra + span, perm + ra + present, (n - ra - present) * sizeof *perm);
    /* a..b from the top: a present offset keeps its record, an absent one takes the next new one */
    uint32_t src = ra + present, dst = ra + span, rec = n + k;
    for (unsigned o = b + 1; o-- > a;)
        perm[--dst] = (l->bits[o >> 6] >> (o & 63) & 1) ? perm[--src] : (uint16_t)--rec;
    memset(leaf_rec(l) + n, 0, k * sizeof(hss_page));
    for (unsigned w = wa; w <= wb; w++)
        l->bits[w] |= run_bits(w, a, b);
    for (unsigned w = wa + 1; w < HSS_CHUNK / 64; w++)
        l->cum[w] = (uint16_t)(l->cum[w - 1] + popcount64(l->bits[w - 1]));
    l->n = (uint16_t)(n + k);
}

/* Give every page of p..e (one chunk, created if absent) a record: zeroed for those that had none.
 * A leaf grows once at most, to the capacity one-at-a-time growth reaches. This moves records of the
 * chunk (see hss_leaf). 0 when out of memory. */
static inline int pt_create_run(hss_pagetable *pt, uint64_t p, uint64_t e)
{
    uint64_t key = p >> HSS_CHUNK_BITS;
    if (key != pt->cached_key && !pt_chunk(pt, key, 1))
        return 0;
    if (pt->cached_dense)
        return 1;
    hss_leaf *l = pt->cached;
    unsigned a = (unsigned)(p & (HSS_CHUNK - 1)), b = (unsigned)(e & (HSS_CHUNK - 1));
    uint32_t present = 0;
    for (unsigned w = a >> 6; w <= b >> 6; w++)
        present += popcount64(l->bits[w] & run_bits(w, a, b));
    uint32_t k = b - a + 1 - present;
    if (!k)
        return 1;
    if (l->n + k > l->cap) {
        int dense;
        void *c = leaf_reserve(pt, l->n + k, &dense);
        if (!c || dense)
            return c != NULL;
        l = c;
    }
    leaf_insert_run(l, a, b, k);
    return 1;
}

/* The record of `page`; NULL if it has none. */
static inline hss_page *pt_get(hss_pagetable *pt, uint64_t page)
{
    uint64_t key = page >> HSS_CHUNK_BITS;
    if (key != pt->cached_key && !pt_chunk(pt, key, 0))
        return NULL;
    unsigned off = (unsigned)(page & (HSS_CHUNK - 1));
    if (pt->cached_dense)
        return &((hss_page *)pt->cached)[off];
    return leaf_get(pt->cached, off);
}

/* A walk over the records of consecutive pages that all have one (a request's pages once placed),
 * a chunk at a time: pt_walk_start looks up the chunk of its first page and that page's rank, and
 * pt_walk_next gives the record of the next rank (consecutive present offsets have consecutive
 * ranks; a dense chunk's ranks are its offsets). Valid while no page of the chunk walked is
 * created (pt_create_run moves the records of its own chunk only). */
typedef struct pt_walk { hss_page *base; const uint16_t *perm; uint32_t rank; } pt_walk;

/* A dense chunk's "ranks" (hss_pt.c): record i is offset i's. */
HSS_HIDDEN extern const uint16_t pt_identity[HSS_CHUNK];

/* Start a walk at `page` (which has a record); returns the last page to walk before the next start:
 * the last of page's chunk, or `last` if that comes first. */
static inline uint64_t pt_walk_start(hss_pagetable *pt, pt_walk *it, uint64_t page, uint64_t last)
{
    uint64_t key = page >> HSS_CHUNK_BITS, e = page | (HSS_CHUNK - 1);
    if (key != pt->cached_key)
        pt_chunk(pt, key, 0);
    unsigned off = (unsigned)(page & (HSS_CHUNK - 1));
    /* the rank before page's: pt_walk_next steps to it first (unsigned, so 0 - 1 wraps back) */
    if (pt->cached_dense) {
        it->base = pt->cached;
        it->perm = pt_identity;
        it->rank = off - 1;
    } else {
        hss_leaf *l = pt->cached;
        it->base = leaf_rec(l);
        it->perm = leaf_perm(l);
        it->rank = l->cum[off >> 6] + popcount64(l->bits[off >> 6] & (((uint64_t)1 << (off & 63)) - 1)) - 1;
    }
    return e < last ? e : last;
}

/* The record of the page after the one walked before (or of the walk's first page). */
static inline hss_page *pt_walk_next(pt_walk *it)
{
    return it->base + it->perm[++it->rank];
}

HSS_HIDDEN int pt_init(hss_pagetable *pt);
HSS_HIDDEN void pt_free(hss_pagetable *pt);
HSS_HIDDEN uint64_t pt_count_unplaced(hss_pagetable *pt, uint64_t p0, uint64_t p1, int place);

/* hss_dev_of for the core's files: an exported function is not inlined under -fPIC (it could be
 * interposed), and the replay calls it several times a page. */
static inline int dev_of(const hss_page *pg)
{
    return pg && pg->dev ? pg->dev - 1 : -1;
}

/* ------------------------------------------------------------------ LRU (lazy queue; hss_lru.c) */

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

/* ------------------------------------------------------------------ reuse victims (hss_lru.c) */
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

/* ------------------------------------------------------------------ slots (hss_move.c) */

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

/* ------------------------------------------------------------------ moves (hss_move.c) */

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

#endif
