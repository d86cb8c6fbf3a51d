/* The cache tier + storage tier simulator of hss/LQoCo-v0: one control period in aggregated
 * request batches (see backends/lqoco/model.py for the model and its reasons).
 *
 * Pure C99, no Python. The per-mix costs (tier microseconds per byte, latencies) are computed in
 * Python from the device profiles and handed over in lq_mix; this file runs the per-slot queues:
 * token bucket, FIFO host queue with fluid waits, bypass, closed-loop host, tier backlog, GC debt,
 * synchronous destage when the cache is full, and the request-weighted latency histogram.
 * All times are microseconds, sizes bytes.
 */
#ifndef HSS_LQOCO_SIM_H
#define HSS_LQOCO_SIM_H

#include <stddef.h>

#define LQ_BINS_PER_DECADE 20
#define LQ_BINS (10 * LQ_BINS_PER_DECADE) /* 1 us .. 10^10 us */

typedef struct lq_params {
    double capacity;    /* C, bytes */
    double w_cap;       /* W̄ * C, bytes */
    double dt;          /* slot length, us */
    int slots;          /* slots per period */
    double bucket_s;    /* token bucket depth, seconds of rate */
    int has_bypass;     /* bypass mode on */
    double bypass_us;   /* bypass threshold */
    double read_hit;
    double sync_share;  /* when full: share of idle tier time for synchronous destage */
    double gc_extra;    /* GC factor - 1 (0: no GC) */
    double gc_burst;    /* GC debt (tier us) that starts a burst */
    double gc_share;    /* share of idle tier time a burst takes */
} lq_params;

typedef struct lq_mix {
    double io;                     /* mean request size */
    double rd_cost, rd_lat;        /* read miss: tier us per byte, latency of one I/O */
    double byp_cost, byp_lat;      /* bypassed write */
    double sync_cost, sync_lat;    /* synchronous destage of one cache block */
    double cache_cost, cache_lat;  /* cache: us per byte (parallelism applied), request latency */
    double flush_io;               /* background flush I/O size */
    double flush_const;            /* SSD: tier us per flushed byte; 0 = HDD elevator below */
    double seek_min, seek_max, half_rot, write_bw; /* HDD: per-I/O positioning and transfer */
    int n;                         /* devices in the tier */
} lq_mix;

typedef struct lq_batch {
    double bytes, first, last;     /* requests arrived evenly in [first, last] */
} lq_batch;

typedef struct lq_stats {
    double admitted, flush_cap, flushed, bypassed, reads, throughput, full_s, throttled, gc_s;
} lq_stats;

typedef struct lq_sim {
    lq_params p;
    lq_mix m;
    double dirty, tokens, hq, backlog, debt;
    int gc_on;
    long slot;
    lq_batch *q;
    size_t head, len, cap;
    double hist[LQ_BINS];
    double lat_sum, n_req;
} lq_sim;

/* Validate parameters; NULL when fine, else a static message naming the field. */
const char *lq_check(const lq_params *p);
/* Initialise an empty simulator (no mix yet); returns 0, or -1 when out of memory. */
int lq_init(lq_sim *s, const lq_params *p);
void lq_free(lq_sim *s);
void lq_set_mix(lq_sim *s, const lq_mix *m);
/* Tier us per background-flushed byte with `dirty` bytes waiting. */
double lq_flush_cost(const lq_sim *s, double dirty);
/* One control period: token rate (bytes/s, INFINITY = no limit), offered reads and writes
 * (bytes/s), the host's outstanding-bytes limit, the period's read and write request sizes.
 * Returns 0, or -1 when out of memory (the state is then unspecified). */
int lq_period(lq_sim *s, double rate_bps, double read_bps, double write_bps, double host_queue_b,
              double rd_io, double wr_io, lq_stats *out);
/* The q quantile of request latency (us) at bin resolution (upper edge); NAN when empty. */
double lq_quantile(const lq_sim *s, double q);

#endif
