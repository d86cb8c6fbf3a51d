/* The flash SSD model's FTL in MQSim's sense (ftl.c): the mapping and page placement, greedy GC and
 * the scheduling of flash transactions on the chips and channels (MQSim's TSU), with the event queue
 * that they and the units above share; and the making of a host page's read or write transactions.
 * It is the lowest unit of the model: the core (flash.c: requests, their admission and completion,
 * the event loop) and the DRAM data cache (cache.c) hand it transactions, and it calls neither. The
 * core handles the events (a bus phase's or an array operation's end) and routes each finished
 * transaction: a host one to itself, a write-back to the cache, one of the FTL's own (update read,
 * GC, erase) back here (ftl_tx_done). Calls run flash.c -> cache.c -> ftl.c, flash.c -> ftl.c and
 * precondition.c -> ftl.c, and all units use the model's state (model.h). */
#ifndef HSS_FLASH_FTL_H
#define HSS_FLASH_FTL_H

#include "model.h"

/* ---- small helpers, inlined where the units use them */

static inline int channel_of_unit(const fl_sim *s, uint32_t u) { return s->unit_ch[u]; }

/* physical page ppn holds its logical page's current data */
static inline int page_valid(const fl_sim *s, uint32_t ppn)
{
    uint32_t lpn = p2l_get(s, ppn);
    return lpn < s->logical_pages && L2P(s, lpn) == ppn;
}

/* transaction FIFOs (chip queues, a channel's waiting data-outs, a plane's stalled writes) */
static inline void fifo_push(fl_sim *s, fifo_t *f, int32_t i)
{
    s->tx[i].next = -1;
    if (f->tail < 0) f->head = i; else s->tx[f->tail].next = i;
    f->tail = i;
}

static inline int32_t fifo_pop(fl_sim *s, fifo_t *f)
{
    int32_t i = f->head;
    if (i >= 0) { f->head = s->tx[i].next; if (f->head < 0) f->tail = -1; }
    return i;
}

/* Whether service_busy_chip would issue a command to busy chip un now, for what its queues hold: a
 * read (a GC read, else a user read when no GC write or erase waits) for which its program (erase)
 * may be suspended, else, in an erase that may be suspended for a write, a GC write or a user write
 * (when no erase waits). False stays false while its queues and state are unchanged (the time left
 * of its operation only shrinks), so the chip is passed over until they change. */
#define QM_UR (((1u << FL_PRIO) - 1) << Q_UR)
#define QM_UW (((1u << FL_PRIO) - 1) << Q_UW)
static inline int busy_can_issue(const fl_sim *s, const unit_t *un)
{
    if (!un->in_array || un->s_state != SUSP_NONE || un->kind == TX_READ) return 0;
    uint32_t m = un->qmask;
    int64_t left = un->exp_finish - s->now;
    int rd = (m >> Q_GCR & 1u) || (!(m >> Q_GCW & 1u) && !(m >> Q_ER & 1u) && (m & QM_UR));
    if (un->kind == TX_WRITE) return rd && s->c.susp_program && left >= s->c.susp_program_read_min_ns;
    if (!s->c.susp_erase) return 0;
    if (rd && left >= s->c.susp_erase_read_min_ns) return 1;
    return left >= s->c.susp_erase_write_min_ns && ((m >> Q_GCW & 1u) || (!(m >> Q_ER & 1u) && (m & QM_UW)));
}

/* Chip un's queues or stuck flag changed: count it in its channel's chips that may issue. */
static inline void ready_update(fl_sim *s, unit_t *un)
{
    int r = un->qmask && !un->stuck;
    if (r != un->ready) {
        channel_t *ch = &s->ch[un->chan];
        un->ready = r;
        ch->n_ready += r ? 1 : -1;
        ch->rmask ^= un->rbit;
    }
}

/* Chip un's state changed: stuck when busy and unable to take a command for what its queues hold. */
static inline void chip_changed(fl_sim *s, unit_t *un)
{
    un->stuck = un->busy && !busy_can_issue(s, un);
    ready_update(s, un);
}

/* the chip operation of each transaction kind: 0 read, 1 program, 2 erase (its array ring) */
static const uint8_t op_of_kind[] = {[TX_READ] = 0, [TX_WRITE] = 1, [TX_UPDREAD] = 0, [TX_CWRITE] = 1, [TX_GCREAD] = 0,
                                     [TX_GCWRITE] = 1, [TX_ERASE] = 2};

/* ---- the event queue: events leave in (time, number) order. Keys are unique, so any correct
 * priority queue hands them out in the same order; the next event is the earliest of five queues'
 * first ones. Array operations of one kind (read, program, erase) take the same time, so their ends,
 * numbered as they start, come in time order: each kind has a FIFO ring. Bus ends, half of all
 * events and at most one per channel, are placed in a ring from its back (a new one is due after
 * most of those there). The others (a resumed operation's end, arrivals, DRAM transfers) wait in a
 * binary heap, whose event being handled stays at its root until the handler inserts one there
 * (which takes its place); the event loop (fl_run_until) drops it otherwise. */

static const qev_t EV_NONE = {INT64_MAX, UINT64_MAX, 0};

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 ev_wide;
/* one 128-bit comparison (times are never negative): no branch on equal times */
static inline int key_less(int64_t at, uint64_t as, int64_t bt, uint64_t bs)
{
    return ((ev_wide)(uint64_t)at << 64 | as) < ((ev_wide)(uint64_t)bt << 64 | bs);
}
#else
static inline int key_less(int64_t at, uint64_t as, int64_t bt, uint64_t bs)
{
    return at < bt || (at == bt && as < bs);
}
#endif

/* an event numbered now (it may be inserted later) */
static inline ev_t ev_make(fl_sim *s, int64_t t, int type, int arg)
{
    ev_t e = {t, s->seq++, type, arg};
    return e;
}
/* an event other than a bus or array end into the heap */
FL_INTERNAL void heap_insert(fl_sim *s, ev_t e);
/* the heap's root was handled and nothing took its place: remove it */
FL_INTERNAL void heap_settle(fl_sim *s);
/* a full ring doubled */
FL_INTERNAL void ring_grow(ring_t *q);
/* event queue set-up (0, or -1 out of memory) and release */
FL_INTERNAL int ev_init(fl_sim *s);
FL_INTERNAL void ev_free(fl_sim *s);

/* a bus end into its ring, from the back */
static inline void bus_push(fl_sim *s, int64_t t, int c)
{
    ring_t *q = &s->bq;   /* room for one per channel and the end marker (ev_init): never full */
    uint64_t seq = s->seq++;
    uint32_t m = q->mask, i = (q->head + q->n) & m;
    qev_t *r = q->r;
    /* its number is above those of all the events there: it goes after those due by t, so before
     * them all when due before the first (a read's command, the shortest phase: at the front, the
     * end marker staying where it is) */
    if (t < q->hp->t) {
        q->head = (q->head - 1) & m;
        q->hp = &r[q->head];
        q->hp->t = t; q->hp->seq = seq; q->hp->arg = c;
        q->n++;
        return;
    }
    for (uint32_t k = q->n; k > 0; k--) {
        uint32_t p = (i - 1) & m;
        if (t >= r[p].t) break;
        r[i] = r[p];
        i = p;
    }
    r[i].t = t; r[i].seq = seq; r[i].arg = c;
    q->n++;
    r[(q->head + q->n) & m] = EV_NONE;
}

/* the end of chip u's array operation of kind k (0 read, 1 program, 2 erase), due at t = now + the
 * operation's time: after every end of that kind queued */
static inline void array_push(fl_sim *s, int k, int64_t t, int u)
{
    ring_t *q = &s->aq[k];
    if (q->n + 1 > q->mask) { ring_grow(q); s->ahp = s->aq[s->amin].hp; }
    qev_t *r = &q->r[(q->head + q->n++) & q->mask];
    r->t = t; r->seq = s->seq++; r->arg = u;
    q->r[(q->head + q->n) & q->mask] = EV_NONE;
    /* (its number is above that of any event queued) */
    if (q->n == 1 && t < s->ahp->t) { s->amin = k; s->ahp = q->hp; }
}

/* the array ring whose first event is the earliest (after one left) */
static inline int array_min(const fl_sim *s)
{
    const qev_t *a = s->aq[0].hp, *b = s->aq[1].hp, *c = s->aq[2].hp;
    int k = key_less(b->t, b->seq, a->t, a->seq);
    if (k) a = b;
    return key_less(c->t, c->seq, a->t, a->seq) ? 2 : k;
}

/* an arrival, a DRAM transfer or a resumed operation's end, numbered now, into the heap */
static inline void ev_push(fl_sim *s, int64_t t, int type, int arg) { heap_insert(s, ev_make(s, t, type, arg)); }

/* ---- FTL: a write's physical page (0: stalled until its plane frees a block); a plane's GC check;
 * the plane of a host write of lpn */
FL_INTERNAL int place_write(fl_sim *s, int32_t t);
FL_INTERNAL void gc_start(fl_sim *s, uint32_t pl);
static inline void gc_check(fl_sim *s, uint32_t pl)
{
    const plane_t *p = &s->planes[pl];
    if (p->victim < 0 && p->n_free < s->gc_thr_blocks) gc_start(s, pl);
}
FL_INTERNAL uint32_t write_plane(const fl_sim *s, const stream_t *st, uint32_t lpn);
/* the stream's table of its CWDP sequence, after its units changed (none, and write_plane computes
 * each step, when the sequence is longer than CWDP_TABLE or out of memory) */
#define CWDP_TABLE 4096
FL_INTERNAL void cwdp_build(fl_sim *s, stream_t *st);

/* ---- scheduling: a transaction into chip queue q; the kick of the channels touched while
 * batching (s->batching); a channel's kick (a waiting data-out, else a chip's next command); a
 * read's data-out on channel c */
FL_INTERNAL void enqueue_tx(fl_sim *s, int32_t t, int q);
FL_INTERNAL void flush_dirty(fl_sim *s);
FL_INTERNAL void channel_kick_run(fl_sim *s, int c);
static inline void channel_kick(fl_sim *s, int c)
{
    const channel_t *ch = &s->ch[c];
    /* nothing to do (most kicks): a busy bus, no waiting data-out and no chip that may issue */
    if (ch->busy || (!ch->n_ready && ch->wait_user.head < 0 && ch->wait_gc.head < 0)) return;
    channel_kick_run(s, c);
}
FL_INTERNAL void start_dataout(fl_sim *s, int c, int32_t t);

/* ---- a host page's transactions for request r: the write of [lo, hi) of page lp (placed and
 * queued after its update read, if it needs one), the read of it (bytes of it from flash); the
 * update read of write t, whose chunks full / any it covers wholly / at all */
FL_INTERNAL void write_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, int prio);
FL_INTERNAL void read_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, uint32_t bytes,
                         int prio);
/* the transactions of request r's pages first..last without the data cache */
FL_INTERNAL void host_txs(fl_sim *s, int32_t r, const stream_t *st, uint64_t first, uint64_t last, int prio);
FL_INTERNAL void update_read_chunks(fl_sim *s, int32_t t, unsigned full, unsigned any, int64_t data_bytes, int prio);

/* ---- completion of a transaction of the FTL's own (TX_UPDREAD, TX_GCREAD, TX_GCWRITE, TX_ERASE) */
FL_INTERNAL void ftl_tx_done(fl_sim *s, int32_t t);

#endif
