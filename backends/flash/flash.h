/* The flash SSD model's simulation core (SPEC section 10): an event-driven simulation of one SSD at
 * the flash-transaction level, with MQSim's timing semantics (channel bus shared by the chips of a
 * channel, one command per chip at a time, multi-plane commands on one die, ONFI NV-DDR2 command
 * overheads), a page-level FTL with per-stream write frontiers in CWDP order, greedy GC that holds
 * the chip, optional program/erase suspension and a write-back DRAM data cache, and compact state
 * (a uint32 physical page per logical page, a bit-packed reverse map).
 * Plain C99, no allocation on the hot path except for growing pools. Driven by module.c. */
#ifndef HSS_FLASH_H
#define HSS_FLASH_H

#include <stddef.h>
#include <stdint.h>

#define FL_MAX_STREAMS 64
#define FL_MAX_PLANES 8
#define FL_PRIO 3

typedef struct {
    int n_channels, chips_per_channel, dies_per_chip, planes_per_die;
    int blocks_per_plane, pages_per_block;
    int page_size;              /* bytes */
    double op_ratio;            /* over-provisioning: logical = physical * (1 - op) */
    double gc_threshold;        /* GC when a plane's free blocks < gc_threshold * blocks_per_plane */
    int64_t read_ns, program_ns, erase_ns;
    double channel_mtps;        /* mega-transfers per second */
    int channel_width;          /* bytes per transfer */
    int n_streams;
    int queue_depth[FL_MAX_STREAMS];
    uint64_t seed;
    int map_unwritten_reads;    /* MQSim's behaviour: a read of a never-written page maps it */
    /* Program/erase suspension (MQSim's CMD_Suspension_Support, Suspend_*_Time, Preferred_suspend_*;
     * all zero = off, the model's behaviour before suspension existed). A read may suspend a chip's
     * running program (susp_program) or erase (susp_erase), a program may suspend an erase, when at
     * least the *_min_ns of the running operation is left and the chip holds no suspended command. */
    int susp_program, susp_erase;
    int64_t susp_program_ns, susp_erase_ns;   /* cost of suspending (on the bus, before the command) */
    int64_t susp_program_read_min_ns, susp_erase_read_min_ns, susp_erase_write_min_ns;
    /* DRAM data cache (MQSim's Data_Cache_Manager_Flash_Advanced; cache_mode 0 = off, the model's
     * behaviour before the cache existed). cache_mode is a set of FL_CACHE_WRITE (writes absorbed
     * into DRAM and written back to flash) and FL_CACHE_READ (pages read from flash kept in DRAM);
     * read hits are served from DRAM in every mode. cache_partitioned: MQSim's EQUAL_PARTITIONING
     * (each stream its own 1/n of the capacity and its own DRAM queue), else SHARED. The DRAM
     * timing is MQSim's Data_Cache_DRAM_* (row and burst in bytes, data rate in MT/s). */
    int cache_mode, cache_partitioned;
    int64_t cache_bytes;
    int dram_row_bytes, dram_burst_bytes;
    double dram_mtps;
    int64_t dram_trcd_ns, dram_tcl_ns, dram_trp_ns;
} fl_config;

#define FL_CACHE_WRITE 1
#define FL_CACHE_READ 2

/* Cumulative counters (the Python wrapper diffs two snapshots to get a window). */
typedef struct {
    int64_t completed, reads, writes, read_bytes, write_bytes, read_tx, write_tx;
    double lat_sum_us;
    int64_t slo_viol;
    double qdelay_sum_us;
    int64_t issued;
    int64_t conflicts, gc_runs, gc_moved;
    int64_t backlog;            /* snapshot: waiting + in flight */
} fl_stream_stats;

typedef struct fl_sim fl_sim;

/* Returns NULL and writes a message into err (size errlen) on invalid configuration. */
fl_sim *fl_new(const fl_config *cfg, char *err, size_t errlen);
void fl_free(fl_sim *s);

/* Precondition: a fraction `valid` of the logical pages (chosen at random) mapped, or, when sel is
 * not NULL, exactly the pages whose bit is set in sel (logical page l: bit l & 7 of byte l >> 3;
 * MQSim's way: the pages its flows will touch first), blocks filled
 * with a spread of valid-page counts as after random overwrites under greedy GC: FL_LAYOUT_LINEAR
 * spreads a plane's counts linearly from the victims' low count up to full blocks, leaving the GC
 * threshold plus one block per stream free; FL_LAYOUT_MQSIM is MQSim's (FTL::Perform_precondition):
 * per stream its own blocks, valid counts from Van Houdt's mean-field steady state, as many blocks
 * as MQSim's rounding gives. The nr ranges of
 * logical pages [rlo, rhi) (sorted, disjoint) belong to streams rstream: their pages are laid out
 * over those streams' units (set them first with fl_set_units); other pages over all units. Only
 * on a fresh simulator (before any submit). Returns 0, or -1 with a message. */
enum { FL_LAYOUT_LINEAR = 0, FL_LAYOUT_MQSIM = 1 };
int fl_precondition(fl_sim *s, double valid, const uint8_t *sel, int layout, const int64_t *rlo,
                    const int64_t *rhi, const int32_t *rstream, int nr, char *err, size_t errlen);

/* Units are (channel, chip) pairs, u = channel * chips_per_channel + chip. Returns -1 on a bad
 * unit/stream (message in err). */
int fl_set_units(fl_sim *s, int stream, const int32_t *units, int n, char *err, size_t errlen);
int fl_get_units(const fl_sim *s, int stream, int32_t *out); /* returns count */
void fl_set_priority(fl_sim *s, int stream, int level);
void fl_set_slo(fl_sim *s, int stream, double us);

/* Append requests (times in microseconds). Returns 0, or -1 with a message naming the index. */
int fl_submit(fl_sim *s, size_t n, const double *t_us, const int32_t *stream, const int64_t *offset,
              const int64_t *size, const uint8_t *is_write, char *err, size_t errlen);
/* Simulate every event up to t_us (inclusive); now becomes t_us. */
void fl_run_until(fl_sim *s, double t_us);
double fl_now_us(const fl_sim *s);

/* Snapshots of the cumulative counters. */
void fl_stream_counters(const fl_sim *s, fl_stream_stats *out); /* n_streams entries */
/* per channel busy ns; per unit busy ns, valid pages, free blocks, gc ops */
void fl_channel_busy(const fl_sim *s, double *busy_ns);
void fl_unit_counters(const fl_sim *s, double *busy_ns, int64_t *valid_pages, int64_t *free_blocks,
                      int64_t *gc_ops, uint8_t *gc_active);
void fl_global_counters(const fl_sim *s, int64_t *host_page_writes, int64_t *flash_programs,
                        int64_t *gc_runs, int64_t *erases);
/* Suspensions issued: of programs, of erases. */
void fl_suspend_counters(const fl_sim *s, int64_t *program_suspends, int64_t *erase_suspends);
/* Data cache counters (all 0 with the cache off): pages of reads served wholly from DRAM, pages
 * of reads served partly from it, pages of writes absorbed, eager write-backs of first-written
 * pages, write-backs of dirty pages evicted (LRU), requests that waited for write-back room. */
typedef struct {
    int64_t read_hits, read_partial_hits, write_pages, writebacks, evictions, waits;
} fl_cache_stats;
void fl_cache_counters(const fl_sim *s, fl_cache_stats *out);
/* The latency log: every completed request's latency (us) and stream, in completion order. */
size_t fl_latency_count(const fl_sim *s);
const double *fl_latency_values(const fl_sim *s);
const double *fl_device_latency_values(const fl_sim *s); /* from admission to the device */
const uint16_t *fl_latency_streams(const fl_sim *s);

uint64_t fl_logical_pages(const fl_sim *s);
/* Consistency of the FTL state (mapping, reverse map, valid counts, free blocks); 0 or -1 + message. */
int fl_check(const fl_sim *s, char *err, size_t errlen);
size_t fl_mapping_bytes(const fl_sim *s); /* l2p + reverse map + per-block metadata (and the bitmaps of the l2p and chunk table written) */

#endif
