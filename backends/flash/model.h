/* The flash SSD model's state (struct fl_sim and its parts) and the small helpers that all its units
 * share, at the bottom of them: the core (flash.c: construction, requests, the event loop, counters),
 * the DRAM data cache (cache.c), the FTL (ftl.c: event queue, mapping, GC, scheduling; ftl.h says
 * how the units call one another) and the preconditioning (precondition.c). Not part of the model's
 * interface (flash.h). */
#ifndef HSS_FLASH_MODEL_H
#define HSS_FLASH_MODEL_H

#include "flash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE 0xFFFFFFFFu
/* helpers of the hot path with the cache off (a request's completion, a write's update read) that
 * other paths call too: inlined in that one */
#if defined(__GNUC__)
#define FL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FL_ALWAYS_INLINE inline
#endif
/* the functions one unit of the model defines for another: not exported from the extension */
#if defined(__GNUC__)
#define FL_INTERNAL __attribute__((visibility("hidden")))
#else
#define FL_INTERNAL
#endif

/* TX_UPDREAD: the read of a page's other data before a partial-page write (read-modify-write);
 * TX_CWRITE: a data-cache write-back of a page (no request waits for it). Host-data kinds first:
 * kind <= TX_CWRITE is user traffic (conflicts are counted for it), the rest is GC. */
enum { TX_READ, TX_WRITE, TX_UPDREAD, TX_CWRITE, TX_GCREAD, TX_GCWRITE, TX_ERASE };
enum { EV_ARRIVE, EV_BUS, EV_ARRAY, EV_DRAM };
enum { PH_CMD, PH_DATAOUT };
enum { BLK_FREE, BLK_ACTIVE, BLK_FULL, BLK_VICTIM };
/* a chip's second command: a suspended one (held) or one running on another die (background) */
enum { SUSP_NONE, SUSP_HELD, SUSP_BG };
/* chip queues: user reads by priority, user writes by priority, GC reads, GC writes, erases */
enum { Q_UR = 0, Q_UW = FL_PRIO, Q_GCR = 2 * FL_PRIO, Q_GCW, Q_ER, N_Q };

typedef struct {
    int32_t next;      /* queue link */
    int32_t req;       /* request (user transactions) */
    uint32_t ppn;      /* physical page, NONE for a read of a never-written page */
    uint32_t lpn;
    uint32_t pl;       /* global plane index */
    uint32_t page;     /* page offset in its block (multi-plane commands need equal offsets) */
    uint32_t bytes;
    int32_t link;      /* TX_UPDREAD: the write waiting for it */
    /* TX_CWRITE keeps its data's timestamp (MQSim's DataTimeStamp) in req (high half) and link
     * (low half), and until it is dispatched its 4 KiB chunk masks in page (see cache_write_tx) */
    uint32_t dp;       /* die in its chip << 16 | page offset, and plane in its die (pid): cached by
                          enqueue_tx for issue() */
    uint8_t kind, stream, pid;
    uint8_t held;      /* a write waiting for its update read */
    uint8_t placed;    /* a write that has its physical page */
    uint8_t wq;        /* TX_CWRITE: its chip queue */
    uint16_t mslot;    /* queued: its slot of its chip's partner counts (mpf_slot) */
} tx_t;

typedef struct {
    int64_t arr_ns, off, size, admit_ns;
    int32_t next;
    int32_t remaining; /* its flash transactions and data-cache DRAM transfers under way, plus, for a
                          write into the cache, 1 until all its pages are absorbed */
    int32_t cur;       /* a cached write: its next page to absorb into the cache */
    uint16_t stream;
    uint8_t write;
} req_t;

typedef struct {
    int64_t t;
    uint64_t seq;
    int32_t type, arg;
} ev_t;

typedef struct { int32_t head, tail; } fifo_t;



/* a divisor fixed at construction: sh = log2(d) when d is a power of 2 (the usual geometries), so
 * that x / d and x % d are a shift and a mask instead of a division; else -1 */
typedef struct { uint32_t d; int sh; } fl_div_t;

/* A time-ordered ring of events of one kind (the earliest at head); the slot after the last holds
 * EV_NONE, so that an empty ring's head reads as later than any event. */
typedef struct { int64_t t; uint64_t seq; int32_t arg; } qev_t;
typedef struct { qev_t *r, *hp; uint32_t head, n, mask; } ring_t;   /* hp: &r[head] */

typedef struct {
    int busy, phase;
    int32_t unit, tx;
    int64_t start, busy_done;
    int rr;
    int n_ready;                   /* its chips with queued work that are not stuck (see unit_t.ready) */
    uint64_t rmask;                /* the same chips as bits (bit j: its chip j), up to 64 chips a channel */
    fifo_t wait_user, wait_gc;
} channel_t;

typedef struct {
    int busy;                      /* not idle: a command in flight (bus phase, array op or data-out),
                                      or a suspended / background one */
    int kind;                      /* TX_READ/TX_WRITE/TX_ERASE class of the active command */
    int n_active, pending_out, active_stream;
    int fg_active;                 /* the foreground command is in flight */
    int in_array;                  /* ... and in its array operation, which ends at array_done_at */
    int32_t active[FL_MAX_PLANES];
    int64_t start, busy_done;
    int64_t array_done_at;
    int64_t exp_finish;            /* MQSim's Expected_command_exec_finish_time: the latest expected end
                                      of an issued command's array operation (a resume does not move it) */
    int s_state, s_kind, s_n;      /* the suspended (SUSP_HELD) or background (SUSP_BG) command */
    int32_t s_active[FL_MAX_PLANES];
    int64_t s_remaining, s_done_at;
    fifo_t q[N_Q];
    int32_t wnext[N_Q];            /* the first transaction beyond each queue's window (its first MP_SCAN,
                                      where issue() looks for partners), -1 none */
    uint8_t wn[N_Q];               /* the transactions in each queue's window */
    uint32_t qmask;                /* bit q set when q[q] is not empty (channel_kick skips idle chips) */
    int stuck;                     /* busy and unable to take a command for what its queues hold
                                      (busy_can_issue, service_busy_chip): it stays so while its queues
                                      and state are unchanged (the time left of its operation only
                                      shrinks), so channel_kick passes over it */
    int ready;                     /* qmask && !stuck, counted in its channel's n_ready: a channel with
                                      none returns from channel_kick at once */
    int chan;
    uint64_t rbit;                 /* its bit in its channel's rmask (0 beyond 64 chips a channel) */
    int64_t gc_ops, valid_pages, free_blocks;
} unit_t;

typedef struct {
    int32_t victim;                /* local block under GC, -1 none */
    int32_t pending;               /* GC reads/writes of the victim still outstanding */
    int32_t n_free;
    fifo_t stalled;                /* writes waiting for a free block */
} plane_t;

typedef struct { int32_t blk; uint32_t wp; } frontier_t;

/* ---- DRAM data cache (MQSim's Data_Cache_Manager_Flash_Advanced / Data_Cache_Flash) */
enum { CS_CLEAN, CS_DIRTY, CS_WB };   /* clean; dirty, not written back; write-back in flight */
enum { DX_USER, DX_EVICT, DX_FILL };  /* DRAM transfer of a request; eviction read; read-cache fill */

typedef struct {
    int64_t ts;                /* MQSim's slot Timestamp: admission time of the newest data */
    uint64_t sectors;          /* the page's 512-byte sectors held */
    uint32_t lpn;
    int32_t prev, next;        /* LRU list of its partition (head = most recently used) */
    int32_t hnext;             /* hash chain; free-list link */
    uint16_t stream;
    uint8_t status;
} cslot_t;

typedef struct {
    int32_t lru_head, lru_tail, n;
    int64_t bp;                /* sectors of write-backs in flight (MQSim's back_pressure_buffer_depth) */
    int32_t wait_head, wait_tail;  /* write requests waiting for write-back room, in arrival order */
    int32_t dq_head, dq_tail;      /* DRAM transfers waiting for the memory channel */
} cpart_t;

typedef struct { uint32_t *k; uint32_t cap, n; } lset_t;  /* open-addressing set of lpn + 1 */

typedef struct { int64_t bytes; int32_t next, arg; uint16_t stream; uint8_t type; } dram_t;

typedef struct {
    int qd, prio;
    double slo_us;
    int inflight;
    fifo_t pending;                /* submitted, not yet admitted */
    int64_t last_t_ns;
    int64_t ev_pending_t;          /* time of a scheduled EV_ARRIVE, -1 none */
    int n_units;
    int32_t units[1024];
    uint32_t *cwdp;                /* the plane of each step of its CWDP sequence (write_plane), NULL when
                                      that sequence is longer than CWDP_TABLE */
    fl_stream_stats st;
} stream_t;

struct fl_sim {
    fl_config c;
    int n_units, n_planes, D, P, B, G;
    uint32_t n_blocks;
    uint64_t phys_pages, logical_pages;
    int64_t logical_bytes;
    int32_t gc_thr_blocks;
    /* timing */
    /* command (bus) times of n-plane reads, programs and erases, [op][n], and their array times, [op]
     * (op: 0 read, 1 program, 2 erase: a chip operation's array ring, see op_of_kind) */
    int64_t cmd_ns[3][FL_MAX_PLANES + 1];
    int64_t op_ns[3];
    double xfer_ns_per_byte;
    int64_t *xfer_sect;            /* xfer time of k 512-byte sectors, k = 0..page_size / 512 */
    /* FTL state */
    uint32_t *l2p;                 /* ppn + 1 per logical page, 0 = never written */
    uint64_t *l2p_wr;              /* bit k: an entry of l2p's k-th 4 KiB was written (l2p_set); L2P reads no
                                      other (each would map the zero page, and the first write replace it:
                                      two page faults where one does) */
    uint8_t *p2l;                  /* bit-packed reverse map, p2l_bits per physical page */
    int p2l_bits;
    uint8_t *cstat;                /* per logical page: which 4 KiB chunks hold data (pages > 4 KiB) */
    uint64_t *cstat_wr;            /* bit k: cstat's k-th 4 KiB was written (cstat_set) */
    int cbits;                     /* chunks per page when > 1, else 0 (no table) */
    uint16_t *blk_valid;
    uint8_t *blk_state, *blk_owner;
    uint32_t *free_stack;          /* per plane, B entries */
    frontier_t *data_wf, *gc_wf;   /* [plane * n_streams + stream] */
    plane_t *planes;
    /* where each plane is, unit << 16 | die << 8 | plane in its die, and each unit's channel:
     * table look-ups instead of divisions on every transaction's way */
    uint32_t *pl_loc;
    uint16_t *unit_ch;
    fl_div_t dG, dB, dGB;          /* pages per block, blocks per plane, pages per plane */
    int ps_sh;                     /* log2(page size) when a power of 2, else -1 */
    unit_t *units;
    /* counts of the transactions in the chips' queue windows (the first MP_SCAN of each queue) by a
     * hash of their die, page offset and plane (mpf_slot): issue() looks for
     * multi-plane partners only when one of another plane may be there */
    uint8_t *mpf;                  /* MPF_SLOTS counts a chip; one that reaches 255 stays there (mpf_inc) */
    channel_t *ch;
    uint64_t chip_mask;            /* the bits of a channel's chips in its rmask (up to 64 chips) */
    stream_t *streams;
    /* pools */
    tx_t *tx;
    int32_t tx_cap, tx_free;
    req_t *rq;
    int32_t rq_cap, rq_free, rq_live;   /* rq_live: submitted and not finished */
    /* events (see ftl.h): bus ends, array ends of reads, programs and erases in rings, the others
     * in a binary heap */
    ring_t bq, aq[3];
    int amin;                      /* the array ring whose first event is the earliest */
    const qev_t *ahp;              /* that event: aq[amin].hp */
    ev_t *heap;
    size_t heap_n, heap_cap;
    int top_taken;                 /* heap[0] is the event being handled (see heap_insert) */
    uint64_t seq;
    int64_t now;
    /* channels touched while admitting a request: kicked once all its transactions are queued */
    uint8_t *dirty;
    int32_t *dirty_list;
    int n_dirty, batching;
    /* latency log */
    double *lat, *dev_lat;     /* end-to-end (from arrival) and device (from admission) latency */
    uint16_t *lat_stream;
    size_t lat_n, lat_cap;
    /* global counters */
    int64_t host_page_writes, flash_programs, gc_runs, erases;
    int64_t program_suspends, erase_suspends;
    int64_t susp_cmd_ns;           /* ONFI suspend command: tCS + 3 tWC (MQSim's *SuspendCommandTime) */
    uint64_t rng;
    /* DRAM data cache (NULL / 0 when off) */
    int cache_wr, cache_rd, n_parts, spp;
    int64_t part_cap;              /* slots per partition */
    int64_t bp_max;                /* MQSim: one page per plane, in sectors */
    cslot_t *slots;
    int32_t slot_cap, slot_free, slot_used;
    int32_t *bucket;
    uint32_t n_buckets;
    cpart_t *parts;
    lset_t *seen;                  /* per stream: pages written since the last reset (MQSim's bloom_filter) */
    int64_t seen_reset_at;
    dram_t *dx;
    int32_t dx_cap, dx_free;
    int dram_busy, dram_turn;
    double dram_burst_ns;
    fl_cache_stats cst;
};

/* ------------------------------------------------------------------ helpers */

/* 8 bytes at b as a little-endian integer (one load on little-endian machines) */
static inline uint64_t load_le64(const uint8_t *b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
#endif
}

static inline void store_le64(uint8_t *b, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b, &v, 8);
#else
    for (int i = 0; i < 8; i++) { b[i] = (uint8_t)v; v >>= 8; }
#endif
}

static inline uint32_t p2l_get(const fl_sim *s, uint64_t p)
{
    uint64_t bit = p * (uint64_t)s->p2l_bits;
    return (uint32_t)((load_le64(s->p2l + (bit >> 3)) >> (bit & 7)) & ((1ull << s->p2l_bits) - 1));
}

static inline void p2l_set(fl_sim *s, uint64_t p, uint32_t lpn)
{
    uint64_t bit = p * (uint64_t)s->p2l_bits;
    uint8_t *b = s->p2l + (bit >> 3);
    uint64_t mask = ((1ull << s->p2l_bits) - 1) << (bit & 7);
    store_le64(b, (load_le64(b) & ~mask) | (((uint64_t)lpn << (bit & 7)) & mask));
}

static inline uint32_t bits_get(const uint8_t *a, int w, uint64_t i)
{
    uint64_t bit = i * (uint64_t)w;
    return (uint32_t)((load_le64(a + (bit >> 3)) >> (bit & 7)) & ((1ull << w) - 1));
}

static inline void bits_set(uint8_t *a, int w, uint64_t i, uint32_t v)
{
    uint64_t bit = i * (uint64_t)w;
    uint8_t *b = a + (bit >> 3);
    uint64_t mask = ((1ull << w) - 1) << (bit & 7);
    store_le64(b, (load_le64(b) & ~mask) | (((uint64_t)v << (bit & 7)) & mask));
}

/* multi-plane partners are looked for among the first MP_SCAN transactions of a queue (MQSim scans
 * whole queues, which under deep queues costs time for rare matches: see docs/flash-model.md) */
#define MP_SCAN 16
#define MPF_BITS 9
#define MPF_SLOTS (1 << MPF_BITS)
/* the slot in a chip's partner counts of the transactions of die and page offset dp (tx_t.dp) and
 * plane pid, shared with any other key of the same hash */
static inline uint32_t mpf_slot(uint32_t dp, uint32_t pid)
{
    return ((dp << 3 | pid) * 0x9E3779B1u) >> (32 - MPF_BITS);
}
static inline uint8_t *mpf_at(const fl_sim *s, uint32_t u, uint32_t dp, uint32_t pid)
{
    return &s->mpf[(size_t)u * MPF_SLOTS + mpf_slot(dp, pid)];
}
/* a count up or down; one that reached 255 stays there ("may be queued" for good) */
static inline void mpf_inc(uint8_t *c) { *c += *c != 255; }
static inline void mpf_dec(uint8_t *c) { *c -= *c != 255; }

/* The l2p table stores ppn + 1 (0 = never written), so that a fresh table is calloc'ed memory:
 * untouched parts of a large device cost neither time nor resident memory. A 4 KiB of it that was
 * never written is not read (l2p_wr), so that its first access, a write, faults in one page. */
static inline uint32_t L2P(const fl_sim *s, uint64_t lpn)
{
    uint64_t k = lpn >> 10;
    return (s->l2p_wr[k >> 6] >> (k & 63) & 1) ? s->l2p[lpn] - 1u : NONE;
}
static inline void l2p_set(fl_sim *s, uint64_t lpn, uint32_t ppn)
{
    uint64_t k = lpn >> 10;
    s->l2p_wr[k >> 6] |= 1ull << (k & 63);
    s->l2p[lpn] = ppn + 1;
}

/* chunk bits v of logical page lpn into cstat (bits_set, a read-modify-write of 8 bytes): the
 * first write into each 4 KiB of it is made a write access (an atomic or of 0, which changes
 * nothing), so that it faults in one page, not the zero page and then a copy (the 8 bytes reach
 * into the next 4 KiB for 7 in 4096 of the pages, which then may fault twice) */
static inline void cstat_set(fl_sim *s, uint64_t lpn, uint32_t v)
{
    uint64_t byte = lpn * (uint64_t)s->cbits >> 3, k = byte >> 12;
    if (!(s->cstat_wr[k >> 6] >> (k & 63) & 1)) {
        s->cstat_wr[k >> 6] |= 1ull << (k & 63);
        __atomic_fetch_or(&s->cstat[byte], (uint8_t)0, __ATOMIC_RELAXED);
    }
    bits_set(s->cstat, s->cbits, lpn, v);
}

static inline fl_div_t fl_div_make(uint32_t d)
{
    fl_div_t v = {d, -1};
    if (!(d & (d - 1)))
        for (v.sh = 0; (1u << v.sh) < d; v.sh++) {}
    return v;
}
static inline uint32_t fl_div(fl_div_t v, uint32_t x) { return v.sh >= 0 ? x >> v.sh : x / v.d; }
static inline uint32_t fl_mod(fl_div_t v, uint32_t x) { return v.sh >= 0 ? x & (v.d - 1) : x % v.d; }

static inline uint32_t unit_of_plane(const fl_sim *s, uint32_t pl) { return s->pl_loc[pl] >> 16; }

static inline void *grow(void *p, size_t elem, int32_t *cap, int32_t need)
{
    int32_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * elem);
    if (!q) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    *cap = n;
    return q;
}

static inline int32_t tx_alloc(fl_sim *s)
{
    if (s->tx_free < 0) {
        int32_t old = s->tx_cap;
        s->tx = grow(s->tx, sizeof(tx_t), &s->tx_cap, old + 1);
        for (int32_t i = s->tx_cap - 1; i >= old; i--) { s->tx[i].next = s->tx_free; s->tx_free = i; }
    }
    int32_t i = s->tx_free;
    s->tx_free = s->tx[i].next;
    memset(&s->tx[i], 0, sizeof(tx_t));
    s->tx[i].next = -1;
    return i;
}

static inline void tx_release(fl_sim *s, int32_t i) { s->tx[i].next = s->tx_free; s->tx_free = i; }

#endif
