/* The HSS core's data: the sizes, page flags and status codes, a page's record, the page table's
 * chunks and directory, the LRU queues' entries, the reuse regions, the slot allocators, the
 * migration queue's entries, the counters, a request, the I/O log, and struct hss, which holds them
 * all. Types and constants only, no function: every part of the core works on a struct hss, so
 * this is the bottom of the core's headers. The parts build on it in layers, each header on the
 * one below (hss_pt.h, the page table; hss_lru.h, the LRU queues; hss_move.h, the moves), and
 * hss.h, the public API the bindings include, includes it beside the functions it declares. */
#ifndef HSS_TYPES_H
#define HSS_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "simdev.h"

#define HSS_MAX_DEV 8
#define HSS_CHUNK_BITS 9
#define HSS_CHUNK (1u << HSS_CHUNK_BITS)
#define HSS_COUNT_MAX 0xFFFFu

#define HSS_RA_STREAMS 8     /* read streams readahead follows at once */
#define HSS_CLEAN_DEPTH_MAX 16 /* most chunks of a cleaning into the home in flight (hss_set_clean_depth) */

#define HSS_F_QUEUED 1u   /* page is in the migration queue */
#define HSS_F_MARK 2u     /* scratch bit for LRU compaction */
#define HSS_F_FILL 4u     /* first-touch read placed off home: read at home, then copied (scratch) */
#define HSS_F_CLEANED 8u  /* moved down by a cleaning (hss_clean) and not accessed since */
#define HSS_F_ONCE 16u    /* ... having been accessed once when it was cleaned */
#define HSS_F_WRITTEN 32u /* last accessed by a write (reuse victims: its outcome is pending) */
#define HSS_F_DEAD 64u    /* written while its region's writes were predicted never read again */
#define HSS_F_DEADEV 128u /* ... and cleaned as such, not accessed since */

typedef struct hss_page {
    uint32_t last_access;  /* step of the last access (0 = never) */
    uint32_t last_move;    /* step of the last placement or migration */
    uint32_t slot;         /* slot on its device (unused on the home device) */
    uint16_t count;        /* access count, saturating */
    uint8_t dev;           /* device index + 1; 0 = not placed yet */
    uint8_t flags;
} hss_page;

/* Page table: 512-page chunks (the unit of the candidate scanner's round-robin order), each
 * either dense (512 records, 8 KiB) or, while it holds at most HSS_LEAF_MAX touched pages, a
 * sparse leaf holding only those. A leaf finds a page by its offset's bit in a 512-bit map and
 * its rank among the set bits; records stay in insertion order (perm maps rank -> record), so an
 * insertion moves 2-byte ranks, not records. The leaf grows by ~1/4 (~1/2 past 64 records: fewer
 * reallocations, <= 28.7 B a page) and becomes a dense chunk when one more page would exceed
 * HSS_LEAF_MAX (then 8 KiB / 321 pages = 25.5 B a page), so a chunk of 64+ pages costs <= ~29
 * bytes per touched page plus its share of the directory (~52 bytes a chunk).
 * Creating a page may move records of its chunk (leaf growth or densification): a pointer from
 * pt_get()/hss_lookup() is valid until the next page creation (in hss_finish) only. */
#define HSS_LEAF_MAX 320
#define HSS_DENSE_BIT 0x80000000u  /* in chunk_keys: the chunk is dense */

typedef struct hss_leaf {
    uint64_t bits[HSS_CHUNK / 64];  /* offsets present */
    uint16_t cum[HSS_CHUNK / 64];   /* set bits in the words before */
    uint16_t n, cap;
    /* followed by hss_page rec[cap] (insertion order), then uint16_t perm[cap] (rank -> rec) */
} hss_leaf;

typedef struct hss_dir_slot { uint32_t key; uint32_t idx; } hss_dir_slot; /* idx = chunk + 1 */

typedef struct hss_pagetable {
    hss_dir_slot *dir;
    uint64_t dir_cap;          /* power of two */
    void **chunks;             /* creation order: hss_page[HSS_CHUNK] or hss_leaf */
    uint32_t *chunk_keys;      /* page >> HSS_CHUNK_BITS (< 2^31), | HSS_DENSE_BIT if dense */
    uint32_t nchunks, chunks_cap;
    uint64_t cached_key;
    void *cached;
    uint32_t cached_idx;
    int cached_dense;
    uint64_t ndense;           /* dense chunks */
    uint64_t leaf_bytes;       /* bytes allocated for leaves (with malloc's per-block overhead) */
    uint64_t touched;          /* distinct pages placed so far */
} hss_pagetable;

/* LRU entry: page number (40 bits: 4 PiB of address space) and the low 24 bits of its access
 * stamp, 8 bytes. A stamp that aliases after 2^24 steps only makes an entry look live when the
 * page is on the device anyway; compaction then keeps the oldest one. */
#define HSS_STAMP_BITS 24
#define HSS_STAMP_MASK ((1u << HSS_STAMP_BITS) - 1)
#define HSS_MAX_BYTES (((uint64_t)1 << (64 - HSS_STAMP_BITS + 12)) - 1)
typedef uint64_t hss_lru_ent;
typedef struct hss_lru { hss_lru_ent *buf; uint64_t head, len, cap; } hss_lru; /* ring; cap: 0 or 2^k */

/* Reuse victims (hss_set_reuse_victims): per region of HSS_CHUNK pages, how often the access that
 * follows a write of one of its pages is a read, or another write. Open addressing; key 0: empty. */
typedef struct hss_region { uint64_t key; uint32_t reads, writes; } hss_region; /* key = region + 1 */
typedef struct hss_regions { hss_region *tab; uint64_t cap, n; } hss_regions;

typedef struct hss_alloc { uint32_t next, nfree, cap_free; uint32_t *free; } hss_alloc;

typedef struct hss_mq_ent { uint64_t page; uint32_t step; uint8_t target; } hss_mq_ent;

typedef struct hss_counters {
    uint64_t requests, reads, writes, host_bytes_read, host_bytes_written;
    uint64_t pages_accessed, fast_pages;           /* fast-device hit ratio = fast/accessed */
    uint64_t placements, evictions, migrations, migrations_busy, migrations_stale;
    uint64_t mig_bytes_written;                    /* migrations + evictions */
    uint64_t fill_pages;                           /* first-touch reads copied to a faster device */
    uint64_t mig_pages_in[HSS_MAX_DEV], mig_pages_out[HSS_MAX_DEV];
    double first_arrival, last_completion, latency_sum;
    double host_wait_us;                           /* time requests waited for a host slot */
    double mig_delay_us;   /* queued moves' device time past the next host arrival (measured only) */
    uint64_t cleaned;      /* pages moved down by cleanings (hss_clean; also counted as migrations) */
    uint64_t clean_misses; /* reads of cleaned pages, on the device a cleaning moved them to */
    uint64_t prefetched;   /* pages moved up by readahead (hss_set_readahead; also migrations) */
    uint64_t prefetch_hits; /* reads of prefetched pages before any other access, where prefetched */

} hss_counters;

typedef struct hss_req {
    double t;                  /* issue time: arrival, or later when all host slots were busy */
    int slot;                  /* host queue slot it occupies */
    uint64_t p0, p1;           /* first and last page (inclusive) */
    uint64_t bytes;
    int op;
    int needs_placement;
    int active;
} hss_req;

/* Optional I/O log for the real-device backend (backends/uring): when on, the core appends every
 * device-level operation it performs, in order, so a real backend can replay them on files.
 * A migration/eviction is split into CREAD (page into a staging buffer) and CWRITE (buffer to its
 * new slot) because other moves may nest in between (a swap reuses the slot just freed). */
#define HSS_LOG_READ 0    /* host read run: pages page..page+n-1 at (dev, slot..slot+n-1) */
#define HSS_LOG_WRITE 1   /* host write run */
#define HSS_LOG_CREAD 2   /* move: read `page` from (dev, slot) into a buffer */
#define HSS_LOG_CWRITE 3  /* move: write `page`'s buffer to (dev, slot) */
#define HSS_LOG_END 4     /* end of a host request (page = first page, n = pages) */
typedef struct hss_log_ent { uint64_t page, slot; uint32_t n; uint8_t kind, dev, pad[2]; } hss_log_ent;
typedef struct hss_log { hss_log_ent *buf; size_t len, cap; int on; } hss_log;

typedef struct hss {
    int ndev, home;
    simdev *dev;               /* borrowed array of ndev devices */
    uint64_t cap[HSS_MAX_DEV]; /* capacity in pages (home: unbounded) */
    hss_pagetable pt;
    hss_lru lru[HSS_MAX_DEV];
    hss_alloc alloc[HSS_MAX_DEV];
    hss_mq_ent *mq;
    int mq_cap, mq_head, mq_len;
    double busy_free0, busy_free1; /* a queue-full move's devices' free time before / after it:
                                    * its delay is settled at the next arrival (c.mig_delay_us) */
    int clean_dev;             /* a pending cleaning (hss_clean): device, pages (0: none) */
    double ghost[4];           /* cleaned pages accessed once / more when cleaned, and the reads of
                                * each kind after (decaying): the cleanings' victim order */
    uint32_t clean_k;
    int reuse_victims;         /* 1: cleanings take the pages predicted dead first (see hss_lru.h) */
    hss_regions regions;       /* the reuse statistics of written pages, per region */
    hss_lru dead[HSS_MAX_DEV]; /* pages written as predicted dead, per device, oldest first */
    double dead_ghost[4];      /* cleaned pages predicted dead and their reads after (on the slower
                                * device); the same of the others (decaying): dead_first */
    uint32_t clean_chunk;      /* its pages per chunk (0: one batch) */
    uint32_t clean_first;      /* its first chunk in an idle period, doubling up to clean_chunk (0: clean_chunk) */
    uint32_t clean_run;        /* the last chunk of the current idle period (0: none yet) */
    uint32_t clean_depth;      /* most chunks into the home device in flight at once (0: no limit) */
    uint32_t clean_issued;     /* chunks run into the home device so far (indexes clean_end) */
    double clean_end[HSS_CLEAN_DEPTH_MAX]; /* completions of the last chunks run into the home device */
    uint32_t readahead;        /* most pages a read stream prefetches ahead (0: off) */
    uint64_t ra_next[HSS_RA_STREAMS]; /* recent read streams: the page after each one's last read */
    uint32_t ra_win[HSS_RA_STREAMS];  /* ... and its window (pages ahead) */
    int ra_slot;               /* the stream a new one replaces (round robin) */
    uint64_t pf_p0;            /* a pending prefetch: pages pf_p0 .. pf_p0 + pf_n - 1 (0: none) */
    uint32_t pf_n;
    uint32_t pf_probe;         /* continued streams while readahead did not pay (prefetch_pays) */
    double pf_outcome[2];      /* prefetched pages read where prefetched / wasted (decaying) */
    uint32_t min_interval;     /* scanner skips pages moved fewer than this many steps ago */
    uint32_t scan_window;      /* placed pages examined per candidate */
    uint32_t scan_chunk, scan_off;
    int qd;                    /* host queue depth: requests in flight at most */
    int preloaded;             /* 1: untouched data is already where it is placed (no fills) */
    double *inflight;          /* completion time of each host slot's last request */
    uint32_t now;              /* current step */
    hss_req cur;
    hss_counters c;
    hss_log log;               /* off unless hss_log_enable() */
} hss;

/* Status codes */
#define HSS_OK 0
#define HSS_ENOMEM (-1)
#define HSS_EINVAL (-2)
#define HSS_EFULL (-3)   /* no device can take the page (all bounded devices full, no victim) */
#define HSS_ESTEPS (-4)  /* more than 2^32 - 2 requests */
#define HSS_EBIG (-5)    /* a request touching more than HSS_MAX_REQ_PAGES pages */

/* Pages one request may touch at most (1 GiB). Each page of a request is worked on and keeps a
 * record, so without a bound one request the devices could hold (a 1 TiB write) takes minutes and
 * memory in proportion before anything fails; block layers split I/O into requests of a few MiB,
 * so a trace's request beyond this is a damaged row or a size in the wrong unit. hss_begin refuses
 * it before any per-page work (docs/inputs.md gives the memory per page). */
#define HSS_MAX_REQ_PAGES ((uint64_t)1 << 18)

/* A lookup's prefetch in progress (hss_prefetch_step). */
typedef struct hss_pf { const void *p; uint64_t page; uint32_t x; int level; } hss_pf;

/* The mark of the out-of-line parts the core's files call each other for (declared in hss_pt.h,
 * hss_lru.h and hss_move.h): hidden visibility, so a call is direct, not one through the PLT, and
 * the extension exports none of them. */
#if defined(__GNUC__) || defined(__clang__)
#define HSS_HIDDEN __attribute__((visibility("hidden")))
#else
#define HSS_HIDDEN
#endif

#endif
