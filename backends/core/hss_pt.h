/* The HSS core's page table, the first layer on its data (hss_types.h): hss_pt.c holds it, and
 * the layers above (hss_lru.h, hss_move.h, hss.c) find pages' records through it. Here: the
 * lookups, the creation of a request's records and the walks over them, as static inline
 * functions, since hss_finish and the moves call them for every page and a call to another file
 * would not be inlined; and the out-of-line parts hss_pt.c defines for them, hidden. */
#ifndef HSS_PT_H
#define HSS_PT_H

#include "hss_types.h"

#include <string.h>

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

/* Defined in hss_pt.c and exported: hss.h declares them for the bindings, with their contracts;
 * repeated here, so the compiler checks the definitions against these and, in hss.c, which
 * includes both, these against hss.h's. */
hss_page *hss_lookup(hss *h, uint64_t page);
void hss_prefetch(const hss *h, uint64_t page, int level);
void hss_prefetch_step(const hss *h, hss_pf *st, uint64_t page, int level);
int hss_dev_of(const hss_page *pg);

#endif
