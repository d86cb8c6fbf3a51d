/* The HSS core: what a hybrid storage system's data-management layer keeps and does, in C.
 *
 *  - page table: logical 4 KiB page -> 16-byte metadata (device, slot, access count, last access,
 *    last placement/migration), in a radix table of 512-page chunks allocated on first touch and
 *    found through a hash directory; a chunk with few touched pages is a sparse leaf holding only
 *    those, so a sparse address space costs memory only per touched page (hss_types.h: hss_leaf);
 *  - per-device slot allocators (bump + free list). The last device is the *home* device: it is
 *    large enough for everything and maps pages to their own logical address (identity), as the
 *    backing store of an HSS does, so its seek distances and sequentiality are the trace's own;
 *  - per-device LRU order (except home) as a lazy queue of (page, access stamp): exact LRU with
 *    O(1) amortised cost and no per-page links;
 *  - the migration queue (default 10) executed in device idle time, or at once (low priority)
 *    when a new move arrives while it is full;
 *  - the candidate scanner of the migration agent (Harmonia 4.3): a round-robin cursor over placed
 *    pages that skips recently placed or migrated pages and pages already queued, and prefers the
 *    longest migration interval.
 * Requests are processed in two phases so a policy can decide in between:
 *   hss_begin()  (issues the request when it has arrived and one of the host's `queue_depth`
 *                 slots is free — a real host's bounded outstanding I/O, e.g. SATA NCQ's 32 —
 *                 runs idle-time migrations, tells whether a placement decision is needed)
 *   hss_finish() (applies the placement, evicts LRU pages on the critical path if the target is
 *                 full, issues the I/O, returns the latency).
 * Request indices ("steps") start at 1; 0 in a timestamp field means "never".
 *
 * The public API, which the bindings (module.c, env.c, vec.c, the real-device engine) include:
 * the data structures are in hss_types.h, included here, and the functions are declared below.
 * Their code is split by concept, each part on the one below it: the page table (hss_pt.c), the
 * LRU queues and the reuse predictor (hss_lru.c), the moves, the migration queue and the idle-time
 * work (hss_move.c), and on top the requests and the lifecycle (hss.c); each part's header
 * (hss_pt.h, hss_lru.h, hss_move.h) holds its per-page fast paths and its hidden parts.
 */
#ifndef HSS_CORE_H
#define HSS_CORE_H

#include "hss_types.h"

int hss_init(hss *h, int ndev, simdev *dev, const uint64_t *cap, int mq_cap,
             uint32_t min_interval, uint32_t scan_window, int queue_depth);
void hss_free(hss *h);
int hss_reset(hss *h, uint64_t seed);
/* Readahead (0: off, the default): a read that starts where one of the last HSS_RA_STREAMS read
 * streams ended continues it, and the pages after it, up to a window that doubles with each
 * sequential read to at most `pages`, are copied from the slower devices to the fastest one in the
 * next idle time, into its free room only (none evicted). */
int hss_set_readahead(hss *h, uint32_t pages);
/* Chunks of a cleaning into the home device in flight at once (0: no limit, the default; at most
 * HSS_CLEAN_DEPTH_MAX): the next chunk starts in idle time only once the one `depth` chunks
 * before it has completed, so host I/O at the home queues behind at most that many. */
int hss_set_clean_depth(hss *h, uint32_t depth);

/* Phase 1 of a request; returns HSS_OK or an error (HSS_EBIG: it touches more than
 * HSS_MAX_REQ_PAGES pages; nothing changed). h->cur.needs_placement tells if a placement
 * decision is needed (a write, or a first touch). */
int hss_begin(hss *h, double t, int op, uint64_t offset, uint64_t size);
/* Phase 2: place on device `place` (ignored when no decision is needed); *latency gets the
 * request's latency in microseconds. */
int hss_finish(hss *h, int place, double *latency);

/* Requests start..stop-1 of a trace's columns with every placement on device `place` (the
 * fixed-placement fast path: Fast-Only, Slow-Only, fill-then-LRU), each latency into lat[i].
 * On an error *at is the failing request (HSS_EINVAL also for a negative offset or size <= 0). */
int hss_replay(hss *h, const double *t, const uint8_t *op, const int64_t *off, const int64_t *size, int place,
               double *lat, size_t start, size_t stop, size_t *at);

/* Victim order of cleanings: 0 (LRU, or the pages accessed once first: see hss_move.c), 1 (reuse
 * victims: the pages whose region's written pages are seldom read again first). Off after a reset;
 * statistics are gathered from the first request after it is switched on. */
int hss_set_reuse_victims(hss *h, int on);

/* Migration interface. */
hss_page *hss_lookup(hss *h, uint64_t page);
/* Prefetch the page table for a lookup of `page` soon, one dependent level per call: `level` 0
 * fetches its directory slot, and each higher level reads the levels below it (fetched by the
 * calls before, so they hit the cache) and fetches the next one: 1 the chunk's pointer and key,
 * 2 a leaf's map word and rank counts (a dense chunk's record), 3 the leaf's rank entry, 4 the
 * record. Calls that raise the level for the same page, spread over other work (vec.c: one env
 * apart), overlap the misses of many lookups instead of waiting for each in turn. Reads only: no
 * result depends on it. */
void hss_prefetch(const hss *h, uint64_t page, int level);
/* The same, each level carrying on from what the level before found (in *st) instead of walking
 * the levels below again: the caller keeps one hss_pf (hss_types.h) per lookup, calls level 0 first and the
 * levels after it in order, and the page table must not change meanwhile (vec.c: within one call
 * of hss_vec_step, before the env is stepped). A level called out of order does nothing. */
void hss_prefetch_step(const hss *h, hss_pf *st, uint64_t page, int level);
int hss_candidate(hss *h, uint64_t *page);             /* 1 if a candidate was found */
/* Ask for device d's k least recently used pages to be moved to d + 1 in idle time, after the
 * queued moves; counted as migrations. With chunk = 0, as one batch (one read from d, one
 * sequential write to d + 1, as a critical-path eviction is modelled); with chunk > 0, in chunks
 * of that many pages, each started only while both devices have a free server, so host I/O waits
 * behind a chunk per server at most (an I/O scheduler's idle class) instead of a whole batch.
 * One cleaning is pending at a time: with one pending, returns 0 (nothing asked), or with `force`
 * runs its next chunk (all of it with chunk = 0) now at low priority (as a full migration queue's
 * oldest move) and asks for the new one instead. Returns 1 when asked, or an error for a bad
 * device or k. */
int hss_clean(hss *h, int d, uint32_t k, int force, uint32_t chunk, uint32_t first);
int hss_enqueue(hss *h, uint64_t page, int target);    /* 1 queued, 0 ignored (stay/invalid) */
/* Run queued migrations that can start before time t (idle time). */
int hss_run_idle(hss *h, double t);
/* Move one page now (used by the scheduled migrator and by policies that migrate on the critical
 * path); *done gets the completion time. */
int hss_move(hss *h, uint64_t page, int target, double t, double *done);
/* Move one page instantly with no device time (idealised; the Oracle's free migration). HSS_EFULL
 * if the target has no room. */
int hss_remap(hss *h, uint64_t page, int target);

int hss_dev_of(const hss_page *pg);                    /* -1 if not placed */
uint64_t hss_used(const hss *h, int d);
size_t hss_memory_bytes(const hss *h);                 /* page table + LRU + allocator bytes */

/* I/O log (see HSS_LOG_*): enable/disable (disabling drops entries), and the slot of a page. */
void hss_log_enable(hss *h, int on);
uint64_t hss_slot_of(const hss *h, uint64_t page, const hss_page *pg);

#endif
