/* The flash SSD model's simulation core; see flash.h for what it models and docs/flash-model.md for
 * the modelling choices. Timing follows MQSim's (CMU-SAFARI/MQSim, FAST'18) semantics by design:
 * - a chip accepts a new command only when idle (no die busy, no read data waiting to go out), and
 *   a command targets one die with up to planes_per_die transactions on distinct planes and the
 *   same page offset (multi-plane);
 * - the channel bus carries command/address cycles and data-in (writes) and data-out (reads); the
 *   array operation (read, program, erase) holds only the chip; a read completes when its data
 *   has crossed the bus, a write when the program finishes;
 * - when the bus frees, waiting read data-outs go first (user before GC), then chips are polled
 *   round-robin; a chip serves GC reads/writes/erases before user transactions (non-preemptive
 *   GC), user reads before user writes, and higher priority classes first;
 * - a plane starts GC when its free blocks fall below the threshold: greedy victim (fewest valid
 *   pages), valid pages read out and programmed into the GC frontier of the same plane, erase;
 * - with program/erase suspension on (MQSim's TSU_Priority_OutOfOrder / NVM_PHY_ONFI_NVDDR2 with
 *   their fall-through and bookkeeping bugs fixed, see docs/flash-model.md): a read finding its chip
 *   in a program (erase) array operation, or a program finding it in an erase, with no command
 *   already suspended and at least the preferred time of the operation left (reckoned from the
 *   chip's expected finish, which is not moved by a resume), is issued at once. On the operation's
 *   die the operation is suspended: the new command's bus phase first carries the suspend command
 *   and the suspend time, and the operation resumes with its remaining time when the chip is idle
 *   again. On another die it runs on alongside (die interleaving, no suspend cost);
 * - with the DRAM data cache on (MQSim's Data_Cache_Manager_Flash_Advanced): writes absorbed in DRAM
 *   and written back under MQSim's back pressure, read hits served from DRAM, one DRAM channel with
 *   MQSim's access-time estimate (see the "DRAM data cache" section below).
 * Time is kept in integer nanoseconds. */
#include "flash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE 0xFFFFFFFFu
/* helpers shared by the uncached and the data-cache paths (a request's admission and completion,
 * update reads) stay inlined in the uncached one, the hot path with the cache off */
#if defined(__GNUC__)
#define FL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FL_ALWAYS_INLINE inline
#endif
/* multi-plane partners are looked for among the first MP_SCAN transactions of a queue (MQSim scans
 * whole queues, which under deep queues costs time for rare matches: see docs/flash-model.md) */
#define MP_SCAN 16

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
    uint16_t die;      /* die in its chip and plane in its die, cached by enqueue_tx for issue() */
    uint8_t kind, stream, pid;
    uint8_t held;      /* a write waiting for its update read */
    uint8_t placed;    /* a write that has its physical page */
    uint8_t wq;        /* TX_CWRITE: its chip queue */
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

typedef struct {
    int busy, phase;
    int32_t unit, tx;
    int64_t start, busy_done;
    int rr;
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
    uint32_t qmask;                /* bit q set when q[q] is not empty (channel_kick skips idle chips) */
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
    int64_t cmd_read[FL_MAX_PLANES + 1], cmd_prog[FL_MAX_PLANES + 1], cmd_erase[FL_MAX_PLANES + 1];
    double xfer_ns_per_byte;
    int64_t *xfer_sect;            /* xfer time of k 512-byte sectors, k = 0..page_size / 512 */
    /* FTL state */
    uint32_t *l2p;                 /* ppn + 1 per logical page, 0 = never written */
    uint8_t *p2l;                  /* bit-packed reverse map, p2l_bits per physical page */
    int p2l_bits;
    uint8_t *cstat;                /* per logical page: which 4 KiB chunks hold data (pages > 4 KiB) */
    int cbits;                     /* chunks per page when > 1, else 0 (no table) */
    uint16_t *blk_valid;
    uint8_t *blk_state, *blk_owner;
    uint32_t *free_stack;          /* per plane, B entries */
    frontier_t *data_wf, *gc_wf;   /* [plane * n_streams + stream] */
    plane_t *planes;
    unit_t *units;
    channel_t *ch;
    stream_t *streams;
    /* pools */
    tx_t *tx;
    int32_t tx_cap, tx_free;
    req_t *rq;
    int32_t rq_cap, rq_free;
    ev_t *heap;
    size_t heap_n, heap_cap;
    int top_taken;                 /* heap[0] is the event being handled (see ev_push) */
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

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

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

static uint32_t p2l_get(const fl_sim *s, uint64_t p)
{
    uint64_t bit = p * (uint64_t)s->p2l_bits;
    return (uint32_t)((load_le64(s->p2l + (bit >> 3)) >> (bit & 7)) & ((1ull << s->p2l_bits) - 1));
}

static void p2l_set(fl_sim *s, uint64_t p, uint32_t lpn)
{
    uint64_t bit = p * (uint64_t)s->p2l_bits;
    uint8_t *b = s->p2l + (bit >> 3);
    uint64_t mask = ((1ull << s->p2l_bits) - 1) << (bit & 7);
    store_le64(b, (load_le64(b) & ~mask) | (((uint64_t)lpn << (bit & 7)) & mask));
}

static uint32_t bits_get(const uint8_t *a, int w, uint64_t i)
{
    uint64_t bit = i * (uint64_t)w;
    return (uint32_t)((load_le64(a + (bit >> 3)) >> (bit & 7)) & ((1ull << w) - 1));
}

static void bits_set(uint8_t *a, int w, uint64_t i, uint32_t v)
{
    uint64_t bit = i * (uint64_t)w;
    uint8_t *b = a + (bit >> 3);
    uint64_t mask = ((1ull << w) - 1) << (bit & 7);
    store_le64(b, (load_le64(b) & ~mask) | (((uint64_t)v << (bit & 7)) & mask));
}

/* The l2p table stores ppn + 1 (0 = never written), so that a fresh table is calloc'ed memory:
 * untouched parts of a large device cost neither time nor resident memory. */
static inline uint32_t L2P(const fl_sim *s, uint64_t lpn) { return s->l2p[lpn] - 1u; }

static int page_valid(const fl_sim *s, uint32_t ppn)
{
    uint32_t lpn = p2l_get(s, ppn);
    return lpn < s->logical_pages && L2P(s, lpn) == ppn;
}

static inline uint32_t unit_of_plane(const fl_sim *s, uint32_t pl) { return pl / (uint32_t)(s->D * s->P); }
static inline int channel_of_unit(const fl_sim *s, uint32_t u) { return (int)(u / (uint32_t)s->c.chips_per_channel); }
static inline int die_of_plane(const fl_sim *s, uint32_t pl) { return (int)((pl / (uint32_t)s->P) % (uint32_t)s->D); }
static inline int plane_in_die(const fl_sim *s, uint32_t pl) { return (int)(pl % (uint32_t)s->P); }

/* transfer times of whole sectors come from a table (the same llround, computed once) */
static inline int64_t xfer_ns(const fl_sim *s, uint32_t bytes)
{
    if (!(bytes & 511u) && bytes <= (uint32_t)s->c.page_size) return s->xfer_sect[bytes >> 9];
    return (int64_t)llround(bytes * s->xfer_ns_per_byte);
}

static void fifo_push(fl_sim *s, fifo_t *f, int32_t i)
{
    s->tx[i].next = -1;
    if (f->tail < 0) f->head = i; else s->tx[f->tail].next = i;
    f->tail = i;
}

static int32_t fifo_pop(fl_sim *s, fifo_t *f)
{
    int32_t i = f->head;
    if (i >= 0) { f->head = s->tx[i].next; if (f->head < 0) f->tail = -1; }
    return i;
}

static void *grow(void *p, size_t elem, int32_t *cap, int32_t need)
{
    int32_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * elem);
    if (!q) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    *cap = n;
    return q;
}

static int32_t tx_alloc(fl_sim *s)
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

static void tx_release(fl_sim *s, int32_t i) { s->tx[i].next = s->tx_free; s->tx_free = i; }

static int32_t rq_alloc(fl_sim *s)
{
    if (s->rq_free < 0) {
        int32_t old = s->rq_cap;
        s->rq = grow(s->rq, sizeof(req_t), &s->rq_cap, old + 1);
        for (int32_t i = s->rq_cap - 1; i >= old; i--) { s->rq[i].next = s->rq_free; s->rq_free = i; }
    }
    int32_t i = s->rq_free;
    s->rq_free = s->rq[i].next;
    s->rq[i].next = -1;
    return i;
}

/* ------------------------------------------------------------------ event heap */

/* Keys (t, seq) are unique, so any correct priority queue pops events in the same order. The
 * event being handled stays at the root (top_taken) until the handler pushes its first event,
 * which replaces it with one sift-down (instead of a pop's sift-down and a push's sift-up). */
static inline int ev_less(const ev_t *a, const ev_t *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

/* e into the hole at i of a heap of n events (a sift-down) */
static inline void ev_sift_down(ev_t *h, size_t n, size_t i, ev_t e)
{
    for (;;) {
        size_t l = 2 * i + 1, m;
        if (l >= n) break;
        m = l + 1 < n && ev_less(&h[l + 1], &h[l]) ? l + 1 : l;
        if (!ev_less(&h[m], &e)) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = e;
}

static void ev_push(fl_sim *s, int64_t t, int type, int arg)
{
    ev_t e = {t, s->seq++, type, arg};
    if (s->top_taken) {
        s->top_taken = 0;
        ev_sift_down(s->heap, s->heap_n, 0, e);
        return;
    }
    if (s->heap_n == s->heap_cap) {
        s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 1024;
        s->heap = realloc(s->heap, s->heap_cap * sizeof(ev_t));
        if (!s->heap) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

/* Remove the root if it was taken and nothing replaced it. */
static inline void ev_settle(fl_sim *s)
{
    if (!s->top_taken) return;
    s->top_taken = 0;
    size_t n = --s->heap_n;
    if (n) ev_sift_down(s->heap, n, 0, s->heap[n]);
}

/* ------------------------------------------------------------------ construction */

static int cfg_error(char *err, size_t errlen, const char *msg, const char *field, double value)
{
    snprintf(err, errlen, "%s: %s (got %g)", field, msg, value);
    return -1;
}

static int check_cfg(const fl_config *c, char *err, size_t errlen)
{
    if (c->n_channels < 1 || c->n_channels > 1024) return cfg_error(err, errlen, "must be in 1..1024", "n_channels", c->n_channels);
    if (c->chips_per_channel < 1 || c->chips_per_channel > 1024) return cfg_error(err, errlen, "must be in 1..1024", "chips_per_channel", c->chips_per_channel);
    if ((int64_t)c->n_channels * c->chips_per_channel > 1024) return cfg_error(err, errlen, "n_channels * chips_per_channel must be <= 1024", "n_units", (double)c->n_channels * c->chips_per_channel);
    if (c->dies_per_chip < 1 || c->dies_per_chip > 64) return cfg_error(err, errlen, "must be in 1..64", "dies_per_chip", c->dies_per_chip);
    if (c->planes_per_die < 1 || c->planes_per_die > FL_MAX_PLANES) return cfg_error(err, errlen, "must be in 1..8", "planes_per_die", c->planes_per_die);
    if (c->blocks_per_plane < 4) return cfg_error(err, errlen, "must be >= 4", "blocks_per_plane", c->blocks_per_plane);
    if (c->pages_per_block < 1 || c->pages_per_block > 65535) return cfg_error(err, errlen, "must be in 1..65535", "pages_per_block", c->pages_per_block);
    if (c->page_size < 512 || c->page_size % 512) return cfg_error(err, errlen, "must be a positive multiple of 512 bytes", "page_size", c->page_size);
    if (!(c->op_ratio > 0.0 && c->op_ratio < 0.9)) return cfg_error(err, errlen, "must be in (0, 0.9)", "op_ratio", c->op_ratio);
    if (!(c->gc_threshold > 0.0 && c->gc_threshold < 0.5)) return cfg_error(err, errlen, "must be in (0, 0.5)", "gc_threshold", c->gc_threshold);
    if (c->read_ns <= 0) return cfg_error(err, errlen, "must be > 0", "read_us", (double)c->read_ns / 1000);
    if (c->program_ns <= 0) return cfg_error(err, errlen, "must be > 0", "program_us", (double)c->program_ns / 1000);
    if (c->erase_ns <= 0) return cfg_error(err, errlen, "must be > 0", "erase_us", (double)c->erase_ns / 1000);
    if (!(c->channel_mtps > 0)) return cfg_error(err, errlen, "must be > 0", "channel_mtps", c->channel_mtps);
    if (c->channel_width < 1 || c->channel_width > 64) return cfg_error(err, errlen, "must be in 1..64 bytes", "channel_width_bytes", c->channel_width);
    if (c->n_streams < 1 || c->n_streams > FL_MAX_STREAMS) return cfg_error(err, errlen, "must be in 1..64", "n_streams", c->n_streams);
    for (int i = 0; i < c->n_streams; i++)
        if (c->queue_depth[i] < 1) return cfg_error(err, errlen, "must be >= 1", "queue_depth", c->queue_depth[i]);
    double pages = (double)c->n_channels * c->chips_per_channel * c->dies_per_chip * c->planes_per_die
                   * c->blocks_per_plane * c->pages_per_block;
    if (pages >= 4294967295.0) return cfg_error(err, errlen, "physical pages must be < 2^32 (use a larger page or scale)", "geometry", pages);
    int thr = (int)(c->gc_threshold * c->blocks_per_plane);
    if (thr + 2 >= c->blocks_per_plane) return cfg_error(err, errlen, "leaves no blocks for data; raise blocks_per_plane", "gc_threshold", c->gc_threshold);
    if (c->susp_program_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_program_us", (double)c->susp_program_ns / 1000);
    if (c->susp_erase_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_us", (double)c->susp_erase_ns / 1000);
    if (c->susp_program_read_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_program_for_read_min_us", (double)c->susp_program_read_min_ns / 1000);
    if (c->susp_erase_read_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_for_read_min_us", (double)c->susp_erase_read_min_ns / 1000);
    if (c->susp_erase_write_min_ns < 0) return cfg_error(err, errlen, "must be >= 0", "suspend_erase_for_write_min_us", (double)c->susp_erase_write_min_ns / 1000);
    if (c->cache_mode < 0 || c->cache_mode > (FL_CACHE_WRITE | FL_CACHE_READ)) return cfg_error(err, errlen, "must be 0..3", "cache_mode", c->cache_mode);
    if (c->cache_mode) {
        int parts = c->cache_partitioned ? c->n_streams : 1;
        if (c->page_size > 32768) return cfg_error(err, errlen, "must be <= 32768 bytes with the data cache on (64 sectors)", "page_size", c->page_size);
        if (c->cache_bytes / c->page_size < parts || c->cache_bytes / c->page_size > INT32_MAX / 2)
            return cfg_error(err, errlen, "must hold at least one page per partition (and < 2^30 pages)", "cache_capacity_bytes", (double)c->cache_bytes);
        if (c->dram_row_bytes < 1) return cfg_error(err, errlen, "must be >= 1", "cache_dram_row_bytes", c->dram_row_bytes);
        if (c->dram_burst_bytes < 1) return cfg_error(err, errlen, "must be >= 1", "cache_dram_burst_bytes", c->dram_burst_bytes);
        if (!(c->dram_mtps > 0) || !isfinite(c->dram_mtps)) return cfg_error(err, errlen, "must be > 0", "cache_dram_mtps", c->dram_mtps);
        if (c->dram_trcd_ns < 0 || c->dram_tcl_ns < 0 || c->dram_trp_ns < 0)
            return cfg_error(err, errlen, "must be >= 0", "cache_dram_trcd/tcl/trp_ns", (double)(c->dram_trcd_ns < 0 ? c->dram_trcd_ns : c->dram_tcl_ns < 0 ? c->dram_tcl_ns : c->dram_trp_ns));
    }
    return 0;
}

static void cache_free(fl_sim *s);
static int cache_init(fl_sim *s);

fl_sim *fl_new(const fl_config *cfg, char *err, size_t errlen)
{
    if (check_cfg(cfg, err, errlen) < 0) return NULL;
    fl_sim *s = calloc(1, sizeof(fl_sim));
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->c = *cfg;
    s->D = cfg->dies_per_chip; s->P = cfg->planes_per_die; s->B = cfg->blocks_per_plane; s->G = cfg->pages_per_block;
    s->n_units = cfg->n_channels * cfg->chips_per_channel;
    s->n_planes = s->n_units * s->D * s->P;
    s->n_blocks = (uint32_t)s->n_planes * (uint32_t)s->B;
    s->phys_pages = (uint64_t)s->n_blocks * (uint64_t)s->G;
    s->logical_pages = (uint64_t)((double)s->phys_pages * (1.0 - cfg->op_ratio));
    s->logical_bytes = (int64_t)s->logical_pages * cfg->page_size;
    s->gc_thr_blocks = (int32_t)(cfg->gc_threshold * s->B);
    /* at least 2: host writes leave a plane's last free block to GC, so GC must start before that */
    if (s->gc_thr_blocks < 2) s->gc_thr_blocks = 2;
    /* ONFI NV-DDR2 command/address timing, MQSim's defaults (ONFI_Channel_NVDDR2.h), in ns */
    const int64_t tCS = 20, tWC = 25, tWB = 100, tRR = 20, tDBSY = 500, tADL = 70, tWPST = 6, tWPSTH = 15, tCALS = 15;
    for (int n = 1; n <= FL_MAX_PLANES; n++) {
        s->cmd_read[n] = tCS + n * 6 * tWC + (n - 1) * tDBSY + tWB + tRR;
        s->cmd_prog[n] = tCS + (n - 1) * (5 * tWC + tADL + tWPST + tCALS + tWB + tDBSY) + (6 * tWC + tADL + tWPST + tWPSTH + tWB);
        s->cmd_erase[n] = tCS + n * (4 * tWC + tWB) + (n - 1) * tDBSY;
    }
    s->susp_cmd_ns = tCS + 3 * tWC;
    s->xfer_ns_per_byte = 1000.0 / (cfg->channel_mtps * cfg->channel_width);
    int bits = 1;
    while (bits < 32 && (1ull << bits) < s->logical_pages) bits++;
    s->p2l_bits = bits;
    s->cbits = cfg->page_size > 4096 ? (cfg->page_size + 4095) / 4096 : 0;
    if (s->cbits > 8) s->cbits = 8;
    s->cstat = s->cbits ? calloc((size_t)((s->logical_pages * (uint64_t)s->cbits + 7) / 8 + 8), 1) : NULL;
    s->l2p = calloc(s->logical_pages, sizeof(uint32_t));
    s->p2l = calloc((size_t)((s->phys_pages * (uint64_t)bits + 7) / 8 + 8), 1);
    s->blk_valid = calloc(s->n_blocks, sizeof(uint16_t));
    s->blk_state = calloc(s->n_blocks, 1);
    s->blk_owner = calloc(s->n_blocks, 1);
    s->free_stack = malloc((size_t)s->n_blocks * sizeof(uint32_t));
    size_t nf = (size_t)s->n_planes * (size_t)cfg->n_streams;
    s->data_wf = malloc(nf * sizeof(frontier_t));
    s->gc_wf = malloc(nf * sizeof(frontier_t));
    s->planes = calloc((size_t)s->n_planes, sizeof(plane_t));
    s->units = calloc((size_t)s->n_units, sizeof(unit_t));
    s->ch = calloc((size_t)cfg->n_channels, sizeof(channel_t));
    s->streams = calloc((size_t)cfg->n_streams, sizeof(stream_t));
    s->dirty = calloc((size_t)cfg->n_channels, 1);
    s->dirty_list = calloc((size_t)cfg->n_channels, sizeof(int32_t));
    s->xfer_sect = malloc(((size_t)cfg->page_size / 512 + 1) * sizeof(int64_t));
    if (s->xfer_sect)
        for (size_t k = 0; k <= (size_t)cfg->page_size / 512; k++)
            s->xfer_sect[k] = (int64_t)llround((uint32_t)(k * 512) * s->xfer_ns_per_byte);
    if (!s->xfer_sect || !s->l2p || !s->p2l || (s->cbits && !s->cstat) || !s->blk_valid || !s->blk_state || !s->blk_owner || !s->free_stack || !s->data_wf
        || !s->gc_wf || !s->planes || !s->units || !s->ch || !s->streams || !s->dirty || !s->dirty_list) {
        fl_free(s);
        snprintf(err, errlen, "out of memory for the geometry (%llu physical pages)", (unsigned long long)cfg->n_channels);
        return NULL;
    }
    for (size_t i = 0; i < nf; i++) { s->data_wf[i].blk = -1; s->data_wf[i].wp = 0; s->gc_wf[i] = s->data_wf[i]; }
    for (int p = 0; p < s->n_planes; p++) {
        plane_t *pl = &s->planes[p];
        pl->victim = -1; pl->stalled.head = pl->stalled.tail = -1;
        pl->n_free = s->B;
        for (int b = 0; b < s->B; b++) s->free_stack[(size_t)p * s->B + b] = (uint32_t)(s->B - 1 - b);
    }
    for (int u = 0; u < s->n_units; u++) {
        unit_t *un = &s->units[u];
        for (int q = 0; q < N_Q; q++) un->q[q].head = un->q[q].tail = -1;
        un->qmask = 0;
        un->free_blocks = (int64_t)s->D * s->P * s->B;
    }
    for (int c = 0; c < cfg->n_channels; c++) {
        channel_t *ch = &s->ch[c];
        ch->wait_user.head = ch->wait_user.tail = ch->wait_gc.head = ch->wait_gc.tail = -1;
    }
    for (int i = 0; i < cfg->n_streams; i++) {
        stream_t *st = &s->streams[i];
        st->qd = cfg->queue_depth[i];
        st->prio = 1;
        st->slo_us = INFINITY;
        st->pending.head = st->pending.tail = -1;
        st->ev_pending_t = -1;
        st->last_t_ns = INT64_MIN;
        /* CWDP order: channel varies fastest, then chip (MQSim's Channel_ids x Chip_ids domain) */
        st->n_units = s->n_units;
        for (int k = 0; k < s->n_units; k++)
            st->units[k] = (k % cfg->n_channels) * cfg->chips_per_channel + k / cfg->n_channels;
    }
    s->tx_free = s->rq_free = -1;
    s->rng = cfg->seed ^ 0x5DEECE66Dull;
    if (cfg->cache_mode && cache_init(s) < 0) {
        fl_free(s);
        snprintf(err, errlen, "out of memory for the data cache");
        return NULL;
    }
    return s;
}

void fl_free(fl_sim *s)
{
    if (!s) return;
    free(s->l2p); free(s->p2l); free(s->cstat); free(s->blk_valid); free(s->blk_state); free(s->blk_owner);
    free(s->free_stack); free(s->data_wf); free(s->gc_wf); free(s->planes); free(s->units); free(s->ch);
    free(s->streams); free(s->dirty); free(s->dirty_list); free(s->tx); free(s->rq); free(s->heap);
    free(s->lat); free(s->dev_lat); free(s->lat_stream); free(s->xfer_sect);
    cache_free(s);
    free(s);
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

static void enqueue_tx(fl_sim *s, int32_t t, int q);
static void gc_check(fl_sim *s, uint32_t pl);

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
        uint32_t ob = old / (uint32_t)s->G;
        s->blk_valid[ob]--;
        s->units[unit_of_plane(s, ob / (uint32_t)s->B)].valid_pages--;
    }
    s->l2p[lpn] = ppn + 1;
    p2l_set(s, ppn, lpn);
    uint32_t nb = ppn / (uint32_t)s->G;
    s->blk_valid[nb]++;
    s->units[unit_of_plane(s, nb / (uint32_t)s->B)].valid_pages++;
}

/* Give a write transaction its physical page (or stall it until the plane frees a block). */
static int place_write(fl_sim *s, int32_t t)
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

static void gc_check(fl_sim *s, uint32_t pl)
{
    plane_t *p = &s->planes[pl];
    if (p->victim >= 0 || p->n_free >= s->gc_thr_blocks) return;
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

static void channel_kick(fl_sim *s, int c);

static void flush_dirty(fl_sim *s)
{
    while (s->n_dirty) {
        int c = s->dirty_list[--s->n_dirty];
        s->dirty[c] = 0;
        channel_kick(s, c);
    }
}

static void enqueue_tx(fl_sim *s, int32_t t, int q)
{
    tx_t *x = &s->tx[t];
    uint32_t u = unit_of_plane(s, x->pl);
    unit_t *un = &s->units[u];
    x->die = (uint16_t)die_of_plane(s, x->pl);
    x->pid = (uint8_t)plane_in_die(s, x->pl);
    if (x->kind <= TX_CWRITE) {
        if (un->busy && un->active_stream != x->stream) s->streams[x->stream].st.conflicts++;
    } else {
        un->gc_ops++;
    }
    fifo_push(s, &un->q[q], t);
    un->qmask |= 1u << q;
    mark_dirty(s, channel_of_unit(s, u));
    if (!s->batching) flush_dirty(s);
}

static void bus_start(fl_sim *s, int c, int phase, int32_t unit, int32_t t, int64_t dur)
{
    channel_t *ch = &s->ch[c];
    ch->busy = 1; ch->phase = phase; ch->unit = unit; ch->tx = t; ch->start = s->now;
    ev_push(s, s->now + dur, EV_BUS, c);
}

static void start_dataout(fl_sim *s, int c, int32_t t)
{
    bus_start(s, c, PH_DATAOUT, (int32_t)unit_of_plane(s, s->tx[t].pl), t, xfer_ns(s, s->tx[t].bytes));
}

/* Issue one command to chip u from queue q1 (then q2): transactions on the die of q1's head, on
 * distinct planes, with the head's page offset (MQSim's TSU_Base::issue_command_to_chip). */
static void issue(fl_sim *s, uint32_t u, int q1, int q2)
{
    unit_t *un = &s->units[u];
    tx_t *h = &s->tx[un->q[q1].head];
    int die = h->die;
    uint32_t page = h->page;
    int64_t susp = 0;
    if (un->busy) {
        /* the chip is in a program/erase (service_busy_chip checked that it may be suspended): set
         * it aside, suspended on its own die (at a cost), running on alongside on another die */
        un->s_kind = un->kind;
        un->s_n = un->n_active;
        memcpy(un->s_active, un->active, (size_t)un->n_active * sizeof(int32_t));
        un->in_array = 0;
        if (s->tx[un->active[0]].die == die) {
            un->s_state = SUSP_HELD;
            un->s_remaining = un->array_done_at - s->now;
            if (un->kind == TX_WRITE) { susp = s->susp_cmd_ns + s->c.susp_program_ns; s->program_suspends++; }
            else { susp = s->susp_cmd_ns + s->c.susp_erase_ns; s->erase_suspends++; }
        } else {
            un->s_state = SUSP_BG;
            un->s_done_at = un->array_done_at;
        }
    }
    unsigned planes = 0;
    un->n_active = 0;
    int qs[2] = {q1, q2};
    for (int k = 0; k < 2 && un->n_active < s->P; k++) {
        if (qs[k] < 0) continue;
        fifo_t *f = &un->q[qs[k]];
        int32_t prev = -1, i = f->head;
        int scanned = 0;
        while (i >= 0 && un->n_active < s->P && scanned++ < MP_SCAN) {
            tx_t *x = &s->tx[i];
            int32_t nx = x->next;
            int pid = x->pid;
            if (x->die == die && !(planes & (1u << pid)) && (planes == 0 || x->page == page)) {
                planes |= 1u << pid;
                un->active[un->n_active++] = i;
                if (prev < 0) f->head = nx; else s->tx[prev].next = nx;
                if (f->tail == i) f->tail = prev;
                x->next = -1;
            } else {
                prev = i;
            }
            i = nx;
        }
        if (f->head < 0) un->qmask &= ~(1u << qs[k]);
    }
    /* the chip operation of each transaction kind */
    static const uint8_t op_of[] = {[TX_READ] = TX_READ, [TX_WRITE] = TX_WRITE, [TX_UPDREAD] = TX_READ,
                                    [TX_CWRITE] = TX_WRITE, [TX_GCREAD] = TX_READ, [TX_GCWRITE] = TX_WRITE,
                                    [TX_ERASE] = TX_ERASE};
    int n = un->n_active;
    int kind = op_of[s->tx[un->active[0]].kind];
    int64_t dur, op;
    if (kind == TX_READ) {
        un->kind = TX_READ;
        dur = s->cmd_read[n];
        op = s->c.read_ns;
    } else if (kind == TX_WRITE) {
        un->kind = TX_WRITE;
        dur = s->cmd_prog[n];
        for (int i = 0; i < n; i++) dur += xfer_ns(s, s->tx[un->active[i]].bytes);
        op = s->c.program_ns;
    } else {
        un->kind = TX_ERASE;
        dur = s->cmd_erase[n];
        op = s->c.erase_ns;
    }
    dur += susp;
    if (s->now + dur + op > un->exp_finish) un->exp_finish = s->now + dur + op;
    if (!un->busy) un->start = s->now;
    un->busy = 1;
    un->fg_active = 1;
    un->pending_out = 0;
    un->active_stream = s->tx[un->active[0]].stream;
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
static int service_chip(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    if (un->busy) return (s->c.susp_program || s->c.susp_erase) ? service_busy_chip(s, u) : 0;
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

static void channel_kick(fl_sim *s, int c)
{
    channel_t *ch = &s->ch[c];
    if (ch->busy) return;
    int32_t t = fifo_pop(s, &ch->wait_user);
    if (t < 0) t = fifo_pop(s, &ch->wait_gc);
    if (t >= 0) { start_dataout(s, c, t); return; }
    /* chips in round-robin order from ch->rr; one with empty queues cannot issue (service_chip
     * would do nothing), so only its turn passes */
    int W = s->c.chips_per_channel;
    unit_t *un0 = &s->units[c * W];
    for (int i = 0; i < W; i++) {
        int k = ch->rr;
        if (un0[k].qmask) service_chip(s, (uint32_t)(c * W + k));
        ch->rr = k + 1 == W ? 0 : k + 1;
        if (ch->busy) break;
    }
}

/* ------------------------------------------------------------------ host side */

static void log_latency(fl_sim *s, double us, double dev_us, int stream)
{
    if (s->lat_n == s->lat_cap) {
        s->lat_cap = s->lat_cap ? 2 * s->lat_cap : 4096;
        s->lat = realloc(s->lat, s->lat_cap * sizeof(double));
        s->dev_lat = realloc(s->dev_lat, s->lat_cap * sizeof(double));
        s->lat_stream = realloc(s->lat_stream, s->lat_cap * sizeof(uint16_t));
        if (!s->lat || !s->dev_lat || !s->lat_stream) { fprintf(stderr, "flash: out of memory\n"); abort(); }
    }
    s->dev_lat[s->lat_n] = dev_us;
    s->lat[s->lat_n] = us;
    s->lat_stream[s->lat_n++] = (uint16_t)stream;
}

static void try_admit(fl_sim *s, int si);

static int plane_has_room(const fl_sim *s, uint32_t pl, int stream)
{
    return s->data_wf[(size_t)pl * s->c.n_streams + stream].blk >= 0 || s->planes[pl].n_free > 1;
}

/* The plane of a host write: CWDP over the stream's units (channel fastest, then chip, die, plane).
 * When that plane is full of valid data (its units took more than their share of the stream's
 * data), the next plane in the stream's CWDP sequence with room, then any plane of the device. */
static uint32_t write_plane(const fl_sim *s, const stream_t *st, uint32_t lpn)
{
    uint32_t nu = (uint32_t)st->n_units, D = (uint32_t)s->D, P = (uint32_t)s->P;
    int si = (int)(st - s->streams);
    uint32_t span = nu * D * P;
    for (uint32_t k = 0; k < span; k++) {
        uint32_t l = (lpn + k) % span;
        uint32_t pl = ((uint32_t)st->units[l % nu] * D + (l / nu) % D) * P + (l / (nu * D)) % P;
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
static inline void update_read_chunks(fl_sim *s, int32_t t, unsigned full, unsigned any, int64_t data_bytes, int prio)
{
    uint32_t lpn = s->tx[t].lpn, old = L2P(s, lpn);
    int64_t ps = s->c.page_size;
    unsigned prev;
    if (s->cbits) {
        prev = old == NONE ? 0 : bits_get(s->cstat, s->cbits, lpn);
        bits_set(s->cstat, s->cbits, lpn, prev | any);
    } else {
        prev = old == NONE ? 0u : 1u;
    }
    if (!(prev & ~full)) return;
    int32_t r = tx_alloc(s);
    tx_t *x = &s->tx[r], *w = &s->tx[t];
    x->kind = TX_UPDREAD; x->stream = w->stream; x->lpn = lpn; x->ppn = old; x->req = -1; x->link = t;
    x->pl = old / (uint32_t)s->G / (uint32_t)s->B;
    x->page = old % (uint32_t)s->G;
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
        bits_set(s->cstat, s->cbits, lpn, any);
    }
    gc_check(s, pl);
    return 1;
}

/* ------------------------------------------------------------------ DRAM data cache */
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

static int cache_init(fl_sim *s)
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

static void cache_free(fl_sim *s)
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
static void cache_fill(fl_sim *s, int32_t t)
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

static FL_ALWAYS_INLINE void finish_request(fl_sim *s, int32_t r);

/* A write-back has reached flash: its back pressure is released, its slot dropped unless newer
 * data came, and the waiting writes retried in order until back pressure is over its limit again
 * (MQSim's handle_transaction_serviced_signal_from_PHY). */
static void cache_write_done(fl_sim *s, int32_t t)
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

static void on_dram_done(fl_sim *s, int32_t d)
{
    dram_t x = s->dx[d];
    s->dx[d].next = s->dx_free;
    s->dx_free = d;
    s->batching++;
    if (x.type == DX_USER) {
        if (--s->rq[x.arg].remaining == 0) finish_request(s, x.arg);
    } else if (x.type == DX_EVICT) {
        for (int32_t t = x.arg; t >= 0;) {
            int32_t nx = s->tx[t].next;
            s->tx[t].next = -1;
            cache_dispatch(s, t);
            t = nx;
        }
    }
    /* MQSim frees the channel after handling the event: transfers it started wait their turn */
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
    if (--s->batching == 0) flush_dirty(s);
}

/* A user write transaction of page lp ([lo, hi) of the request), placed and queued (after its
 * update read, if it needs one). */
static FL_ALWAYS_INLINE void write_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi, int prio)
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
static FL_ALWAYS_INLINE void read_tx(fl_sim *s, int32_t r, const stream_t *st, uint64_t lp, int64_t lo, int64_t hi,
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
        x->pl = ppn / (uint32_t)s->G / (uint32_t)s->B;
        x->page = ppn % (uint32_t)s->G;
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

/* A request with the data cache on: a write absorbed (write caching), or a read whose pages the
 * cache holds taken from DRAM (one transfer) and the rest from flash. */
static void cache_admit(fl_sim *s, int32_t r, uint64_t first, uint64_t last, int prio)
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

static void admit(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    stream_t *st = &s->streams[q->stream];
    q->admit_ns = s->now;
    st->st.qdelay_sum_us += (double)(s->now - q->arr_ns) / 1000.0;
    st->st.issued++;
    st->inflight++;
    int64_t ps = s->c.page_size;
    uint64_t first = (uint64_t)(q->off / ps), last = (uint64_t)((q->off + q->size - 1) / ps);
    q->remaining = (int32_t)(last - first + 1);
    int prio = st->prio;
    s->batching++;
    if (s->c.cache_mode) {
        cache_admit(s, r, first, last, prio);
        if (--s->batching == 0) flush_dirty(s);
        return;
    }
    for (uint64_t lp = first; lp <= last; lp++) {
        int64_t lo = (int64_t)lp * ps, hi = lo + ps;
        if (lo < q->off) lo = q->off;
        if (hi > q->off + q->size) hi = q->off + q->size;
        if (q->write) {
            write_tx(s, r, st, lp, lo, hi, prio);
        } else {
            read_tx(s, r, st, lp, lo, hi, (uint32_t)(hi - lo), prio);
            q = &s->rq[r];
        }
    }
    if (--s->batching == 0) flush_dirty(s);
}

static void try_admit(fl_sim *s, int si)
{
    stream_t *st = &s->streams[si];
    while (st->inflight < st->qd && st->pending.head >= 0) {
        int32_t r = st->pending.head;
        if (s->rq[r].arr_ns > s->now) {
            if (st->ev_pending_t < 0 || st->ev_pending_t > s->rq[r].arr_ns) {
                st->ev_pending_t = s->rq[r].arr_ns;
                ev_push(s, s->rq[r].arr_ns, EV_ARRIVE, si);
            }
            return;
        }
        st->pending.head = s->rq[r].next;
        if (st->pending.head < 0) st->pending.tail = -1;
        admit(s, r);
    }
}

static void complete_user(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    int32_t r = x->req;
    stream_t *st = &s->streams[x->stream];
    if (x->kind == TX_READ) {
        st->st.read_tx++;
        if (s->cache_rd) cache_fill(s, t);
    } else {
        st->st.write_tx++;
        s->flash_programs++;
    }
    tx_release(s, t);
    req_t *q = &s->rq[r];
    if (--q->remaining > 0) return;
    finish_request(s, r);
}

/* The request's last transaction (flash or DRAM) is done: log it, admit the next. */
static FL_ALWAYS_INLINE void finish_request(fl_sim *s, int32_t r)
{
    req_t *q = &s->rq[r];
    stream_t *st = &s->streams[q->stream];
    double lat = (double)(s->now - q->arr_ns) / 1000.0;
    st->st.completed++;
    st->st.lat_sum_us += lat;
    if (lat > st->slo_us) st->st.slo_viol++;
    if (q->write) { st->st.writes++; st->st.write_bytes += q->size; }
    else { st->st.reads++; st->st.read_bytes += q->size; }
    log_latency(s, lat, (double)(s->now - q->admit_ns) / 1000.0, q->stream);
    int si = q->stream;
    q->next = s->rq_free; s->rq_free = r;
    st->inflight--;
    try_admit(s, si);
}

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

static void complete_tx(fl_sim *s, int32_t t)
{
    tx_t *x = &s->tx[t];
    if (x->kind <= TX_WRITE) { /* TX_READ, TX_WRITE: the common case first */
        complete_user(s, t);
        return;
    }
    switch (x->kind) {
    case TX_CWRITE:
        cache_write_done(s, t);
        return;
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

/* ------------------------------------------------------------------ events */

/* The chip's foreground command is done: resume a suspended command (MQSim ignores the resume
 * command's time), wait for one running on another die, or go idle. */
static void fg_finish(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    un->fg_active = 0;
    if (un->s_state == SUSP_HELD) {
        un->s_state = SUSP_NONE;
        un->kind = un->s_kind;
        un->n_active = un->s_n;
        memcpy(un->active, un->s_active, (size_t)un->s_n * sizeof(int32_t));
        un->active_stream = s->tx[un->active[0]].stream;
        un->fg_active = 1;
        un->in_array = 1;
        un->array_done_at = s->now + un->s_remaining;
        ev_push(s, un->array_done_at, EV_ARRAY, (int)u);
    } else if (un->s_state == SUSP_NONE) {
        un->busy = 0;
        un->busy_done += s->now - un->start;
    }
}

static void on_bus_done(fl_sim *s, int c)
{
    channel_t *ch = &s->ch[c];
    ch->busy = 0;
    ch->busy_done += s->now - ch->start;
    uint32_t u = (uint32_t)ch->unit;
    unit_t *un = &s->units[u];
    if (ch->phase == PH_CMD) {
        int64_t op = un->kind == TX_READ ? s->c.read_ns : un->kind == TX_WRITE ? s->c.program_ns : s->c.erase_ns;
        un->in_array = 1;
        un->array_done_at = s->now + op;
        ev_push(s, s->now + op, EV_ARRAY, (int)u);
        channel_kick(s, c);
        return;
    }
    s->batching++;
    complete_tx(s, ch->tx);
    if (--un->pending_out == 0) fg_finish(s, u);
    /* the bus goes first to waiting data-outs, then to the chips (MQSim's PHY order) */
    channel_kick(s, c);
    if (--s->batching == 0) flush_dirty(s);
}

static void on_array_done(fl_sim *s, uint32_t u)
{
    unit_t *un = &s->units[u];
    int c = channel_of_unit(s, u);
    if (!(un->in_array && s->now == un->array_done_at)) {
        /* a program/erase that ran beside the foreground command on another die; or else the
         * original end of a suspended operation (it moved when the operation was resumed) */
        if (un->s_state != SUSP_BG || s->now != un->s_done_at) return;
        int32_t bg[FL_MAX_PLANES];
        int nb = un->s_n;
        memcpy(bg, un->s_active, (size_t)nb * sizeof(int32_t));
        un->s_state = SUSP_NONE;
        if (!un->fg_active) { un->busy = 0; un->busy_done += s->now - un->start; }
        s->batching++;
        for (int i = 0; i < nb; i++) complete_tx(s, bg[i]);
        if (--s->batching == 0) flush_dirty(s);
        channel_kick(s, c);
        return;
    }
    un->in_array = 0;
    int n = un->n_active;
    un->n_active = 0;
    if (un->kind == TX_READ) {
        un->pending_out = n;
        for (int i = 0; i < n; i++) {
            int32_t t = un->active[i];
            if (!s->ch[c].busy) start_dataout(s, c, t);
            else fifo_push(s, s->tx[t].kind == TX_GCREAD ? &s->ch[c].wait_gc : &s->ch[c].wait_user, t);
        }
        return;
    }
    int32_t done[FL_MAX_PLANES];
    memcpy(done, un->active, (size_t)n * sizeof(int32_t));
    fg_finish(s, u);
    s->batching++;
    for (int i = 0; i < n; i++) complete_tx(s, done[i]);
    if (--s->batching == 0) flush_dirty(s);
    channel_kick(s, c);
}

void fl_run_until(fl_sim *s, double t_us)
{
    int64_t T = (int64_t)llround(t_us * 1000.0);
    for (;;) {
        ev_settle(s);
        if (!s->heap_n || s->heap[0].t > T) break;
        ev_t e = s->heap[0];
        s->top_taken = 1;
        s->now = e.t;
        switch (e.type) {
        case EV_ARRIVE:
            if (s->streams[e.arg].ev_pending_t == e.t) s->streams[e.arg].ev_pending_t = -1;
            try_admit(s, e.arg);
            break;
        case EV_BUS: on_bus_done(s, e.arg); break;
        case EV_ARRAY: on_array_done(s, (uint32_t)e.arg); break;
        default: on_dram_done(s, e.arg); break; /* EV_DRAM */
        }
    }
    if (T > s->now) s->now = T;
}

double fl_now_us(const fl_sim *s) { return (double)s->now / 1000.0; }

int fl_submit(fl_sim *s, size_t n, const double *t_us, const int32_t *stream, const int64_t *offset,
              const int64_t *size, const uint8_t *is_write, char *err, size_t errlen)
{
    /* validate everything first so that a bad request leaves the simulator unchanged */
    int64_t last[FL_MAX_STREAMS];
    for (int i = 0; i < s->c.n_streams; i++) last[i] = s->streams[i].last_t_ns;
    for (size_t i = 0; i < n; i++) {
        if (stream[i] < 0 || stream[i] >= s->c.n_streams) {
            snprintf(err, errlen, "request %zu: stream %d does not exist (n_streams=%d)", i, stream[i], s->c.n_streams);
            return -1;
        }
        if (!(t_us[i] >= 0) || !isfinite(t_us[i])) {
            snprintf(err, errlen, "request %zu: time_us %g must be finite and >= 0", i, t_us[i]);
            return -1;
        }
        if (size[i] <= 0 || offset[i] < 0 || offset[i] > s->logical_bytes - size[i]) {
            snprintf(err, errlen, "request %zu: offset %lld + size %lld is past the logical capacity of %lld bytes "
                     "(or size <= 0)", i, (long long)offset[i], (long long)size[i], (long long)s->logical_bytes);
            return -1;
        }
        int64_t t = (int64_t)llround(t_us[i] * 1000.0);
        if (t < last[stream[i]]) {
            snprintf(err, errlen, "request %zu: time_us %g of stream %d is before that stream's previous request",
                     i, t_us[i], stream[i]);
            return -1;
        }
        last[stream[i]] = t;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t r = rq_alloc(s);
        req_t *q = &s->rq[r];
        q->arr_ns = (int64_t)llround(t_us[i] * 1000.0);
        q->off = offset[i]; q->size = size[i]; q->write = is_write[i] ? 1 : 0; q->stream = (uint16_t)stream[i];
        stream_t *st = &s->streams[stream[i]];
        st->last_t_ns = q->arr_ns;
        if (st->pending.tail < 0) st->pending.head = r; else s->rq[st->pending.tail].next = r;
        st->pending.tail = r;
    }
    for (int i = 0; i < s->c.n_streams; i++) {
        stream_t *st = &s->streams[i];
        if (st->pending.head < 0 || st->inflight >= st->qd) continue;
        int64_t t = s->rq[st->pending.head].arr_ns;
        if (t < s->now) t = s->now;
        if (st->ev_pending_t < 0 || st->ev_pending_t > t) {
            st->ev_pending_t = t;
            ev_push(s, t, EV_ARRIVE, i);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ control */

int fl_set_units(fl_sim *s, int stream, const int32_t *units, int n, char *err, size_t errlen)
{
    if (stream < 0 || stream >= s->c.n_streams) {
        snprintf(err, errlen, "stream %d does not exist (n_streams=%d)", stream, s->c.n_streams);
        return -1;
    }
    if (n < 1) { snprintf(err, errlen, "stream %d: units must not be empty", stream); return -1; }
    uint8_t seen[1024] = {0};
    for (int i = 0; i < n; i++) {
        if (units[i] < 0 || units[i] >= s->n_units) {
            snprintf(err, errlen, "unit %d does not exist (n_units=%d: %d channels x %d chips)", units[i],
                     s->n_units, s->c.n_channels, s->c.chips_per_channel);
            return -1;
        }
        if (seen[units[i]]) { snprintf(err, errlen, "unit %d given twice", units[i]); return -1; }
        seen[units[i]] = 1;
    }
    /* CWDP order: chip-major, channel fastest, so consecutive pages go to different channels */
    stream_t *st = &s->streams[stream];
    st->n_units = 0;
    int W = s->c.chips_per_channel, C = s->c.n_channels;
    for (int chip = 0; chip < W; chip++)
        for (int c = 0; c < C; c++)
            if (seen[c * W + chip]) st->units[st->n_units++] = c * W + chip;
    return 0;
}

int fl_get_units(const fl_sim *s, int stream, int32_t *out)
{
    const stream_t *st = &s->streams[stream];
    for (int i = 0; i < st->n_units; i++) out[i] = st->units[i];
    return st->n_units;
}

void fl_set_priority(fl_sim *s, int stream, int level) { s->streams[stream].prio = level; }
void fl_set_slo(fl_sim *s, int stream, double us) { s->streams[stream].slo_us = us; }

/* ------------------------------------------------------------------ preconditioning */

/* Valid pages of block b (of `used` written blocks) in a plane holding cnt valid pages: the valid
 * fraction rises linearly across the blocks (the steady state of greedy GC under uniform random
 * writes spans the victims' low valid count up to full blocks), with mean cnt / (used * G); the
 * integral of that profile over [b, b+1) rounded so that the blocks sum to cnt exactly. The last
 * block takes any rounding remainder. */
static uint32_t block_target(uint32_t cnt, uint32_t b, int used, uint32_t G)
{
    if ((int)b >= used - 1) return G;
    double m = (double)cnt / ((double)used * G);
    if (m <= 0) return 0;
    double lo = m >= 0.5 ? 2 * m - 1 : 0, hi = m >= 0.5 ? 1 : 2 * m;
    double x0 = (double)b / used, x1 = (double)(b + 1) / used;
    double F0 = lo * x0 + (hi - lo) * x0 * x0 / 2, F1 = lo * x1 + (hi - lo) * x1 * x1 / 2;
    uint32_t want = (uint32_t)(llround(F1 / m * cnt) - llround(F0 / m * cnt));
    return want > G ? G : want;
}

/* MQSim's Utils::Combination_count, as a double */
static double comb_count(double n, double k)
{
    if (k > n) return 0;
    if (k * 2 > n) k = n - k;
    if (k == 0) return 1;
    double r = n;
    for (int i = 2; i <= k; ++i) { r *= (n - i + 1); r /= i; }
    return r;
}

/* The steady-state distribution of valid pages per block under uniform random writes and greedy
 * GC, as MQSim's FTL::Perform_precondition estimates it (Van Houdt's mean-field model of d-choices
 * GC with d = 30, MQSim's Utils::Euler_estimation, its arithmetic kept): dist[0..G]. */
static void mqsim_steady_state(int G, double rho, double *dist)
{
    double *w0 = malloc((size_t)(G + 2) * sizeof(double)), *w = calloc((size_t)G + 2, sizeof(double));
    if (!w0 || !w) { free(w0); free(w); for (int i = 0; i <= G; i++) dist[i] = i == G; return; }
    for (int i = 0; i <= G; i++) dist[i] = comb_count(G, i) * pow(rho, i) * pow(1 - rho, G - i);
    w0[0] = w[0] = 1;
    for (int i = 1; i <= G + 1; i++) { w0[i] = 0; for (int j = i; j <= G; j++) w0[i] += dist[j]; }
    const double h = 0.001, max_diff = 1e-10;
    double diff = 1e14;
    for (int itr = 0; itr < 10000 && diff > max_diff; itr++) {
        double sigma = 0;
        for (int j = 1; j <= G; j++) sigma += pow(w0[j], 30);
        for (int i = 1; i < G; i++)
            w[i] = w0[i] + h * (1 - pow(w0[i], 30) - (G - sigma) * ((i * (w0[i] - w0[i + 1])) / (G * rho)));
        diff = fabs(w[0] - w0[0]);
        for (int i = 1; i <= G; i++) if (fabs(w[i] - w0[i]) > diff) diff = fabs(w[i] - w0[i]);
        for (int i = 1; i <= G + 1; i++) w0[i] = w[i];
    }
    for (int i = 0; i <= G; i++) dist[i] = w0[i] - w0[i + 1];
    free(w0); free(w);
}

/* blocks of a bucket: MQSim's (unsigned int)(probability * goal), 0 for a negative or NaN product
 * (a rho >= 1 makes the distribution meaningless; the blocks then do not fit, an error) */
static uint32_t bucket_blocks(double p, uint32_t goal)
{
    double x = p * (double)goal;
    return x > 0 && x < 4294967295.0 ? (uint32_t)x : 0;
}

/* MQSim's Address_Mapping_Unit_Page_Level::Allocate_address_for_preconditioning for one stream in
 * one plane: the valid-page counts of the blocks (out[0..n)) that hold its `assigned` pages, from
 * the steady-state distribution shifted to their mean over the stream's share of the plane's blocks
 * (blocks of 0 valid pages included: MQSim consumes them too); adj is scratch for G + 1 doubles.
 * Returns n, or -1 when they do not fit in max_blocks. */
static int mqsim_blocks(const double *dist, int G, int B, int thr, double share, uint32_t assigned,
                        double *adj, uint32_t *out, int max_blocks)
{
    uint32_t goal = (uint32_t)((double)(B - thr / 2) * share);
    if (goal == 0) return assigned ? -1 : 0;
    double model_avg = 0;
    for (int i = 0; i <= G; i++) { model_avg += dist[i] * i / G; adj[i] = dist[i]; }
    double real_avg = (double)assigned / ((double)goal * G);
    if (fabs(model_avg - real_avg) * G > 0.9999) {
        int disp = (int)((real_avg - model_avg) * G);
        if (disp > 0) {
            for (int i = 0; i < disp && i < G; i++) adj[i] = 0;
            for (int i = disp; i < G; i++) adj[i] = dist[i - disp];
        } else {
            disp = -disp;
            for (int i = 0; i < G - disp; i++) adj[i] = dist[i + disp];
            for (int i = G - disp > 0 ? G - disp : 0; i < G; i++) adj[i] = 0;
        }
    }
    uint64_t total = 0;
    for (int v = G; v >= 0; v--) total += (uint64_t)v * bucket_blocks(adj[v], goal);
    uint64_t need = assigned > total ? assigned - total : 0, left = assigned;
    uint32_t remaining = goal;
    int n = 0;
    for (int v = G; v >= 0; v--) {
        uint32_t k = bucket_blocks(adj[v], goal);
        if (k > 0 && need > 0 && v > 0) { k += (uint32_t)(need / (uint64_t)v + (need % (uint64_t)v ? 1 : 0)); need = 0; }
        if (k <= remaining) remaining -= k; else { k = remaining; remaining = 0; }
        for (uint32_t b = 0; b < k; b++) {
            if (left < (uint64_t)v) v = (int)left;  /* MQSim lowers its loop variable here */
            if (n >= max_blocks) return -1;
            out[n++] = (uint32_t)v;
            left -= (uint64_t)v;
        }
    }
    return left ? -1 : n;
}

int fl_precondition(fl_sim *s, double valid, const uint8_t *sel, int layout, const int64_t *rlo,
                    const int64_t *rhi, const int32_t *rstream, int nr, char *err, size_t errlen)
{
    for (int i = 0; i < nr; i++) {
        if (rstream[i] < 0 || rstream[i] >= s->c.n_streams || rlo[i] < 0 || rhi[i] <= rlo[i]
            || (uint64_t)rhi[i] > s->logical_pages || (i && rlo[i] < rhi[i - 1])) {
            snprintf(err, errlen, "precondition range %d (pages %lld..%lld, stream %d): ranges must be sorted, "
                     "disjoint, non-empty, within the %llu logical pages, of existing streams", i, (long long)rlo[i],
                     (long long)rhi[i], rstream[i], (unsigned long long)s->logical_pages);
            return -1;
        }
    }
    if (!(valid >= 0.0 && valid <= 1.0)) { snprintf(err, errlen, "precondition must be in [0, 1] (got %g)", valid); return -1; }
    if (layout != FL_LAYOUT_LINEAR && layout != FL_LAYOUT_MQSIM) {
        snprintf(err, errlen, "precondition layout must be %d (linear) or %d (mqsim), got %d", FL_LAYOUT_LINEAR,
                 FL_LAYOUT_MQSIM, layout);
        return -1;
    }
    if (s->now != 0 || s->host_page_writes != 0) { snprintf(err, errlen, "precondition only on a fresh simulator"); return -1; }
    uint32_t np = (uint32_t)s->n_planes, G = (uint32_t)s->G, B = (uint32_t)s->B;
    /* the linear layout spreads all of a plane's pages over one sequence of blocks (O = 1); MQSim's
     * gives every stream its own blocks in each plane (O = n_streams) */
    uint32_t O = layout == FL_LAYOUT_MQSIM ? (uint32_t)s->c.n_streams : 1;
    uint64_t thr = (uint64_t)(valid * 18446744073709551615.0);
    size_t npo = (size_t)np * O;
    uint32_t *cnt = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_blk = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_n = calloc(npo, sizeof(uint32_t));
    uint32_t *cur_want = calloc(npo, sizeof(uint32_t));
    uint32_t *used = calloc(np, sizeof(uint32_t));
    uint32_t nall = (uint32_t)s->n_units, C = (uint32_t)s->c.n_channels, W = (uint32_t)s->c.chips_per_channel;
    uint32_t D = (uint32_t)s->D, P = (uint32_t)s->P;
    uint32_t *unit_of_idx = malloc(nall * sizeof(uint32_t));
    /* MQSim layout: per (plane, stream) its blocks' valid counts at tgt[cur_blk .. cur_want) */
    uint32_t *tgt = layout == FL_LAYOUT_MQSIM ? malloc((size_t)np * B * sizeof(uint32_t)) : NULL;
    double *dist = layout == FL_LAYOUT_MQSIM ? malloc((size_t)(G + 1) * 2 * sizeof(double)) : NULL;
    uint64_t *span = layout == FL_LAYOUT_MQSIM ? calloc(O, sizeof(uint64_t)) : NULL;
    uint64_t *owned = layout == FL_LAYOUT_MQSIM ? calloc(O, sizeof(uint64_t)) : NULL;
    int rc = -1;
    if (!cnt || !cur_blk || !cur_n || !cur_want || !used || !unit_of_idx
        || (layout == FL_LAYOUT_MQSIM && (!tgt || !dist || !span || !owned))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* CWDP plane of consecutive lpns: an odometer (unit index fastest, then die, then plane) */
    for (uint32_t i = 0; i < nall; i++) unit_of_idx[i] = (i % C) * W + i / C;
    uint32_t o_u, o_d, o_p;
#define ODO_RESET() (o_u = o_d = o_p = 0)
#define ODO_PLANE() ((unit_of_idx[o_u] * D + o_d) * P + o_p)
#define ODO_NEXT() (++o_u == nall ? (o_u = 0, ++o_d == D ? (o_d = 0, ++o_p == P ? (o_p = 0) : 0) : 0) : 0)
#define SELECTED(l) (sel ? (sel[(l) >> 3] >> ((l) & 7)) & 1 \
                     : (valid >= 1.0 || (thr && (splitmix(&(uint64_t){s->c.seed * 0x9E37ull + (l)}) <= thr))))
    /* a page of a stream's range goes where CWDP over that stream's units puts it (the stream's own
     * data on its own units); other pages are striped over all units */
    int ri = 0, owner = 0;
#define PRE_PLANE(l, p) do { \
        while (ri < nr && (int64_t)(l) >= rhi[ri]) ri++; \
        if (ri < nr && (int64_t)(l) >= rlo[ri]) { \
            const stream_t *st_ = &s->streams[rstream[ri]]; \
            uint32_t nu_ = (uint32_t)st_->n_units, l_ = (uint32_t)(l); \
            p = ((uint32_t)st_->units[l_ % nu_] * D + (l_ / nu_) % D) * P + (l_ / (nu_ * D)) % P; \
            owner = rstream[ri]; \
        } else { p = ODO_PLANE(); owner = 0; } \
    } while (0)
#define SLOT(p) ((size_t)(p) * O + (O > 1 ? (uint32_t)owner : 0))
    ODO_RESET();
    for (uint64_t l = 0; l < s->logical_pages; l++, ODO_NEXT()) {
        if (span) { uint32_t any; PRE_PLANE(l, any); (void)any; span[owner]++; }
        if (!SELECTED(l)) continue;
        uint32_t p;
        PRE_PLANE(l, p);
        cnt[SLOT(p)]++;
        if (owned) owned[owner]++;
    }
    if (layout == FL_LAYOUT_LINEAR) {
        /* free blocks left: the GC threshold plus one per stream (each stream opens its own frontier
         * block in a plane before GC starts), fewer when the valid data needs them (GC is then due) */
        uint32_t max_cnt = 0;
        for (uint32_t p = 0; p < np; p++) if (cnt[p] > max_cnt) max_cnt = cnt[p];
        int u = s->B - (s->gc_thr_blocks + s->c.n_streams);
        int need = (int)((max_cnt + G - 1) / G) + 1;
        if (u < need) u = need < s->B ? need : s->B - 1;
        for (uint32_t p = 0; p < np; p++) {
            if (cnt[p] > (uint64_t)u * G) {
                snprintf(err, errlen, "precondition %g needs %u valid pages in a plane, more than the %llu that fit "
                         "beside one free block", valid, cnt[p], (unsigned long long)u * G);
                goto out;
            }
            used[p] = (uint32_t)u;
            /* block i of a plane holds c_i valid pages, c_i spread linearly (steady state of greedy GC
             * under random writes: from the victims' low valid count up to full), summing to the count */
            cur_want[p] = block_target(cnt[p], 0, u, G);
        }
    } else {
        /* MQSim: per stream, the steady-state distribution for its occupancy (rho as MQSim computes
         * it), then per plane the stream's blocks over its share of the plane */
        double *adj = dist + G + 1;
        double last_rho = -1;
        for (uint32_t o = 0; o < O; o++) {
            if (!owned[o]) continue;
            double rho = (double)owned[o] / (double)span[o] * (1 - s->c.op_ratio)
                         / (1 - (double)s->gc_thr_blocks / (double)B);
            if (rho != last_rho) { mqsim_steady_state((int)G, rho, dist); last_rho = rho; }
            for (uint32_t p = 0; p < np; p++) {
                uint32_t sharers = 0;
                for (uint32_t q = 0; q < O; q++) sharers += cnt[(size_t)p * O + q] > 0;
                size_t k = (size_t)p * O + o;
                if (!cnt[k]) continue;
                int n = mqsim_blocks(dist, (int)G, (int)B, s->gc_thr_blocks, 1.0 / sharers, cnt[k], adj,
                                     tgt + (size_t)p * B + used[p], (int)(B - 1 - used[p]));
                if (n < 0) {
                    snprintf(err, errlen, "precondition: stream %u's %u valid pages in plane %u do not fit in its "
                             "share of the plane's blocks as MQSim lays them out (MQSim stops there too: \"not "
                             "possible to assign PPA to all LPAs\"); a lower occupancy or precondition_layout="
                             "\"linear\" places them", o, cnt[k], p);
                    goto out;
                }
                cur_blk[k] = used[p];
                cur_want[k] = used[p] + (uint32_t)n;
                for (uint32_t b = used[p]; b < cur_want[k]; b++) s->blk_owner[p * B + b] = (uint8_t)o;
                used[p] += (uint32_t)n;
            }
        }
    }
    ODO_RESET();
    ri = 0;
    for (uint64_t l = 0; l < s->logical_pages; l++, ODO_NEXT()) {
        if (!SELECTED(l)) continue;
        uint32_t p;
        PRE_PLANE(l, p);
        size_t k = SLOT(p);
        uint32_t b;
        if (layout == FL_LAYOUT_LINEAR) {
            while (cur_n[k] >= cur_want[k]) { /* close the block, open the next */
                cur_blk[k]++;
                cur_n[k] = 0;
                cur_want[k] = block_target(cnt[k], cur_blk[k], (int)used[p], G);
            }
            b = cur_blk[k];
        } else {
            while (cur_n[k] >= tgt[(size_t)p * B + cur_blk[k]]) { cur_blk[k]++; cur_n[k] = 0; }
            b = cur_blk[k];
        }
        uint32_t gb = p * B + b;
        if (cur_n[k] == 0) s->blk_owner[gb] = (uint8_t)owner; /* GC of the block is charged to it */
        uint32_t ppn = gb * G + cur_n[k]++;
        s->l2p[l] = ppn + 1;
        p2l_set(s, ppn, (uint32_t)l);
        if (s->cbits) bits_set(s->cstat, s->cbits, l, (1u << s->cbits) - 1);
        s->blk_valid[gb]++;
        s->units[unit_of_plane(s, p)].valid_pages++;
    }
    /* blocks 0..used-1 are written (full); the rest stay free */
    for (uint32_t p = 0; p < np; p++) {
        plane_t *pl = &s->planes[p];
        for (uint32_t b = 0; b < used[p]; b++) s->blk_state[p * B + b] = BLK_FULL;
        pl->n_free = 0;
        for (int b = s->B - 1; b >= (int)used[p]; b--) s->free_stack[(size_t)p * s->B + (size_t)(pl->n_free++)] = (uint32_t)b;
        s->units[unit_of_plane(s, p)].free_blocks -= (int)used[p];
    }
    for (uint32_t p = 0; p < np; p++) gc_check(s, p); /* planes left below the threshold start GC */
    rc = 0;
#undef ODO_RESET
#undef ODO_PLANE
#undef ODO_NEXT
#undef PRE_PLANE
#undef SELECTED
#undef SLOT
out:
    free(unit_of_idx); free(cnt); free(cur_blk); free(cur_n); free(cur_want); free(used);
    free(tgt); free(dist); free(span); free(owned);
    return rc;
}

/* ------------------------------------------------------------------ counters */

void fl_stream_counters(const fl_sim *s, fl_stream_stats *out)
{
    for (int i = 0; i < s->c.n_streams; i++) {
        const stream_t *st = &s->streams[i];
        out[i] = st->st;
        int64_t waiting = 0;
        /* the pending list is in arrival order: count the arrived head */
        for (int32_t r = st->pending.head; r >= 0 && s->rq[r].arr_ns <= s->now; r = s->rq[r].next) waiting++;
        out[i].backlog = waiting + st->inflight;
    }
}

void fl_channel_busy(const fl_sim *s, double *busy_ns)
{
    for (int c = 0; c < s->c.n_channels; c++)
        busy_ns[c] = (double)(s->ch[c].busy_done + (s->ch[c].busy ? s->now - s->ch[c].start : 0));
}

void fl_unit_counters(const fl_sim *s, double *busy_ns, int64_t *valid_pages, int64_t *free_blocks,
                      int64_t *gc_ops, uint8_t *gc_active)
{
    for (int u = 0; u < s->n_units; u++) {
        const unit_t *un = &s->units[u];
        busy_ns[u] = (double)(un->busy_done + (un->busy ? s->now - un->start : 0));
        valid_pages[u] = un->valid_pages;
        free_blocks[u] = un->free_blocks;
        gc_ops[u] = un->gc_ops;
        gc_active[u] = 0;
        for (int k = 0; k < s->D * s->P; k++)
            if (s->planes[u * s->D * s->P + k].victim >= 0) gc_active[u] = 1;
    }
}

void fl_global_counters(const fl_sim *s, int64_t *host_page_writes, int64_t *flash_programs, int64_t *gc_runs,
                        int64_t *erases)
{
    *host_page_writes = s->host_page_writes;
    *flash_programs = s->flash_programs;
    *gc_runs = s->gc_runs;
    *erases = s->erases;
}

void fl_suspend_counters(const fl_sim *s, int64_t *program_suspends, int64_t *erase_suspends)
{
    *program_suspends = s->program_suspends;
    *erase_suspends = s->erase_suspends;
}

void fl_cache_counters(const fl_sim *s, fl_cache_stats *out) { *out = s->cst; }

size_t fl_latency_count(const fl_sim *s) { return s->lat_n; }
const double *fl_latency_values(const fl_sim *s) { return s->lat; }
const double *fl_device_latency_values(const fl_sim *s) { return s->dev_lat; }
const uint16_t *fl_latency_streams(const fl_sim *s) { return s->lat_stream; }
uint64_t fl_logical_pages(const fl_sim *s) { return s->logical_pages; }

size_t fl_mapping_bytes(const fl_sim *s)
{
    return s->logical_pages * sizeof(uint32_t) + (size_t)((s->phys_pages * (uint64_t)s->p2l_bits + 7) / 8 + 8)
           + (size_t)s->n_blocks * (sizeof(uint16_t) + 2 + sizeof(uint32_t))
           + (s->cbits ? (size_t)((s->logical_pages * (uint64_t)s->cbits + 7) / 8 + 8) : 0);
}

/* ------------------------------------------------------------------ self-check (tests) */

int fl_check(const fl_sim *s, char *err, size_t errlen)
{
    uint64_t mapped = 0;
    for (uint64_t l = 0; l < s->logical_pages; l++) {
        uint32_t p = L2P(s, l);
        if (p == NONE) continue;
        mapped++;
        if (p >= s->phys_pages || p2l_get(s, p) != l) {
            snprintf(err, errlen, "lpn %llu maps to page %u whose reverse map disagrees", (unsigned long long)l, p);
            return -1;
        }
    }
    uint64_t valid_sum = 0;
    for (uint32_t b = 0; b < s->n_blocks; b++) {
        uint32_t v = 0;
        for (uint32_t g = 0; g < (uint32_t)s->G; g++) v += (uint32_t)page_valid(s, b * (uint32_t)s->G + g);
        if (v != s->blk_valid[b]) {
            snprintf(err, errlen, "block %u: valid count %u, but %u pages are valid", b, s->blk_valid[b], v);
            return -1;
        }
        if (s->blk_state[b] == BLK_FREE && v) {
            snprintf(err, errlen, "free block %u holds %u valid pages", b, v);
            return -1;
        }
        valid_sum += v;
    }
    if (valid_sum != mapped) {
        snprintf(err, errlen, "%llu valid pages for %llu mapped lpns", (unsigned long long)valid_sum,
                 (unsigned long long)mapped);
        return -1;
    }
    int64_t uv = 0, uf = 0, pf = 0;
    for (int u = 0; u < s->n_units; u++) { uv += s->units[u].valid_pages; uf += s->units[u].free_blocks; }
    for (int p = 0; p < s->n_planes; p++) pf += s->planes[p].n_free;
    if ((uint64_t)uv != mapped || uf != pf) {
        snprintf(err, errlen, "unit counters disagree: valid %lld vs %llu, free %lld vs %lld", (long long)uv,
                 (unsigned long long)mapped, (long long)uf, (long long)pf);
        return -1;
    }
    if (s->c.cache_mode) {
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
    }
    return 0;
}
