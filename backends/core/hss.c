/* The HSS core. See hss.h for the data structures and the two-phase request protocol. */
#include "hss.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ page table */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int pt_init(hss_pagetable *pt)
{
    memset(pt, 0, sizeof *pt);
    pt->dir_cap = 64;
    pt->dir = calloc(pt->dir_cap, sizeof *pt->dir);
    pt->cached_key = UINT64_MAX;
    return pt->dir ? HSS_OK : HSS_ENOMEM;
}

static void pt_free(hss_pagetable *pt)
{
    for (uint32_t i = 0; i < pt->nchunks; i++)
        free(pt->chunks[i]);
    free(pt->chunks);
    free(pt->chunk_keys);
    free(pt->dir);
    memset(pt, 0, sizeof *pt);
}

/* Bytes a heap block of `req` bytes takes (glibc: an 8-byte header, 16-byte granules). */
static uint64_t heap_bytes(uint64_t req)
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
static int have_popcnt;
#define HSS_POPCOUNT_SOFT static __attribute__((noinline)) unsigned
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

static size_t leaf_size(uint32_t cap)
{
    return sizeof(hss_leaf) + (size_t)cap * (sizeof(hss_page) + sizeof(uint16_t));
}

static hss_page *leaf_rec(hss_leaf *l)
{
    return (hss_page *)(void *)(l + 1);
}

static uint16_t *leaf_perm(hss_leaf *l)
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

static void dir_insert(hss_dir_slot *dir, uint64_t cap, uint32_t key, uint32_t idx)
{
    uint64_t i = mix64(key) & (cap - 1);
    while (dir[i].idx)
        i = (i + 1) & (cap - 1);
    dir[i].key = key;
    dir[i].idx = idx;
}

static void pt_cache(hss_pagetable *pt, uint64_t key, uint32_t idx)
{
    pt->cached_key = key;
    pt->cached_idx = idx;
    pt->cached = pt->chunks[idx];
    pt->cached_dense = (pt->chunk_keys[idx] & HSS_DENSE_BIT) != 0;
}

/* Find (or create, as an empty leaf) the chunk `key` and make it the cached one; 0 if absent. */
static int pt_chunk(hss_pagetable *pt, uint64_t key, int create)
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
    if (!create)
        return 0;
    if ((uint64_t)(pt->nchunks + 1) * 2 > pt->dir_cap) { /* keep load <= 1/2 */
        uint64_t ncap = pt->dir_cap * 2;
        hss_dir_slot *nd = calloc(ncap, sizeof *nd);
        if (!nd)
            return 0;
        for (uint32_t c = 0; c < pt->nchunks; c++)
            dir_insert(nd, ncap, pt->chunk_keys[c] & ~HSS_DENSE_BIT, c + 1);
        free(pt->dir);
        pt->dir = nd;
        pt->dir_cap = ncap;
    }
    if (pt->nchunks == pt->chunks_cap) {
        uint32_t ncap = pt->chunks_cap ? pt->chunks_cap * 2 : 64;
        void **nc = realloc(pt->chunks, ncap * sizeof *nc);
        if (!nc)
            return 0;
        pt->chunks = nc;
        uint32_t *nk = realloc(pt->chunk_keys, ncap * sizeof *nk);
        if (!nk)
            return 0;
        pt->chunk_keys = nk;
        pt->chunks_cap = ncap;
    }
    hss_leaf *l = calloc(1, leaf_size(0));
    if (!l)
        return 0;
    pt->leaf_bytes += heap_bytes(leaf_size(0));
    pt->chunks[pt->nchunks] = l;
    pt->chunk_keys[pt->nchunks] = (uint32_t)key;
    pt->nchunks++;
    dir_insert(pt->dir, pt->dir_cap, (uint32_t)key, pt->nchunks);
    pt_cache(pt, key, pt->nchunks - 1);
    return 1;
}

/* Replace the cached leaf by a dense chunk with the same records. */
static hss_page *leaf_densify(hss_pagetable *pt)
{
    hss_leaf *l = pt->cached;
    hss_page *d = calloc(HSS_CHUNK, sizeof *d);
    if (!d)
        return NULL;
    const hss_page *rec = leaf_rec(l);
    const uint16_t *perm = leaf_perm(l);
    unsigned r = 0;
    for (unsigned w = 0; w < HSS_CHUNK / 64; w++)
        for (uint64_t b = l->bits[w]; b; b &= b - 1)
            d[w * 64 + (unsigned)__builtin_ctzll(b)] = rec[perm[r++]];
    pt->leaf_bytes -= heap_bytes(leaf_size(l->cap));
    free(l);
    pt->ndense++;
    pt->chunks[pt->cached_idx] = d;
    pt->chunk_keys[pt->cached_idx] |= HSS_DENSE_BIT;
    pt->cached = d;
    pt->cached_dense = 1;
    return d;
}

/* The capacity a leaf of capacity `cap` grows to when full. */
static uint32_t leaf_next_cap(uint32_t cap)
{
    uint32_t ncap = cap + (cap < 64 ? cap / 4 : cap / 2) + 2;
    return ncap > HSS_LEAF_MAX ? HSS_LEAF_MAX : ncap;
}

/* Make room in the cached leaf for `need` records: grow it to the capacity that growing one record
 * at a time would reach (the same memory, in one reallocation), or make it dense if `need` exceeds
 * HSS_LEAF_MAX. Returns the dense chunk, the leaf, or NULL when out of memory; *dense says which.
 * Out of line: the common insertion does not pay for its calls. */
static __attribute__((noinline)) void *leaf_reserve(hss_pagetable *pt, uint32_t need, int *dense)
{
    hss_leaf *l = pt->cached;
    if (need > HSS_LEAF_MAX) {
        *dense = 1;
        return leaf_densify(pt);
    }
    *dense = 0;
    uint32_t ocap = l->cap, ncap = ocap;
    while (ncap < need)
        ncap = leaf_next_cap(ncap);
    if (ncap == ocap)
        return l;
    hss_leaf *nl = realloc(l, leaf_size(ncap));
    if (!nl)
        return NULL;
    l = nl;
    l->cap = (uint16_t)ncap;
    /* the ranks followed the old capacity's records */
    memmove(leaf_perm(l), (uint16_t *)(void *)(leaf_rec(l) + ocap), l->n * sizeof(uint16_t));
    pt->leaf_bytes += heap_bytes(leaf_size(ncap)) - heap_bytes(leaf_size(ocap));
    pt->chunks[pt->cached_idx] = l;
    pt->cached = l;
    return l;
}

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
static void leaf_insert_run(hss_leaf *l, unsigned a, unsigned b, uint32_t k)
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
static int pt_create_run(hss_pagetable *pt, uint64_t p, uint64_t e)
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

/* A dense chunk's "ranks": record i is offset i's, so a walk steps through both kinds alike. */
#define PT_I8(n) n, n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7
#define PT_I64(n) PT_I8(n), PT_I8(n + 8), PT_I8(n + 16), PT_I8(n + 24), PT_I8(n + 32), PT_I8(n + 40), \
    PT_I8(n + 48), PT_I8(n + 56)
static const uint16_t pt_identity[HSS_CHUNK] = {PT_I64(0), PT_I64(64), PT_I64(128), PT_I64(192), PT_I64(256),
                                                PT_I64(320), PT_I64(384), PT_I64(448)};
typedef char pt_identity_covers_a_chunk[HSS_CHUNK == 512 ? 1 : -1];

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

/* The pages of p0..p1 that have no record, are not placed, or (place >= 0) are placed on another
 * device than `place`. Chunk by chunk: a leaf's absent pages are counted from its map, and its
 * present ones are walked by rank (consecutive present offsets have consecutive ranks). */
static uint64_t pt_count_unplaced(hss_pagetable *pt, uint64_t p0, uint64_t p1, int place)
{
    uint64_t need = 0;
    unsigned dev = place >= 0 ? (unsigned)place + 1 : 0;
    for (uint64_t p = p0; p <= p1;) {
        uint64_t e = p | (HSS_CHUNK - 1);
        if (e > p1)
            e = p1;
        unsigned a = (unsigned)(p & (HSS_CHUNK - 1)), b = (unsigned)(e & (HSS_CHUNK - 1));
        uint64_t key = p >> HSS_CHUNK_BITS;
        p = e + 1;
        if (key != pt->cached_key && !pt_chunk(pt, key, 0)) {
            need += b - a + 1;
            continue;
        }
        if (pt->cached_dense) {
            const hss_page *c = pt->cached;
            for (unsigned o = a; o <= b; o++)
                need += !c[o].dev || (dev && c[o].dev != dev);
            continue;
        }
        hss_leaf *l = pt->cached;
        const hss_page *rec = leaf_rec(l);
        const uint16_t *perm = leaf_perm(l);
        for (unsigned w = a >> 6; w <= b >> 6; w++) {
            uint64_t m = run_bits(w, a, b), bits = l->bits[w] & m;
            unsigned lo = w == a >> 6 ? (a & 63) : 0;
            uint32_t rank = l->cum[w] + popcount64(l->bits[w] & (((uint64_t)1 << lo) - 1));
            need += popcount64(m) - popcount64(bits);
            for (; bits; bits &= bits - 1) {
                const hss_page *pg = &rec[perm[rank++]];
                need += !pg->dev || (dev && pg->dev != dev);
            }
        }
    }
    return need;
}

hss_page *hss_lookup(hss *h, uint64_t page)
{
    return pt_get(&h->pt, page);
}

void hss_prefetch(const hss *h, uint64_t page, int level)
{
    const hss_pagetable *pt = &h->pt;
    uint64_t key = page >> HSS_CHUNK_BITS;
    if (key >= HSS_DENSE_BIT)
        return;
    uint64_t i = mix64(key) & (pt->dir_cap - 1);
    if (level <= 0) {
        __builtin_prefetch(&pt->dir[i]);
        return;
    }
    while (pt->dir[i].idx && pt->dir[i].key != key)
        i = (i + 1) & (pt->dir_cap - 1);
    if (!pt->dir[i].idx)
        return;
    uint32_t idx = pt->dir[i].idx - 1;
    if (level == 1) {
        __builtin_prefetch(&pt->chunks[idx]);
        __builtin_prefetch(&pt->chunk_keys[idx]);
        return;
    }
    unsigned off = (unsigned)(page & (HSS_CHUNK - 1)), w = off >> 6;
    if (pt->chunk_keys[idx] & HSS_DENSE_BIT) {
        __builtin_prefetch(&((const hss_page *)pt->chunks[idx])[off]);
        return;
    }
    hss_leaf *l = pt->chunks[idx];
    if (level == 2) {
        __builtin_prefetch(&l->bits[w]);
        __builtin_prefetch(&l->cum[w]); /* with n and cap */
        return;
    }
    uint64_t b = l->bits[w], m = (uint64_t)1 << (off & 63);
    if (!(b & m))
        return;
    const uint16_t *perm = leaf_perm(l) + l->cum[w] + popcount64(b & (m - 1));
    if (level == 3)
        __builtin_prefetch(perm);
    else
        __builtin_prefetch(&leaf_rec(l)[*perm]);
}

void hss_prefetch_step(const hss *h, hss_pf *st, uint64_t page, int level)
{
    const hss_pagetable *pt = &h->pt;
    if (level <= 0) {
        uint64_t key = page >> HSS_CHUNK_BITS;
        st->level = -1;
        if (key >= HSS_DENSE_BIT)
            return;
        uint64_t i = mix64(key) & (pt->dir_cap - 1);
        __builtin_prefetch(&pt->dir[i]);
        *st = (hss_pf){NULL, page, (uint32_t)i, 0};
        return;
    }
    if (st->level != level - 1 || st->page != page) {
        st->level = -1;
        return;
    }
    st->level = -1; /* unless this level finds the next one */
    unsigned off = (unsigned)(page & (HSS_CHUNK - 1)), w = off >> 6;
    if (level == 1) {
        uint64_t key = page >> HSS_CHUNK_BITS, i = st->x;
        while (pt->dir[i].idx && pt->dir[i].key != key)
            i = (i + 1) & (pt->dir_cap - 1);
        if (!pt->dir[i].idx)
            return;
        uint32_t idx = pt->dir[i].idx - 1;
        __builtin_prefetch(&pt->chunks[idx]);
        __builtin_prefetch(&pt->chunk_keys[idx]);
        st->x = idx;
        st->level = 1;
    } else if (level == 2) {
        uint32_t idx = st->x;
        if (pt->chunk_keys[idx] & HSS_DENSE_BIT) {
            __builtin_prefetch(&((const hss_page *)pt->chunks[idx])[off]);
            return;
        }
        hss_leaf *l = pt->chunks[idx];
        __builtin_prefetch(&l->bits[w]);
        __builtin_prefetch(&l->cum[w]); /* with n and cap */
        st->p = l;
        st->level = 2;
    } else if (level == 3) {
        hss_leaf *l = (hss_leaf *)st->p;
        uint64_t b = l->bits[w], m = (uint64_t)1 << (off & 63);
        if (!(b & m))
            return;
        st->x = l->cum[w] + popcount64(b & (m - 1));
        __builtin_prefetch(leaf_perm(l) + st->x);
        st->level = 3;
    } else {
        hss_leaf *l = (hss_leaf *)st->p;
        __builtin_prefetch(&leaf_rec(l)[leaf_perm(l)[st->x]]);
    }
}

/* hss_dev_of for this file: an exported function is not inlined under -fPIC (it could be
 * interposed), and the replay calls it several times a page. */
static inline int dev_of(const hss_page *pg)
{
    return pg && pg->dev ? pg->dev - 1 : -1;
}

int hss_dev_of(const hss_page *pg)
{
    return dev_of(pg);
}

/* ------------------------------------------------------------------ LRU (lazy queue) */

/* Double a full queue's ring (out of line: pushes are on every access). The capacity stays a power
 * of two, so ring positions wrap with a mask, not a division. */
static __attribute__((noinline)) int lru_grow(hss_lru *q)
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

static inline int lru_push(hss_lru *q, uint64_t page, uint32_t stamp)
{
    if (q->len == q->cap && lru_grow(q) != HSS_OK)
        return HSS_ENOMEM;
    q->buf[(q->head + q->len) & (q->cap - 1)] = (page << HSS_STAMP_BITS) | (stamp & HSS_STAMP_MASK);
    q->len++;
    return HSS_OK;
}

/* An entry is live while the page is still on device d with the same last access. */
static hss_page *lru_live(hss *h, hss_lru_ent e, int d)
{
    hss_page *pg = pt_get(&h->pt, e >> HSS_STAMP_BITS);
    return (pg && pg->dev == d + 1 && (pg->last_access & HSS_STAMP_MASK) == (e & HSS_STAMP_MASK)) ? pg : NULL;
}

/* Drop dead entries (and duplicates) when the queue outgrows the device's live pages. */
static void lru_compact(hss *h, hss_lru *q, int d)
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
static int lru_pop(hss *h, int d, uint64_t *page, hss_page **pg)
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

/* Pop up to k live pages of device d as k calls of lru_pop would (pages[] and pgs[] from `n` on);
 * the queue's position and length in locals meanwhile. Returns the new count. */
static uint64_t lru_pop_n(hss *h, int d, uint64_t n, uint64_t k, uint64_t *pages, hss_page **pgs)
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

/* An error in hss_finish's I/O loop: the fast pages counted so far and the held length written
 * back, as the page-by-page updates would have left them; returns rc. */
static inline int io_fail(hss *h, lru_cur *c, uint64_t fast, int rc)
{
    h->c.fast_pages += fast;
    return lru_cur_done(c, rc);
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

static hss_region *region_get(hss_regions *rg, uint64_t region, int create)
{
    if (create && 2 * (rg->n + 1) > rg->cap) {
        uint64_t cap = rg->cap ? 2 * rg->cap : 1024;
        hss_region *tab = calloc(cap, sizeof *tab);
        if (!tab)
            return NULL;
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
    }
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
static int reuse_access(hss *h, uint64_t p, hss_page *pg, int op, int d)
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

/* Whether a cleaning takes the predicted-dead pages first: until 64 of them were cleaned, and then
 * while they are read again (from the slower device) less often than the other cleaned pages
 * (priors as once_first's), which are read again at all: where no cleaned page is read back there is
 * no read to save, and the pages predicted dead are the ones rewritten most (a write-only stream's
 * every region), which LRU keeps on the fast device. */
static int dead_first(const hss *h)
{
    const double *q = h->dead_ghost;
    return q[0] < 64.0 || (q[3] >= 1.0 && (q[1] + 1.0) / (q[0] + 16.0) < (q[3] + 1.0) / (q[2] + 16.0));
}

int hss_set_reuse_victims(hss *h, int on)
{
    h->reuse_victims = on ? 1 : 0;
    return HSS_OK;
}

int hss_set_clean_depth(hss *h, uint32_t depth)
{
    if (depth > HSS_CLEAN_DEPTH_MAX)
        return HSS_EINVAL;
    h->clean_depth = depth;
    return HSS_OK;
}

int hss_set_readahead(hss *h, uint32_t pages)
{
    if (pages > HSS_MAX_REQ_PAGES)
        return HSS_EINVAL;
    h->readahead = pages;
    return HSS_OK;
}

/* ------------------------------------------------------------------ slots */

static int slot_alloc(hss *h, int d, uint32_t *slot)
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

/* Double a full free list (out of line: releases are on every eviction). */
static __attribute__((noinline)) int slot_grow(hss_alloc *a)
{
    uint32_t ncap = a->cap_free ? a->cap_free * 2 : 1024;
    uint32_t *nf = realloc(a->free, ncap * sizeof *nf);
    if (!nf)
        return HSS_ENOMEM;
    a->free = nf;
    a->cap_free = ncap;
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

static uint64_t dev_slot(const hss *h, int d, uint64_t page, const hss_page *pg)
{
    if (d != h->home)
        return pg->slot;
    uint64_t cap = h->dev[d].p.capacity_pages;
    return page < cap ? page : page % cap; /* no division for the common in-range page */
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

static int log_push(hss *h, int kind, int d, uint64_t slot, uint64_t page, uint32_t n)
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

static int evict_one(hss *h, int d, double t, double *done);

/* Make room on device d (full) by evicting its LRU page (critical path: *ready is raised to when
 * the eviction completes); a full device with nothing to evict passes on to the next slower one.
 * Returns the device that has room, or an error. Out of line: most attaches find room. */
static __attribute__((noinline)) int attach_room(hss *h, int d, double t, double *ready)
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
static int evict_batch(hss *h, int d, uint64_t k, double t, double *done, uint64_t *freed, uint8_t mark)
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

/* Whether readahead pays: while at least half of the prefetched pages whose outcome is known were
 * hits (a prior of one hit in two); when it does not, one continued stream in 16 still prefetches,
 * so the count follows a workload that changes. */
static int prefetch_pays(const hss *h)
{
    return 2.0 * (h->pf_outcome[0] + 1.0) >= h->pf_outcome[0] + h->pf_outcome[1] + 2.0;
}

/* Readahead after a read (hss_set_readahead): continue the stream the read continues, or start
 * one. A stream continued twice is sequential (one continuation happens by chance among random
 * reads); its window doubles, from twice the read's size, up to h->readahead pages, and the pages
 * after the read, up to the window, become the pending prefetch. */
static void readahead(hss *h, const hss_req *r)
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
