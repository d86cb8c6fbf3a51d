/* The HSS core's page table: a directory of 512-page chunks, each a sparse leaf or a dense array of
 * page records (hss_types.h: hss_pagetable, hss_leaf), its growth, the requests' count of unplaced
 * pages, and the lookups and prefetches the bindings and vector envs call. The bottom layer of the
 * core's code: it uses its data alone. The lookups and walks that the per-page loops inline are in
 * hss_pt.h. */
#include "hss_pt.h"

#include <stdlib.h>

HSS_HIDDEN int pt_init(hss_pagetable *pt)
{
    memset(pt, 0, sizeof *pt);
    pt->dir_cap = 64;
    pt->dir = calloc(pt->dir_cap, sizeof *pt->dir);
    pt->cached_key = UINT64_MAX;
    return pt->dir ? HSS_OK : HSS_ENOMEM;
}

HSS_HIDDEN void pt_free(hss_pagetable *pt)
{
    for (uint32_t i = 0; i < pt->nchunks; i++)
        free(pt->chunks[i]);
    free(pt->chunks);
    free(pt->chunk_keys);
    free(pt->dir);
    memset(pt, 0, sizeof *pt);
}

#ifdef HSS_HAVE_POPCNT_ASM
int have_popcnt; /* whether the CPU has POPCNT (hss_init checks) */
#endif

static size_t leaf_size(uint32_t cap)
{
    return sizeof(hss_leaf) + (size_t)cap * (sizeof(hss_page) + sizeof(uint16_t));
}

static void dir_insert(hss_dir_slot *dir, uint64_t cap, uint32_t key, uint32_t idx)
{
    uint64_t i = mix64(key) & (cap - 1);
    while (dir[i].idx)
        i = (i + 1) & (cap - 1);
    dir[i].key = key;
    dir[i].idx = idx;
}

/* pt_chunk's creation of the absent chunk `key`, as an empty leaf (out of line: lookups inline
 * pt_chunk). */
int pt_chunk_new(hss_pagetable *pt, uint64_t key)
{
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
__attribute__((noinline)) void *leaf_reserve(hss_pagetable *pt, uint32_t need, int *dense)
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

/* A dense chunk's "ranks": record i is offset i's, so a walk steps through both kinds alike. */
#define PT_I8(n) n, n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7
#define PT_I64(n) PT_I8(n), PT_I8(n + 8), PT_I8(n + 16), PT_I8(n + 24), PT_I8(n + 32), PT_I8(n + 40), \
    PT_I8(n + 48), PT_I8(n + 56)
const uint16_t pt_identity[HSS_CHUNK] = {PT_I64(0), PT_I64(64), PT_I64(128), PT_I64(192), PT_I64(256),
                                         PT_I64(320), PT_I64(384), PT_I64(448)};
typedef char pt_identity_covers_a_chunk[HSS_CHUNK == 512 ? 1 : -1];

/* The pages of p0..p1 that have no record, are not placed, or (place >= 0) are placed on another
 * device than `place`. Chunk by chunk: a leaf's absent pages are counted from its map, and its
 * present ones are walked by rank (consecutive present offsets have consecutive ranks). */
uint64_t pt_count_unplaced(hss_pagetable *pt, uint64_t p0, uint64_t p1, int place)
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

int hss_dev_of(const hss_page *pg)
{
    return dev_of(pg);
}
