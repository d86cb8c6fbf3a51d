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

static inline int channel_of_unit(const fl_sim *s, uint32_t u) { return (int)(u / (uint32_t)s->c.chips_per_channel); }

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

/* Whether busy chip un could be suspended (or run a command beside its own) for some content of
 * its queues: service_busy_chip's tests that do not look at them. False stays false while the
 * chip's state is unchanged (the time left of its operation only shrinks). */
static inline int may_suspend(const fl_sim *s, const unit_t *un)
{
    if (!un->in_array || un->s_state != SUSP_NONE || un->kind == TX_READ) return 0;
    int64_t left = un->exp_finish - s->now;
    if (un->kind == TX_WRITE) return s->c.susp_program && left >= s->c.susp_program_read_min_ns;
    return s->c.susp_erase && (left >= s->c.susp_erase_read_min_ns || left >= s->c.susp_erase_write_min_ns);
}

/* Chip un's state changed: stuck when busy and unable to take a command whatever its queues hold. */
static inline void chip_changed(const fl_sim *s, unit_t *un)
{
    un->stuck = un->busy && !may_suspend(s, un);
}

/* ---- the event queue: events leave in (time, number) order */

/* an event numbered now (it may be inserted later: see ev_insert) */
static inline ev_t ev_make(fl_sim *s, int64_t t, int type, int arg)
{
    ev_t e = {t, s->seq++, type, arg};
    return e;
}
FL_INTERNAL void ev_insert(fl_sim *s, ev_t e);
FL_INTERNAL void ev_push(fl_sim *s, int64_t t, int type, int arg);
/* the event loop: drop the handled root event (heap[0], top_taken) if no new event replaced it */
FL_INTERNAL void ev_settle(fl_sim *s);

/* ---- FTL: a write's physical page (0: stalled until its plane frees a block); a plane's GC check;
 * the plane of a host write of lpn */
FL_INTERNAL int place_write(fl_sim *s, int32_t t);
FL_INTERNAL void gc_check(fl_sim *s, uint32_t pl);
FL_INTERNAL uint32_t write_plane(const fl_sim *s, const stream_t *st, uint32_t lpn);

/* ---- scheduling: a transaction into chip queue q; the kick of the channels touched while
 * batching (s->batching); a channel's kick (a waiting data-out, else a chip's next command); a
 * read's data-out on channel c */
FL_INTERNAL void enqueue_tx(fl_sim *s, int32_t t, int q);
FL_INTERNAL void flush_dirty(fl_sim *s);
FL_INTERNAL void channel_kick(fl_sim *s, int c);
FL_INTERNAL void start_dataout(fl_sim *s, int c, int32_t t);

/* ---- a host page's transactions for request r: the write of [lo, hi) of page lp (placed and
 * queued after its update read, if it needs one), the read of it (bytes of it from flash); the
 * update read of write t, whose chunks full / any it covers wholly / at all */
FL_INTERNAL void write_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, int prio);
FL_INTERNAL void read_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, uint32_t bytes,
                         int prio);
FL_INTERNAL void update_read_chunks(fl_sim *s, int32_t t, unsigned full, unsigned any, int64_t data_bytes, int prio);

/* ---- completion of a transaction of the FTL's own (TX_UPDREAD, TX_GCREAD, TX_GCWRITE, TX_ERASE) */
FL_INTERNAL void ftl_tx_done(fl_sim *s, int32_t t);

#endif
