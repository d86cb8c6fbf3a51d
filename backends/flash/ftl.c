/* The flash SSD model's FTL (see ftl.h): the event queue; the mapping, page placement and greedy
 * GC; the chips' and channels' scheduling of flash transactions (MQSim's TSU and PHY order, as the
 * top comment of flash.c tells); the making of a host page's read or write transactions, for the
 * core's uncached path and the data cache's misses alike; the completion of the FTL's own ones. */
#include "ftl.h"

#include <math.h>

/* ------------------------------------------------------------------ helpers */

static inline int die_of_plane(const fl_sim *s, uint32_t pl) { return (int)((s->pl_loc[pl] >> 8) & 0xFFu); }
static inline int plane_in_die(const fl_sim *s, uint32_t pl) { return (int)(s->pl_loc[pl] & 0xFFu); }

/* transfer times of whole sectors come from a table (the same llround, computed once) */
static inline int64_t xfer_ns(const fl_sim *s, uint32_t bytes)
{
    if (!(bytes & 511u) && bytes <= (uint32_t)s->c.page_size) return s->xfer_sect[bytes >> 9];
    return (int64_t)llround(bytes * s->xfer_ns_per_byte);
}

/* ------------------------------------------------------------------ event queue */

static inline int ev_less(const ev_t *a, const ev_t *b) { return key_less(a->t, a->seq, b->t, b->seq); }

/* The slot after the heap's last event holds EV_END, later than any event, so that a sift-down
 * picks the smaller child without testing whether the right one exists. */
static const ev_t EV_END = {INT64_MAX, UINT64_MAX, 0, 0};

/* e into the hole at i of a heap of n events (a sift-down) */
static inline void ev_sift_down(ev_t *h, size_t n, size_t i, ev_t e)
{
    for (;;) {
        size_t l = 2 * i + 1, m;
        if (l >= n) break;
        m = l + (size_t)ev_less(&h[l + 1], &h[l]);
        if (!ev_less(&h[m], &e)) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = e;
}

/* e into the heap: in the handled root's place (one sift-down) if it was taken, else a sift-up */
void heap_insert(fl_sim *s, ev_t e)
{
    if (s->top_taken) {
        s->top_taken = 0;
        ev_sift_down(s->heap, s->heap_n, 0, e);
        return;
    }
    if (s->heap_n + 1 >= s->heap_cap) {
        s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 1024;
        s->heap = realloc(s->heap, s->heap_cap * sizeof(ev_t));
        if (!s->heap) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    }
    size_t i = s->heap_n++;
    s->heap[s->heap_n] = EV_END;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

/* the heap's handled root leaves: the last event fills its hole */
void heap_settle(fl_sim *s)
{
    s->top_taken = 0;
    size_t n = --s->heap_n;
    ev_t e = s->heap[n];
    s->heap[n] = EV_END;
    if (n) ev_sift_down(s->heap, n, 0, e);
}

static int ring_init(ring_t *q, uint32_t n)
{
    q->head = q->n = 0;
    q->mask = n - 1;
    q->r = q->hp = malloc(n * sizeof(qev_t));
    if (q->r) q->r[0] = EV_NONE;
    return q->r ? 0 : -1;
}

void ring_grow(ring_t *q)
{
    uint32_t cap = q->mask + 1;
    qev_t *r = malloc(2 * (size_t)cap * sizeof(qev_t));
    if (!r) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    for (uint32_t i = 0; i < q->n; i++) r[i] = q->r[(q->head + i) & q->mask];
    r[q->n] = EV_NONE;
    free(q->r);
    q->r = q->hp = r;
    q->head = 0;
    q->mask = 2 * cap - 1;
}

int ev_init(fl_sim *s)
{
    uint32_t n = 2;
    while (n <= (uint32_t)s->c.n_channels) n *= 2;   /* room for every channel and the end marker */
    uint32_t na = 2;
    while (na <= (uint32_t)s->n_units) na *= 2;
    s->heap_cap = 1024;
    s->heap = malloc(s->heap_cap * sizeof(ev_t));
    if (!s->heap) return -1;
    s->heap[0] = EV_END;
    if (ring_init(&s->bq, n) < 0) return -1;
    for (int k = 0; k < 3; k++)
        if (ring_init(&s->aq[k], na) < 0) return -1;
    s->ahp = s->aq[s->amin].hp;
    return 0;
}

void ev_free(fl_sim *s)
{
    free(s->bq.r);
    for (int k = 0; k < 3; k++) free(s->aq[k].r);
    free(s->heap);
}

/* ------------------------------------------------------------------ FTL */

/* A free block of plane pl for a frontier; host writes leave the last one to GC, so that GC can
 * always make progress (a victim has fewer than pages_per_block valid pages). */
static int32_t take_free_block(fl_sim *s, uint32_t pl, int stream, int gc)
{
    plane_t *p = &s->planes[pl];
    if (p->n_free <= (gc ? 0 : 1)) return -1;
    int32_t b = (int32_t)s->free_stack[(size_t)pl * s->B + (size_t)(--p->n_free)];
    uint32_t gb = pl * (uint32_t)s->B + (uint32_t)b;
    s->blk_state[gb] = BLK_ACTIVE;
    s->blk_owner[gb] = (uint8_t)stream;
    s->units[unit_of_plane(s, pl)].free_blocks--;
    return b;
}

/* A page in the stream's (data or GC) frontier of plane pl; NONE when the plane has no free block.
 * The caller maps it, then checks for GC (MQSim checks when a frontier block is replaced). */
static uint32_t alloc_page(fl_sim *s, uint32_t pl, int stream, int gc, uint32_t *page_out)
{
    frontier_t *f = (gc ? s->gc_wf : s->data_wf) + (size_t)pl * s->c.n_streams + stream;
    if (f->blk < 0) {
        f->blk = take_free_block(s, pl, stream, gc);
        f->wp = 0;
        if (f->blk < 0) return NONE;
    }
    uint32_t gb = pl * (uint32_t)s->B + (uint32_t)f->blk;
    uint32_t ppn = gb * (uint32_t)s->G + f->wp;
    *page_out = f->wp;
    if (++f->wp == (uint32_t)s->G) {
        s->blk_state[gb] = BLK_FULL;
        f->blk = take_free_block(s, pl, stream, gc);
        f->wp = 0;
    }
    return ppn;
}

static void map_page(fl_sim *s, uint32_t lpn, uint32_t ppn)
{
    uint32_t old = L2P(s, lpn);
    if (old != NONE) {
        uint32_t ob = fl_div(s->dG, old);
        s->blk_valid[ob]--;
        s->units[unit_of_plane(s, fl_div(s->dB, ob))].valid_pages--;
    }
    l2p_set(s, lpn, ppn);
    p2l_set(s, ppn, lpn);
    uint32_t nb = fl_div(s->dG, ppn);
    s->blk_valid[nb]++;
    s->units[unit_of_plane(s, fl_div(s->dB, nb))].valid_pages++;
}

/* Give a write transaction its physical page (or stall it until the plane frees a block). */
int place_write(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    uint32_t page;
    uint32_t ppn = alloc_page(s, x->pl, x->stream, x->kind == TX_GCWRITE, &page);
    if (ppn == NONE) { fifo_push(s, &s->planes[x->pl].stalled, t); return 0; }
    x = &s->tx[t]; /* the pool may not move here, but keep the pointer fresh */
    x->ppn = ppn;
    x->page = page;
    x->placed = 1;
    map_page(s, x->lpn, ppn);
    gc_check(s, x->pl); /* after the mapping: the block just filled may be the victim */
    return 1;
}

/* (gc_check: the plane has no victim and fewer free blocks than the threshold) */
void gc_start(fl_sim *s, uint32_t pl)
{
    plane_t *p = &s->planes[pl];
    uint32_t base = pl * (uint32_t)s->B;
    int32_t best = -1;
    uint32_t bestv = 0x7FFFFFFF;
    for (int b = 0; b < s->B; b++) {
        if (s->blk_state[base + b] == BLK_FULL && s->blk_valid[base + b] < bestv) {
            bestv = s->blk_valid[base + b];
            best = b;
            if (bestv == 0) break;
        }
    }
    if (best < 0 || bestv >= (uint32_t)s->G) return; /* nothing to gain: the plane is full of valid data */
    uint32_t gb = base + (uint32_t)best;
    s->blk_state[gb] = BLK_VICTIM;
    p->victim = best;
    p->pending = 0;
    int owner = s->blk_owner[gb];
    for (int g = 0; g < s->G; g++) {
        uint32_t ppn = gb * (uint32_t)s->G + (uint32_t)g;
        if (!page_valid(s, ppn)) continue;
        int32_t t = tx_alloc(s);
        tx_t *x = &s->tx[t];
        x->kind = TX_GCREAD; x->stream = (uint8_t)owner; x->ppn = ppn; x->lpn = p2l_get(s, ppn);
        x->pl = pl; x->page = (uint32_t)g; x->bytes = (uint32_t)s->c.page_size; x->req = -1;
        p->pending++;
        enqueue_tx(s, t, Q_GCR);
    }
    if (p->pending == 0) {
        int32_t t = tx_alloc(s);
        tx_t *x = &s->tx[t];
        x->kind = TX_ERASE; x->stream = (uint8_t)owner; x->ppn = gb * (uint32_t)s->G; x->pl = pl; x->req = -1;
        enqueue_tx(s, t, Q_ER);
    }
}

/* ------------------------------------------------------------------ scheduling */

static void mark_dirty(fl_sim *s, int c)
{
    if (!s->dirty[c]) { s->dirty[c] = 1; s->dirty_list[s->n_dirty++] = c; }
}

void flush_dirty(fl_sim *s)
{
    while (s->n_dirty) {
        int c = s->dirty_list[--s->n_dirty];
        s->dirty[c] = 0;
        channel_kick(s, c);
    }
}

void enqueue_tx(fl_sim *s, int32_t t, int q)
{
    tx_t *x = &s->tx[t];
    uint32_t u = unit_of_plane(s, x->pl);
    unit_t *un = &s->units[u];
    x->dp = (uint32_t)die_of_plane(s, x->pl) << 16 | x->page;
    x->pid = (uint8_t)plane_in_die(s, x->pl);
    x->mslot = (uint16_t)mpf_slot(x->dp, x->pid);
    if (x->kind <= TX_CWRITE) {
        if (un->busy && un->active_stream != x->stream) s->streams[x->stream].st.conflicts++;
    } else {
        un->gc_ops++;
    }
    fifo_push(s, &un->q[q], t);
    if (un->wn[q] < MP_SCAN) {   /* in the queue's window */
        un->wn[q]++;
        mpf_inc(&s->mpf[(size_t)u * MPF_SLOTS + x->mslot]);
    } else if (un->wnext[q] < 0) {
        un->wnext[q] = t;
    }
    un->qmask |= 1u << q;
    if (un->stuck && busy_can_issue(s, un)) un->stuck = 0; /* else service_busy_chip would not issue */
    ready_update(s, un);
    /* a busy bus stays busy until its own event: a kick before then would do nothing */
    int c = channel_of_unit(s, u);
    if (s->ch[c].busy) return;
    mark_dirty(s, c);
    if (!s->batching) flush_dirty(s);
}

static void bus_start(fl_sim *s, int c, int phase, int32_t unit, int32_t t, int64_t dur)
{
    channel_t *ch = &s->ch[c];
    ch->busy = 1; ch->phase = phase; ch->unit = unit; ch->tx = t; ch->start = s->now;
    bus_push(s, s->now + dur, c);
}

void start_dataout(fl_sim *s, int c, int32_t t)
{
    bus_start(s, c, PH_DATAOUT, (int32_t)unit_of_plane(s, s->tx[t].pl), t, xfer_ns(s, s->tx[t].bytes));
}

/* Transaction i, in the window of chip u's queue q, left the queue: the first one beyond the window,
 * if any, joins it. */
static inline void window_out(fl_sim *s, uint32_t u, unit_t *un, int q, int32_t i)
{
    uint8_t *cnt = &s->mpf[(size_t)u * MPF_SLOTS];
    mpf_dec(&cnt[s->tx[i].mslot]);
    int32_t j = un->wnext[q];
    if (j >= 0) {
        un->wnext[q] = s->tx[j].next;
        mpf_inc(&cnt[s->tx[j].mslot]);
    } else {
        un->wn[q]--;
    }
}

/* Issue one command to chip u from queue q1 (then q2): transactions on the die of q1's head, on
 * distinct planes, with the head's page offset (MQSim's TSU_Base::issue_command_to_chip). */
static void issue(fl_sim *s, uint32_t u, int q1, int q2)
{
    unit_t *un = &s->units[u];
    tx_t *h = &s->tx[un->q[q1].head];
    uint32_t dp = h->dp;
    int64_t susp = 0;
    if (un->busy) {
        /* the chip is in a program/erase (service_busy_chip checked that it may be suspended): set
         * it aside, suspended on its own die (at a cost), running on alongside on another die */
        un->s_kind = un->kind;
        un->s_n = un->n_active;
        memcpy(un->s_active, un->active, sizeof(un->active)); /* whole arrays: a fixed-size copy, inlined */
        un->in_array = 0;
        if (s->tx[un->active[0]].dp >> 16 == dp >> 16) {
            un->s_state = SUSP_HELD;
            un->s_remaining = un->array_done_at - s->now;
            if (un->kind == TX_WRITE) { susp = s->susp_cmd_ns + s->c.susp_program_ns; s->program_suspends++; }
            else { susp = s->susp_cmd_ns + s->c.susp_erase_ns; s->erase_suspends++; }
        } else {
            un->s_state = SUSP_BG;
            un->s_done_at = un->array_done_at;
        }
    }
    /* q1's head starts the command; then, if a transaction on another plane in the chip's queue
     * windows (the first MP_SCAN of each queue) may have its die and page offset (the counts by a
     * hash of them), the first MP_SCAN transactions of q1 and of q2 are looked at for partners. A
     * partner needs the same die and page offset (one test, false for most transactions:
     * predictable) and a plane not yet taken. */
    fifo_t *f = &un->q[q1];
    unsigned planes = 1u << h->pid;
    int n = 1, P = s->P;
    un->active[0] = f->head;
    f->head = h->next;
    if (f->head < 0) { f->tail = -1; un->qmask &= ~(1u << q1); }
    window_out(s, u, un, q1, un->active[0]);
    h->next = -1;
    int other = 0;            /* whether a transaction of another plane may be queued */
    if (P == 2) other = *mpf_at(s, u, dp, h->pid ^ 1u) != 0;
    else
        for (int p = 0; p < P; p++) other |= p != h->pid && *mpf_at(s, u, dp, (uint32_t)p);
    if (!other) P = 1;        /* no partner is queued */
    int qs[2] = {q1, q2};
    for (int k = 0; k < 2 && n < P; k++) {
        if (qs[k] < 0) continue;
        f = &un->q[qs[k]];
        int32_t prev = -1, i = f->head;
        int scanned = k == 0;   /* q1's head was the first looked at */
        while (i >= 0 && n < P && scanned++ < MP_SCAN) {
            tx_t *x = &s->tx[i];
            int32_t nx = x->next;
            if (x->dp == dp && !(planes & (1u << x->pid))) {
                planes |= 1u << x->pid;
                un->active[n++] = i;
                if (prev < 0) f->head = nx; else s->tx[prev].next = nx;
                if (f->tail == i) f->tail = prev;
                window_out(s, u, un, qs[k], i);
                x->next = -1;
            } else {
                prev = i;
            }
            i = nx;
        }
        if (f->head < 0) un->qmask &= ~(1u << qs[k]);
    }
    un->n_active = n;
    static const uint8_t kind_of_op[] = {TX_READ, TX_WRITE, TX_ERASE};
    int k = op_of_kind[h->kind];   /* (h is active[0]) */
    un->kind = kind_of_op[k];
    int64_t dur = s->cmd_ns[k][n], op = s->op_ns[k];
    if (k == 1)
        for (int i = 0; i < n; i++) dur += xfer_ns(s, s->tx[un->active[i]].bytes);
    dur += susp;
    if (s->now + dur + op > un->exp_finish) un->exp_finish = s->now + dur + op;
    if (!un->busy) un->start = s->now;
    un->busy = 1;
    chip_changed(s, un);
    un->fg_active = 1;
    un->pending_out = 0;
    un->active_stream = h->stream;
    bus_start(s, channel_of_unit(s, u), PH_CMD, (int32_t)u, -1, dur);
}

/* The highest non-empty queue of base..base + FL_PRIO - 1 (the highest priority), -1 none. */
static inline int user_queue(const unit_t *un, int base)
{
    uint32_t m = (un->qmask >> base) & ((1u << FL_PRIO) - 1);
    return m ? base + 31 - __builtin_clz(m) : -1;
}

/* The highest non-empty queue of base..after - 1, -1 none. */
static inline int next_user_queue(const unit_t *un, int base, int after)
{
    uint32_t m = (un->qmask >> base) & ((1u << (after - base)) - 1);
    return m ? base + 31 - __builtin_clz(m) : -1;
}

/* A busy chip (MQSim's TSU does not skip them): a read may be issued when the chip is in the array
 * operation of a program (erase), program (erase) suspension is on, no command is suspended or
 * running beside it, and the chip's expected finish is at least the preferred time away; else a
 * program when the chip is in an erase (MQSim's service_read/write_transaction, same queue choice
 * as an idle chip under non-preemptive GC). */
static int service_busy_chip(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    if (!un->in_array || un->s_state != SUSP_NONE || un->kind == TX_READ) return 0;
    int64_t left = un->exp_finish - s->now;
    int ur = user_queue(un, Q_UR), uw = user_queue(un, Q_UW);
    int r1 = -1, r2 = -1;
    if (un->q[Q_GCR].head >= 0) { r1 = Q_GCR; r2 = ur; }
    else if (un->q[Q_GCW].head < 0 && un->q[Q_ER].head < 0 && ur >= 0) { r1 = ur; r2 = next_user_queue(un, Q_UR, ur); }
    if (r1 >= 0 && (un->kind == TX_WRITE ? s->c.susp_program && left >= s->c.susp_program_read_min_ns
                                         : s->c.susp_erase && left >= s->c.susp_erase_read_min_ns)) {
        issue(s, u, r1, r2);
        return 1;
    }
    if (un->kind != TX_ERASE || !s->c.susp_erase || left < s->c.susp_erase_write_min_ns) return 0;
    if (un->q[Q_GCW].head >= 0) { issue(s, u, Q_GCW, uw); return 1; }
    if (un->q[Q_ER].head < 0 && uw >= 0) { issue(s, u, uw, next_user_queue(un, Q_UW, uw)); return 1; }
    return 0;
}

/* MQSim's TSU_Priority_OutOfOrder with non-preemptive GC: read, else write, else erase. */
static FL_ALWAYS_INLINE int service_chip(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    if (un->busy) {
        if ((s->c.susp_program || s->c.susp_erase) && service_busy_chip(s, u)) return 1;
        un->stuck = 1;
        ready_update(s, un);
        return 0;
    }
    int ur = user_queue(un, Q_UR), uw = user_queue(un, Q_UW);
    /* reads */
    if (un->q[Q_GCR].head >= 0) { issue(s, u, Q_GCR, ur); return 1; }
    if (un->q[Q_GCW].head < 0 && un->q[Q_ER].head < 0 && ur >= 0) {
        issue(s, u, ur, next_user_queue(un, Q_UR, ur)); return 1;
    }
    /* writes */
    if (un->q[Q_GCW].head >= 0) { issue(s, u, Q_GCW, uw); return 1; }
    if (un->q[Q_ER].head < 0 && uw >= 0) { issue(s, u, uw, next_user_queue(un, Q_UW, uw)); return 1; }
    /* erases */
    if (un->q[Q_ER].head >= 0) { issue(s, u, Q_ER, -1); return 1; }
    return 0;
}

void channel_kick_run(fl_sim *s, int c)
{
    channel_t *ch = &s->ch[c];
    int32_t t = fifo_pop(s, &ch->wait_user);
    if (t < 0) t = fifo_pop(s, &ch->wait_gc);
    if (t >= 0) { start_dataout(s, c, t); return; }
    /* chips in round-robin order from ch->rr; one with empty queues or stuck cannot issue
     * (service_chip would do nothing), so only its turn passes: with none that can, the round
     * robin would come back to where it started */
    if (!ch->n_ready) return;
    int W = s->c.chips_per_channel, k = ch->rr;
    if (W <= 64) {
        /* the chips that may issue, from the round robin's position on (bit b: chip k + b mod W) */
        uint64_t m = ch->rmask, r = (m >> k | (m << 1) << (W - 1 - k)) & s->chip_mask;
        for (; r; r &= r - 1) {
            int j = k + __builtin_ctzll(r);
            if (j >= W) j -= W;
            if (service_chip(s, (uint32_t)(c * W + j))) { ch->rr = j + 1 == W ? 0 : j + 1; return; }
        }
        return;
    }
    unit_t *un0 = &s->units[c * W];
    for (int i = 0; i < W; i++) {
        int j = k;
        k = k + 1 == W ? 0 : k + 1;
        /* service_chip returns 1 when it issued a command, which took the bus */
        if (un0[j].qmask && !un0[j].stuck && service_chip(s, (uint32_t)(c * W + j))) break;
    }
    ch->rr = k;
}

/* ------------------------------------------------------------------ a host page's transactions */

static int plane_has_room(const fl_sim *s, uint32_t pl, int stream)
{
    return s->data_wf[(size_t)pl * s->c.n_streams + stream].blk >= 0 || s->planes[pl].n_free > 1;
}

/* The plane of a host write: CWDP over the stream's units (channel fastest, then chip, die, plane).
 * When that plane is full of valid data (its units took more than their share of the stream's
 * data), the next plane in the stream's CWDP sequence with room, then any plane of the device. */
static inline uint32_t cwdp_plane(const fl_sim *s, const stream_t *st, uint32_t l)
{
    uint32_t nu = (uint32_t)st->n_units, D = (uint32_t)s->D, P = (uint32_t)s->P;
    return ((uint32_t)st->units[l % nu] * D + (l / nu) % D) * P + (l / (nu * D)) % P;
}

void cwdp_build(fl_sim *s, stream_t *st)
{
    uint32_t span = (uint32_t)st->n_units * (uint32_t)s->D * (uint32_t)s->P;
    free(st->cwdp);
    st->cwdp = span <= CWDP_TABLE ? malloc(span * sizeof(uint32_t)) : NULL;
    if (st->cwdp)
        for (uint32_t l = 0; l < span; l++) st->cwdp[l] = cwdp_plane(s, st, l);
}

uint32_t write_plane(const fl_sim *s, const stream_t *st, uint32_t lpn)
{
    uint32_t nu = (uint32_t)st->n_units, D = (uint32_t)s->D, P = (uint32_t)s->P;
    int si = (int)(st - s->streams);
    uint32_t span = nu * D * P;
    for (uint32_t k = 0; k < span; k++) {
        uint32_t l = (lpn + k) % span;
        uint32_t pl = st->cwdp ? st->cwdp[l] : cwdp_plane(s, st, l);
        if (plane_has_room(s, pl, si)) return pl;
    }
    for (uint32_t pl = 0; pl < (uint32_t)s->n_planes; pl++)
        if (plane_has_room(s, pl, si)) return pl;
    return ((uint32_t)st->units[lpn % nu] * D + (lpn / nu) % D) * P + (lpn / (nu * D)) % P;
}

/* MQSim's update read: a write of part of a page whose other data is on flash first reads that
 * data from the page's old location (the write waits for it). Tracked at 4 KiB granularity: full
 * and any are the chunks the write covers wholly and at all (with pages of 4 KiB or less, bit 0
 * of full is the whole page), data_bytes the bytes it writes. */
inline void update_read_chunks(fl_sim *s, int32_t t, unsigned full, unsigned any, int64_t data_bytes, int prio)
{
    uint32_t lpn = s->tx[t].lpn, old = L2P(s, lpn);
    int64_t ps = s->c.page_size;
    unsigned prev;
    if (s->cbits) {
        prev = old == NONE ? 0 : bits_get(s->cstat, s->cbits, lpn);
        cstat_set(s, lpn, prev | any);
    } else {
        prev = old == NONE ? 0u : 1u;
    }
    if (!(prev & ~full)) return;
    int32_t r = tx_alloc(s);
    tx_t *x = &s->tx[r], *w = &s->tx[t];
    x->kind = TX_UPDREAD; x->stream = w->stream; x->lpn = lpn; x->ppn = old; x->req = -1; x->link = t;
    x->pl = fl_div(s->dGB, old);
    x->page = fl_mod(s->dG, old);
    x->bytes = (uint32_t)(ps - data_bytes > 512 ? ps - data_bytes : 512);
    w->held = 1;
    enqueue_tx(s, r, Q_UR + prio);
}

/* The chunks of a page that the byte range [lo, hi) covers wholly (*full) and at all (*any). */
static inline void range_chunks(const fl_sim *s, int64_t lo, int64_t hi, unsigned *full, unsigned *any)
{
    int64_t ps = s->c.page_size;
    *full = *any = 0;
    if (!s->cbits) { *full = (lo == 0 && hi == ps) ? 1u : 0u; *any = 1u; return; }
    if ((int64_t)s->cbits * 4096 >= ps) {
        /* the chunks cover the page (the last ends at its end): touched from lo's to (hi - 1)'s,
         * covered from the first starting at or after lo to the last ending at or before hi */
        int a0 = (int)(lo >> 12), a1 = (int)((hi - 1) >> 12);
        int f0 = (int)((lo + 4095) >> 12), f1 = hi == ps ? s->cbits - 1 : (int)(hi >> 12) - 1;
        *any = ((2u << a1) - 1) & ~((1u << a0) - 1);
        if (f1 >= f0) *full = ((2u << f1) - 1) & ~((1u << f0) - 1);
        return;
    }
    for (int k = 0; k < s->cbits; k++) {
        int64_t c0 = (int64_t)k * 4096, c1 = c0 + 4096 > ps ? ps : c0 + 4096;
        if (lo <= c0 && hi >= c1) *full |= 1u << k;
        if (lo < c1 && hi > c0) *any |= 1u << k;
    }
}

static FL_ALWAYS_INLINE void update_read(fl_sim *s, int32_t t, int64_t lo, int64_t hi, int prio)
{
    unsigned full, any;
    range_chunks(s, lo, hi, &full, &any);
    update_read_chunks(s, t, full, any, hi - lo, prio);
}

/* A read of a never-written page: as MQSim (online_create_entry_for_reads), give it a page of the
 * stream's active block in its CWDP plane (no program) and record the read part as written, so
 * that a later partial write reads it back. 0 when the plane has no room. */
static int create_read_mapping(fl_sim *s, int32_t t, const stream_t *st, int64_t lo, int64_t hi)
{
    tx_t *x = &s->tx[t];
    uint32_t lpn = x->lpn, pl = write_plane(s, st, lpn), page;
    uint32_t ppn = alloc_page(s, pl, x->stream, 0, &page);
    if (ppn == NONE) return 0;
    x->ppn = ppn; x->pl = pl; x->page = page;
    map_page(s, lpn, ppn);
    if (s->cbits) {
        unsigned any = 0;
        for (int k = 0; k < s->cbits; k++)
            if (lo < (int64_t)(k + 1) * 4096 && hi > (int64_t)k * 4096) any |= 1u << k;
        cstat_set(s, lpn, any);
    }
    gc_check(s, pl);
    return 1;
}

/* A user write transaction of page lp ([lo, hi) of the request), placed and queued (after its
 * update read, if it needs one). */
static FL_ALWAYS_INLINE void write_tx_in(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi,
                                         int prio)
{
    int64_t ps = s->c.page_size;
    int32_t t = tx_alloc(s);
    tx_t *x = &s->tx[t];
    x->req = r; x->lpn = (uint32_t)lp; x->bytes = (uint32_t)(hi - lo); x->stream = (uint8_t)s->rq[r].stream;
    x->kind = TX_WRITE;
    x->pl = write_plane(s, st, (uint32_t)lp);
    s->host_page_writes++;
    update_read(s, t, lo - (int64_t)lp * ps, hi - (int64_t)lp * ps, prio);
    if (place_write(s, t) && !s->tx[t].held) enqueue_tx(s, t, Q_UW + prio);
}

/* A user read transaction of page lp ([lo, hi) of the request, bytes of it from flash), queued. */
static FL_ALWAYS_INLINE void read_tx_in(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi,
                                        uint32_t bytes, int prio)
{
    int64_t ps = s->c.page_size;
    uint32_t D = (uint32_t)s->D, P = (uint32_t)s->P;
    int32_t t = tx_alloc(s);
    tx_t *x = &s->tx[t];
    x->req = r; x->lpn = (uint32_t)lp; x->bytes = bytes; x->stream = (uint8_t)s->rq[r].stream;
    uint32_t lpn = (uint32_t)lp;
    x->kind = TX_READ;
    uint32_t ppn = L2P(s, lpn);
    x->ppn = ppn;
    if (ppn != NONE) {
        x->pl = fl_div(s->dGB, ppn);
        x->page = fl_mod(s->dG, ppn);
    } else if (s->c.map_unwritten_reads
               && create_read_mapping(s, t, st, lo - (int64_t)lp * ps, hi - (int64_t)lp * ps)) {
        /* mapped now (MQSim's online_create_entry_for_reads) */
    } else {
        /* never written: read where CWDP over the stream's units would put it */
        uint32_t nu = (uint32_t)st->n_units;
        x->pl = ((uint32_t)st->units[lpn % nu] * D + (lpn / nu) % D) * P + (lpn / (nu * D)) % P;
        x->page = (lpn / (nu * D * P)) % (uint32_t)s->G;
    }
    enqueue_tx(s, t, Q_UR + prio);
}

void write_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, int prio)
{
    write_tx_in(s, r, st, lp, lo, hi, prio);
}

void read_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, uint32_t bytes, int prio)
{
    read_tx_in(s, r, st, lp, lo, hi, bytes, prio);
}

/* The transactions of request r's pages first..last, one a page, without the data cache (its loop
 * here, so that the page's transaction is made inline). */
void host_txs(fl_sim *s, int32_t r, const stream_t *st, uint64_t first, uint64_t last, int prio)
{
    const req_t *q = &s->rq[r];
    int64_t ps = s->c.page_size, off = q->off, end = q->off + q->size;
    if (q->write) {
        for (uint64_t lp = first; lp <= last; lp++) {
            int64_t lo = (int64_t)lp * ps, hi = lo + ps;
            write_tx_in(s, r, st, lp, lo < off ? off : lo, hi > end ? end : hi, prio);
        }
    } else {
        for (uint64_t lp = first; lp <= last; lp++) {
            int64_t lo = (int64_t)lp * ps, hi = lo + ps;
            if (lo < off) lo = off;
            if (hi > end) hi = end;
            read_tx_in(s, r, st, lp, lo, hi, (uint32_t)(hi - lo), prio);
        }
    }
}

/* ------------------------------------------------------------------ completions of the FTL's own */

static void finish_gc_move(fl_sim *s, uint32_t pl, int owner)
{
    plane_t *p = &s->planes[pl];
    if (--p->pending > 0) return;
    int32_t t = tx_alloc(s);
    tx_t *x = &s->tx[t];
    x->kind = TX_ERASE; x->stream = (uint8_t)owner; x->pl = pl; x->req = -1;
    x->ppn = (pl * (uint32_t)s->B + (uint32_t)p->victim) * (uint32_t)s->G;
    enqueue_tx(s, t, Q_ER);
}

/* A transaction of the FTL's own is done: an update read (its write may go on), a GC read (the
 * page moves unless the host rewrote it), a GC write, an erase (the victim block is free again,
 * and the writes that waited for a free block are placed). */
void ftl_tx_done(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    switch (x->kind) {
    case TX_UPDREAD: {
        int32_t w = x->link;
        tx_release(s, t);
        s->tx[w].held = 0;
        if (s->tx[w].placed)
            enqueue_tx(s, w, s->tx[w].kind == TX_CWRITE ? s->tx[w].wq : Q_UW + s->streams[s->tx[w].stream].prio);
        return;
    }
    case TX_GCREAD: {
        uint32_t pl = x->pl;
        int owner = x->stream;
        if (L2P(s, x->lpn) == x->ppn) {
            x->kind = TX_GCWRITE;
            if (place_write(s, t)) enqueue_tx(s, t, Q_GCW);
        } else {
            tx_release(s, t);
            finish_gc_move(s, pl, owner);
        }
        return;
    }
    case TX_GCWRITE: {
        uint32_t pl = x->pl;
        int owner = x->stream;
        s->flash_programs++;
        s->streams[owner].st.gc_moved++;
        tx_release(s, t);
        finish_gc_move(s, pl, owner);
        return;
    }
    case TX_ERASE: {
        uint32_t pl = x->pl;
        int owner = x->stream;
        plane_t *p = &s->planes[pl];
        uint32_t gb = pl * (uint32_t)s->B + (uint32_t)p->victim;
        tx_release(s, t);
        s->blk_state[gb] = BLK_FREE;
        s->free_stack[(size_t)pl * s->B + (size_t)(p->n_free++)] = (uint32_t)p->victim;
        s->units[unit_of_plane(s, pl)].free_blocks++;
        p->victim = -1;
        s->gc_runs++;
        s->erases++;
        s->streams[owner].st.gc_runs++;
        /* writes that waited for a free block */
        s->batching++;
        while (p->stalled.head >= 0 && p->n_free > 0) {
            int32_t w = fifo_pop(s, &p->stalled);
            if (!place_write(s, w)) break;
            if (!s->tx[w].held)
                enqueue_tx(s, w, s->tx[w].kind == TX_GCWRITE ? Q_GCW : s->tx[w].kind == TX_CWRITE ? s->tx[w].wq
                                 : Q_UW + s->streams[s->tx[w].stream].prio);
        }
        gc_check(s, pl);
        if (--s->batching == 0) flush_dirty(s);
        return;
    }
    }
}
