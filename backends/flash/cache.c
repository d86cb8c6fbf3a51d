/* The flash SSD model's DRAM data cache; see cache.h. */
#include "cache.h"

/* MQSim's Data_Cache_Manager_Flash_Advanced (its default Caching_Mechanism), read from its source:
 * - slots of one page each, keyed by (stream, logical page), LRU per partition (one shared cache,
 *   or one per stream of capacity / n_streams with EQUAL_PARTITIONING);
 * - a write is absorbed page by page while the sectors of write-backs in flight (back pressure) stay
 *   below one page per plane: a page already cached is updated, else inserted, evicting the LRU
 *   slot (written back first if dirty: DRAM read, then a flash write of the top priority class);
 *   a page not written since the last reset of its stream's "bloom filter" (a set, cleared every
 *   simulated second) is cold and written back at once, its slot dropped when that write ends (if
 *   no newer data came); a page written again within the second stays dirty in DRAM. The request
 *   completes when its data has crossed the DRAM (one transfer of its absorbed sectors); pages
 *   left over wait, in arrival order, and are retried whenever a write-back ends;
 * - a read takes the sectors the cache holds from DRAM (one transfer) and the rest from flash; with
 *   read caching, pages read from flash are inserted (a DRAM write nobody waits for);
 * - one DRAM channel, transfers in FIFO order (round robin over the streams' queues when
 *   partitioned), each taking MQSim's estimate_dram_access_time. */

static inline int part_of(const fl_sim *s, int stream) { return s->c.cache_partitioned ? stream : 0; }

static inline int popc(uint64_t m) { return __builtin_popcountll(m); }

/* 512-byte sectors of a page touched by the byte range [lo, hi) of it */
static uint64_t sector_mask(int64_t lo, int64_t hi)
{
    int a = (int)(lo / 512), b = (int)((hi + 511) / 512);
    uint64_t upto = b >= 64 ? ~0ull : (1ull << b) - 1;
    return upto & ~((1ull << a) - 1);
}

static uint32_t slot_hash(const fl_sim *s, int stream, uint32_t lpn)
{
    uint64_t k = (((uint64_t)stream << 32) | lpn) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> 40) & (s->n_buckets - 1);
}

int cache_init(fl_sim *s)
{
    const fl_config *c = &s->c;
    s->cache_wr = (c->cache_mode & FL_CACHE_WRITE) != 0;
    s->cache_rd = (c->cache_mode & FL_CACHE_READ) != 0;
    s->n_parts = c->cache_partitioned ? c->n_streams : 1;
    s->spp = c->page_size / 512;
    /* MQSim: capacity_in_pages = capacity / (512 * sectors per page), split equally when partitioned;
     * back_pressure_buffer_max_depth = planes * sectors per page */
    s->part_cap = (c->cache_bytes / (512 * (int64_t)s->spp)) / s->n_parts;
    s->bp_max = (int64_t)s->n_planes * s->spp;
    s->dram_burst_ns = 1e9 / (c->dram_mtps * 1e6);
    s->n_buckets = 1024;
    s->bucket = malloc(s->n_buckets * sizeof(int32_t));
    s->parts = calloc((size_t)s->n_parts, sizeof(cpart_t));
    s->seen = calloc((size_t)c->n_streams, sizeof(lset_t));
    if (!s->bucket || !s->parts || !s->seen) return -1;
    for (uint32_t i = 0; i < s->n_buckets; i++) s->bucket[i] = -1;
    for (int p = 0; p < s->n_parts; p++) {
        cpart_t *cp = &s->parts[p];
        cp->lru_head = cp->lru_tail = cp->wait_head = cp->wait_tail = cp->dq_head = cp->dq_tail = -1;
    }
    s->slot_free = s->dx_free = -1;
    return 0;
}

void cache_free(fl_sim *s)
{
    if (s->seen)
        for (int i = 0; i < s->c.n_streams; i++) free(s->seen[i].k);
    free(s->seen); free(s->parts); free(s->bucket); free(s->slots); free(s->dx);
}

static int32_t slot_find(const fl_sim *s, int stream, uint32_t lpn)
{
    for (int32_t i = s->bucket[slot_hash(s, stream, lpn)]; i >= 0; i = s->slots[i].hnext)
        if (s->slots[i].lpn == lpn && s->slots[i].stream == stream) return i;
    return -1;
}

static void lru_unlink(fl_sim *s, int32_t i)
{
    cslot_t *x = &s->slots[i];
    cpart_t *cp = &s->parts[part_of(s, x->stream)];
    if (x->prev >= 0) s->slots[x->prev].next = x->next; else cp->lru_head = x->next;
    if (x->next >= 0) s->slots[x->next].prev = x->prev; else cp->lru_tail = x->prev;
}

static void lru_push_front(fl_sim *s, int32_t i)
{
    cslot_t *x = &s->slots[i];
    cpart_t *cp = &s->parts[part_of(s, x->stream)];
    x->prev = -1;
    x->next = cp->lru_head;
    if (cp->lru_head >= 0) s->slots[cp->lru_head].prev = i; else cp->lru_tail = i;
    cp->lru_head = i;
}

/* MQSim's Get_slot / Update_data: the slot becomes the most recently used */
static void slot_touch(fl_sim *s, int32_t i)
{
    if (s->parts[part_of(s, s->slots[i].stream)].lru_head == i) return;
    lru_unlink(s, i);
    lru_push_front(s, i);
}

/* the hash table with nb buckets, rebuilt from the LRU lists */
static void rehash(fl_sim *s, uint32_t nb)
{
    int32_t *b = malloc(nb * sizeof(int32_t));
    if (!b) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    free(s->bucket);
    s->bucket = b;
    s->n_buckets = nb;
    for (uint32_t h = 0; h < nb; h++) b[h] = -1;
    for (int p = 0; p < s->n_parts; p++)
        for (int32_t i = s->parts[p].lru_head; i >= 0; i = s->slots[i].next) {
            uint32_t h = slot_hash(s, s->slots[i].stream, s->slots[i].lpn);
            s->slots[i].hnext = b[h];
            b[h] = i;
        }
}

static int32_t slot_insert(fl_sim *s, int stream, uint32_t lpn, uint64_t sectors, int64_t ts, int status)
{
    if (s->slot_free < 0) {
        int32_t old = s->slot_cap;
        s->slots = grow(s->slots, sizeof(cslot_t), &s->slot_cap, old + 1);
        for (int32_t k = s->slot_cap - 1; k >= old; k--) { s->slots[k].hnext = s->slot_free; s->slot_free = k; }
    }
    if ((uint32_t)s->slot_used + 1 > s->n_buckets) rehash(s, s->n_buckets * 2);
    int32_t i = s->slot_free;
    cslot_t *x = &s->slots[i];
    s->slot_free = x->hnext;
    x->ts = ts; x->sectors = sectors; x->lpn = lpn; x->stream = (uint16_t)stream; x->status = (uint8_t)status;
    uint32_t h = slot_hash(s, stream, lpn);
    x->hnext = s->bucket[h];
    s->bucket[h] = i;
    lru_push_front(s, i);
    s->parts[part_of(s, stream)].n++;
    s->slot_used++;
    return i;
}

static void slot_remove(fl_sim *s, int32_t i)
{
    cslot_t *x = &s->slots[i];
    int32_t *pp = &s->bucket[slot_hash(s, x->stream, x->lpn)];
    while (*pp != i) pp = &s->slots[*pp].hnext;
    *pp = x->hnext;
    lru_unlink(s, i);
    s->parts[part_of(s, x->stream)].n--;
    s->slot_used--;
    x->hnext = s->slot_free;
    s->slot_free = i;
}

static inline uint32_t lset_slot(uint32_t key, uint32_t cap) { return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1); }

static int lset_has(const lset_t *z, uint32_t lpn)
{
    if (!z->cap) return 0;
    uint32_t key = lpn + 1, m = z->cap - 1;
    for (uint32_t h = lset_slot(key, z->cap); z->k[h]; h = (h + 1) & m)
        if (z->k[h] == key) return 1;
    return 0;
}

/* add lpn (not in the set) */
static void lset_add(lset_t *z, uint32_t lpn)
{
    if (2 * (z->n + 1) > z->cap) {
        uint32_t cap = z->cap ? 2 * z->cap : 1024, *k = calloc(cap, sizeof(uint32_t));
        if (!k) { fprintf(stderr, "flash: out of memory\n"); abort(); }
        for (uint32_t j = 0; j < z->cap; j++) {
            if (!z->k[j]) continue;
            uint32_t h = lset_slot(z->k[j], cap);
            while (k[h]) h = (h + 1) & (cap - 1);
            k[h] = z->k[j];
        }
        free(z->k);
        z->k = k;
        z->cap = cap;
    }
    uint32_t h = lset_slot(lpn + 1, z->cap);
    while (z->k[h]) h = (h + 1) & (z->cap - 1);
    z->k[h] = lpn + 1;
    z->n++;
}

static void lset_clear(lset_t *z)
{
    if (z->cap) memset(z->k, 0, z->cap * sizeof(uint32_t));
    z->n = 0;
}

/* MQSim's estimate_dram_access_time, integer divisions and truncations included (a transfer of more
 * than a row is charged by whole pairs of rows plus the remainder at the burst rate) */
static int64_t dram_ns(const fl_sim *s, int64_t bytes)
{
    const fl_config *c = &s->c;
    int64_t row = c->dram_row_bytes, burst = c->dram_burst_bytes, rc = c->dram_trcd_ns + c->dram_tcl_ns;
    double bt = s->dram_burst_ns;
    if (bytes <= row) return rc + (int64_t)((double)(bytes / burst / 2) * bt);
    double per2rows = (double)(int64_t)((double)(row / burst / 2) * bt + (double)c->dram_trp_ns);
    return (int64_t)((double)rc + per2rows * (double)(bytes / row / 2) + (double)rc
                     + (double)(int64_t)((double)(bytes % row) / ((double)burst * bt)));
}

static void dram_start(fl_sim *s, int32_t d)
{
    s->dram_busy = 1;
    ev_push(s, s->now + dram_ns(s, s->dx[d].bytes), EV_DRAM, d);
}

/* MQSim's service_dram_access_request: start at once on an idle channel, else queue */
static void dram_submit(fl_sim *s, int type, int64_t bytes, int32_t arg, int stream)
{
    if (s->dx_free < 0) {
        int32_t old = s->dx_cap;
        s->dx = grow(s->dx, sizeof(dram_t), &s->dx_cap, old + 1);
        for (int32_t k = s->dx_cap - 1; k >= old; k--) { s->dx[k].next = s->dx_free; s->dx_free = k; }
    }
    int32_t d = s->dx_free;
    dram_t *x = &s->dx[d];
    s->dx_free = x->next;
    x->bytes = bytes; x->arg = arg; x->type = (uint8_t)type; x->stream = (uint16_t)stream; x->next = -1;
    if (!s->dram_busy) {
        s->dram_turn = stream;
        dram_start(s, d);
        return;
    }
    cpart_t *cp = &s->parts[part_of(s, stream)];
    if (cp->dq_tail < 0) cp->dq_head = d; else s->dx[cp->dq_tail].next = d;
    cp->dq_tail = d;
}

static int32_t dq_pop(fl_sim *s, cpart_t *cp)
{
    int32_t d = cp->dq_head;
    if (d >= 0) { cp->dq_head = s->dx[d].next; if (cp->dq_head < 0) cp->dq_tail = -1; }
    return d;
}

static inline int64_t cw_ts(const tx_t *x) { return (int64_t)(((uint64_t)(uint32_t)x->req << 32) | (uint32_t)x->link); }

/* A write-back of sectors of page lpn, not yet dispatched: its chunk masks for the update read are
 * kept in page until cache_dispatch (which places it when the FTL sees it, as MQSim's AMU). */
static int32_t cache_write_tx(fl_sim *s, int stream, uint32_t lpn, uint64_t sectors, int64_t ts, int urgent)
{
    unsigned full = 0, any = 0;
    if (s->cbits) {
        for (int k = 0; k < s->cbits; k++) {
            int a = 8 * k, b = 8 * k + 8 < s->spp ? 8 * k + 8 : s->spp;
            uint64_t cm = (b >= 64 ? ~0ull : (1ull << b) - 1) & ~((1ull << a) - 1);
            if ((sectors & cm) == cm) full |= 1u << k;
            if (sectors & cm) any |= 1u << k;
        }
    } else {
        uint64_t all = s->spp >= 64 ? ~0ull : (1ull << s->spp) - 1;
        full = (sectors & all) == all;
        any = 1;
    }
    int32_t t = tx_alloc(s);
    tx_t *x = &s->tx[t];
    x->kind = TX_CWRITE; x->stream = (uint8_t)stream; x->lpn = lpn;
    x->bytes = (uint32_t)popc(sectors) * 512u;
    x->req = (int32_t)(uint32_t)((uint64_t)ts >> 32);
    x->link = (int32_t)(uint32_t)(uint64_t)ts;
    x->wq = (uint8_t)(Q_UW + (urgent ? FL_PRIO - 1 : s->streams[stream].prio));
    x->page = full | (any << 8);
    return t;
}

static void cache_dispatch(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    unsigned full = x->page & 0xFFu, any = x->page >> 8;
    x->page = 0;
    x->pl = write_plane(s, &s->streams[x->stream], x->lpn);
    update_read_chunks(s, t, full, any, x->bytes, s->tx[t].wq - Q_UW);
    if (place_write(s, t) && !s->tx[t].held) enqueue_tx(s, t, s->tx[t].wq);
}

/* Evict the LRU slot of partition cp for a new one; a dirty one is written back after a DRAM read.
 * Returns its write-back (not dispatched, *sectors set) or -1. */
static int32_t cache_evict(fl_sim *s, cpart_t *cp, int64_t *sectors)
{
    int32_t v = cp->lru_tail, t = -1;
    cslot_t *y = &s->slots[v];
    *sectors = 0;
    if (y->status == CS_DIRTY) {
        *sectors = popc(y->sectors);
        t = cache_write_tx(s, y->stream, y->lpn, y->sectors, y->ts, 1);
        s->cst.evictions++;
    }
    slot_remove(s, v);
    return t;
}

static inline int64_t last_page(const fl_sim *s, const req_t *q) { return (q->off + q->size - 1) / s->c.page_size; }

/* MQSim's write_to_destage_buffer: absorb the request's pages from q->cur on, while back pressure
 * allows (see the block comment above). */
static void cache_destage(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    int si = q->stream;
    cpart_t *cp = &s->parts[part_of(s, si)];
    int64_t ps = s->c.page_size, last = last_page(s, q), ev = 0, wb = 0, dram = 0, cur0 = q->cur;
    int32_t ev_head = -1, ev_tail = -1, wb_head = -1, wb_tail = -1;
    while (q->cur <= last && cp->bp + ev + wb < s->bp_max) {
        int64_t lp = q->cur++, lo = lp * ps, hi = lo + ps;
        if (lo < q->off) lo = q->off;
        if (hi > q->off + q->size) hi = q->off + q->size;
        uint64_t m = sector_mask(lo - lp * ps, hi - lp * ps);
        uint32_t lpn = (uint32_t)lp;
        int32_t i = slot_find(s, si, lpn);
        if (i >= 0) {
            slot_touch(s, i);
            cslot_t *x = &s->slots[i];
            x->sectors |= m;
            if (q->admit_ns > x->ts) x->ts = q->admit_ns;
            x->status = CS_DIRTY;
        } else {
            if (cp->n >= s->part_cap) {
                int64_t n;
                int32_t t = cache_evict(s, cp, &n);
                if (t >= 0) {
                    ev += n;
                    if (ev_tail < 0) ev_head = t; else s->tx[ev_tail].next = t;
                    ev_tail = t;
                }
            }
            i = slot_insert(s, si, lpn, m, q->admit_ns, CS_DIRTY);
        }
        dram += popc(m);
        s->host_page_writes++;
        s->cst.write_pages++;
        if (!lset_has(&s->seen[si], lpn)) { /* cold: written back at once */
            s->slots[i].status = CS_WB;
            wb += popc(m);
            lset_add(&s->seen[si], lpn);
            int32_t t = cache_write_tx(s, si, lpn, m, q->admit_ns, 0);
            if (wb_tail < 0) wb_head = t; else s->tx[wb_tail].next = t;
            wb_tail = t;
            s->cst.writebacks++;
        }
    }
    cp->bp += ev + wb;
    if (ev) dram_submit(s, DX_EVICT, ev * 512, ev_head, si);
    if (dram) {
        q->remaining++;
        dram_submit(s, DX_USER, dram * 512, r, si);
    }
    if (cur0 <= last && q->cur > last) q->remaining--; /* all absorbed (a DRAM transfer is under way) */
    for (int32_t t = wb_head; t >= 0;) {
        int32_t nx = s->tx[t].next;
        s->tx[t].next = -1;
        cache_dispatch(s, t);
        t = nx;
    }
    if (s->now > s->seen_reset_at) { /* MQSim resets only the stream whose write passes the milestone */
        lset_clear(&s->seen[si]);
        s->seen_reset_at = s->now + 1000000000;
    }
}

/* A write request with write caching on: absorbed now, or (its rest) queued for back-pressure room. */
static void cache_admit_write(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    q->remaining = 1;
    q->cur = (int32_t)(q->off / s->c.page_size);
    cache_destage(s, r);
    q = &s->rq[r];
    if (q->cur <= last_page(s, q)) {
        cpart_t *cp = &s->parts[part_of(s, q->stream)];
        q->next = -1;
        if (cp->wait_tail < 0) cp->wait_head = r; else s->rq[cp->wait_tail].next = r;
        cp->wait_tail = r;
        s->cst.waits++;
    }
}

/* The sectors of page lp the cache holds for a read of [lo, hi) of it (MQSim: Exists, Get_slot). */
static uint64_t cache_read_hit(fl_sim *s, int stream, uint32_t lpn, uint64_t want)
{
    int32_t i = slot_find(s, stream, lpn);
    if (i < 0) return 0;
    slot_touch(s, i);
    return s->slots[i].sectors & want;
}

/* Read caching: the page just read from flash goes into the cache (a DRAM write nobody waits for).
 * MQSim's Update_data would also mark an already cached page dirty; here it stays as it was. */
void cache_fill(fl_sim *s, int32_t t)
{
    const tx_t *x = &s->tx[t];
    const req_t *q = &s->rq[x->req];
    int si = x->stream;
    uint32_t lpn = x->lpn;
    int64_t ps = s->c.page_size, lo = (int64_t)lpn * ps, hi = lo + ps, ts = q->admit_ns;
    if (lo < q->off) lo = q->off;
    if (hi > q->off + q->size) hi = q->off + q->size;
    uint64_t m = sector_mask(lo - (int64_t)lpn * ps, hi - (int64_t)lpn * ps);
    int32_t i = slot_find(s, si, lpn);
    if (i >= 0) {
        slot_touch(s, i);
        s->slots[i].sectors |= m;
        if (ts > s->slots[i].ts) s->slots[i].ts = ts;
        return;
    }
    cpart_t *cp = &s->parts[part_of(s, si)];
    if (cp->n >= s->part_cap) {
        int64_t n;
        int32_t w = cache_evict(s, cp, &n);
        if (w >= 0) {
            cp->bp += n;
            dram_submit(s, DX_EVICT, n * 512, w, si);
        }
    }
    slot_insert(s, si, lpn, m, ts, CS_CLEAN);
    dram_submit(s, DX_FILL, (int64_t)popc(m) * 512, -1, si);
}

/* A write-back has reached flash: its back pressure is released, its slot dropped unless newer
 * data came, and the waiting writes retried in order until back pressure is over its limit again
 * (MQSim's handle_transaction_serviced_signal_from_PHY). */
void cache_write_done(fl_sim *s, int32_t t)
{
    const tx_t *x = &s->tx[t];
    int si = x->stream;
    uint32_t lpn = x->lpn;
    int64_t ts = cw_ts(x), sectors = (x->bytes + 511) / 512;
    s->streams[si].st.write_tx++;
    s->flash_programs++;
    tx_release(s, t);
    cpart_t *cp = &s->parts[part_of(s, si)];
    cp->bp -= sectors;
    int32_t i = slot_find(s, si, lpn);
    if (i >= 0 && ts >= s->slots[i].ts) slot_remove(s, i);
    int32_t prev = -1, r = cp->wait_head;
    while (r >= 0) {
        cache_destage(s, r);
        int32_t nx = s->rq[r].next;
        if (s->rq[r].cur > last_page(s, &s->rq[r])) {
            if (prev < 0) cp->wait_head = nx; else s->rq[prev].next = nx;
            if (cp->wait_tail == r) cp->wait_tail = prev;
            s->rq[r].next = -1;
        } else {
            prev = r;
        }
        r = nx;
        if (cp->bp > s->bp_max) break;
    }
}

int32_t cache_dram_done(fl_sim *s, int32_t d)
{
    dram_t x = s->dx[d];
    s->dx[d].next = s->dx_free;
    s->dx_free = d;
    if (x.type == DX_USER) return --s->rq[x.arg].remaining == 0 ? x.arg : -1;
    if (x.type == DX_EVICT) {
        for (int32_t t = x.arg; t >= 0;) {
            int32_t nx = s->tx[t].next;
            s->tx[t].next = -1;
            cache_dispatch(s, t);
            t = nx;
        }
    }
    return -1;
}

/* MQSim frees the channel after handling the event: transfers started meanwhile waited their turn */
void cache_dram_next(fl_sim *s)
{
    s->dram_busy = 0;
    int32_t nd = -1;
    if (!s->c.cache_partitioned) {
        nd = dq_pop(s, &s->parts[0]);
    } else {
        for (int k = 0; k < s->n_parts && nd < 0; k++) {
            s->dram_turn = (s->dram_turn + 1) % s->n_parts;
            nd = dq_pop(s, &s->parts[s->dram_turn]);
        }
    }
    if (nd >= 0) dram_start(s, nd);
}

/* A request with the data cache on: a write absorbed (write caching), or a read whose pages the
 * cache holds taken from DRAM (one transfer) and the rest from flash. */
void cache_admit(fl_sim *s, int32_t r, uint64_t first, uint64_t last, int prio)
{
    req_t *q = &s->rq[r];
    if (q->write && s->cache_wr) { cache_admit_write(s, r); return; }
    const stream_t *st = &s->streams[q->stream];
    int64_t ps = s->c.page_size, hit_sectors = 0;
    for (uint64_t lp = first; lp <= last; lp++) {
        int64_t lo = (int64_t)lp * ps, hi = lo + ps;
        if (lo < q->off) lo = q->off;
        if (hi > q->off + q->size) hi = q->off + q->size;
        if (q->write) {   /* read caching only: the write goes to flash */
            write_tx(s, r, st, lp, lo, hi, prio);
            q = &s->rq[r];
            continue;
        }
        uint64_t want = sector_mask(lo - (int64_t)lp * ps, hi - (int64_t)lp * ps);
        uint64_t got = cache_read_hit(s, q->stream, (uint32_t)lp, want);
        int64_t cut = 0;   /* bytes of the page read from DRAM instead */
        if (got == want) {
            hit_sectors += popc(want);
            s->cst.read_hits++;
            q->remaining--;
            continue;
        }
        if (got) {
            hit_sectors += popc(got);
            s->cst.read_partial_hits++;
            cut = (int64_t)popc(got) * 512;
            if (cut > hi - lo - 1) cut = hi - lo - 1;
        }
        read_tx(s, r, st, lp, lo, hi, (uint32_t)(hi - lo - cut), prio);
        q = &s->rq[r];
    }
    if (hit_sectors) {
        q->remaining++;
        dram_submit(s, DX_USER, hit_sectors * 512, r, q->stream);
    }
}

int cache_check(const fl_sim *s, char *err, size_t errlen)
{
    int64_t used = 0;
    for (int p = 0; p < s->n_parts; p++) {
        const cpart_t *cp = &s->parts[p];
        int64_t n = 0;
        for (int32_t i = cp->lru_head; i >= 0; i = s->slots[i].next, n++)
            if (slot_find(s, s->slots[i].stream, s->slots[i].lpn) != i || part_of(s, s->slots[i].stream) != p) {
                snprintf(err, errlen, "cache slot %d (page %u) is not found where it should be", i, s->slots[i].lpn);
                return -1;
            }
        if (n != cp->n || n > s->part_cap || cp->bp < 0) {
            snprintf(err, errlen, "cache partition %d: %lld slots listed, %d counted, capacity %lld, back pressure %lld",
                     p, (long long)n, cp->n, (long long)s->part_cap, (long long)cp->bp);
            return -1;
        }
        used += n;
    }
    if (used != s->slot_used) {
        snprintf(err, errlen, "cache: %lld slots listed, %d in use", (long long)used, s->slot_used);
        return -1;
    }
    return 0;
}
