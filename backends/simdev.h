/* Simulated block device: the timing model of hss-gym's default backend.
 *
 * Pure C (no Python): one struct per device, one call per I/O. A request occupies one of the
 * device's `servers` (internal parallelism: NVMe queues, flash channels, one HDD head) for its
 * fixed service time, then the shared data channel for its transfer (bytes / bandwidth), so both
 * the IOPS limit and the bandwidth limit of a datasheet are honoured. Queueing is FCFS per device:
 * a request starts when a server is free. Effects on top (see backends/README.md and simdev.c):
 *   - HDD: seek time growing with sqrt(distance) + rotational delay, none for sequential access;
 *   - SSD garbage collection: write service time rising with the device's utilisation;
 *   - QLC: an SLC write cache that drains with writes and refills in idle time; past it, writes
 *     run at the (much lower) post-cache bandwidth: the write cliff;
 *   - optional seeded tail noise.
 * All times are microseconds (double); positions are 4 KiB page slots on the device.
 */
#ifndef HSS_SIMDEV_H
#define HSS_SIMDEV_H

#include <stddef.h>
#include <stdint.h>

#define SIMDEV_MAX_SERVERS 64
#define SIMDEV_PAGE 4096.0

enum simdev_kind { SIMDEV_SSD = 0, SIMDEV_HDD = 1 };
enum simdev_op { SIMDEV_READ = 0, SIMDEV_WRITE = 1 };

typedef struct simdev_params {
    int kind;                 /* SIMDEV_SSD (also PMEM) or SIMDEV_HDD */
    int servers;              /* internal parallelism, 1..SIMDEV_MAX_SERVERS */
    double read_us;           /* fixed service time of a 4 KiB read, excluding its transfer */
    double write_us;          /* same for a write */
    double read_bw;           /* bytes per microsecond */
    double write_bw;
    uint64_t capacity_pages;  /* for utilisation and seek distances */
    /* SSD garbage collection: write service x (1 + (gc_max - 1) * ((u - gc_thr) / (1 - gc_thr))^2)
     * for utilisation u > gc_thr; gc_max <= 1 disables it. */
    double gc_thr, gc_max;
    /* QLC SLC cache (bytes); 0 disables. Refills at slc_refill_bw in idle time; writes past it
     * run at cliff_bw. */
    double slc_bytes, slc_refill_bw, cliff_bw;
    /* HDD mechanics: seek(d) = seek_min + (seek_max - seek_min) * sqrt(d / capacity) */
    double seek_min_us, seek_max_us, rotation_us;
    /* Tail noise: with probability noise_p a request's service time is multiplied by
     * exp(noise_sigma * |N(0,1)|). 0 disables. */
    double noise_p, noise_sigma;
} simdev_params;

typedef struct simdev_stats {
    uint64_t reads, writes, bytes_read, bytes_written;
    uint64_t bg_reads, bg_writes, bg_bytes_read, bg_bytes_written; /* migrations, evictions */
    uint64_t seq_ios;          /* HDD accesses that needed no seek */
    double busy_us;            /* summed server-busy time */
    double active_us;          /* time with at least one I/O in service (union of busy intervals) */
} simdev_stats;

typedef struct simdev {
    simdev_params p;
    double server_free[SIMDEV_MAX_SERVERS];
    double chan_free;          /* data channel free at */
    double slc_free;           /* free SLC cache bytes */
    double slc_time;           /* end of the last write: idle refill starts there */
    uint64_t head;             /* HDD: slot after the last access (sequential detection) */
    double last_end;           /* latest completion so far (for active_us) */
    uint64_t rng;              /* xorshift64* state */
    uint64_t used_pages;       /* maintained by the HSS core: utilisation for GC */
    /* The server FCFS takes next while every completion so far was later than all before it (see
     * simdev_io): then the servers free up in the order they were taken, round robin. */
    int next_server;
    int in_order;              /* 1 while that holds (since the last reset) */
    simdev_stats st;
} simdev;

/* Validate parameters; returns NULL when fine, else a static message naming the field. */
const char *simdev_check(const simdev_params *p);
void simdev_init(simdev *d, const simdev_params *p, uint64_t seed);
void simdev_reset(simdev *d, uint64_t seed);
/* Earliest time at which a server of the device is free. */
double simdev_free_at(const simdev *d);
/* Issue one I/O of `npages` pages at `slot`, arriving at time `t`; returns its completion time.
 * `background` marks migration traffic (counted apart, same timing). */
double simdev_io(simdev *d, int op, uint64_t slot, uint32_t npages, double t, int background);
/* n I/Os of `npages` pages each at slot[0..n-1] in that order, all arriving at t: as n calls of
 * simdev_io (their completions unused), in one call. */
void simdev_io_each(simdev *d, int op, const uint64_t *slot, size_t n, uint32_t npages, double t, int background);

#endif
