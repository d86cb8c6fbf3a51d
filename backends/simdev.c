/* Simulated block device timing model. See simdev.h for the model and backends/README.md for
 * where each parameter comes from. Deterministic: all randomness comes from a seeded xorshift. */
#include "simdev.h"

#include <math.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double rng_uniform(uint64_t *s) /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_halfnormal(uint64_t *s)
{
    double u1 = rng_uniform(s), u2 = rng_uniform(s);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return fabs(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

const char *simdev_check(const simdev_params *p)
{
    if (p->kind != SIMDEV_SSD && p->kind != SIMDEV_HDD)
        return "kind must be ssd or hdd";
    if (p->servers < 1 || p->servers > SIMDEV_MAX_SERVERS)
        return "servers (internal parallelism) must be in 1..64";
    if (!(p->read_us >= 0) || !(p->write_us >= 0))
        return "read/write latency must be >= 0";
    if (!(p->read_bw > 0) || !(p->write_bw > 0))
        return "read/write bandwidth must be > 0";
    if (p->capacity_pages == 0)
        return "capacity must be > 0";
    if (!(p->gc_thr >= 0 && p->gc_thr < 1))
        return "gc threshold must be in [0, 1)";
    if (!(p->slc_bytes >= 0) || (p->slc_bytes > 0 && (!(p->cliff_bw > 0) || !(p->slc_refill_bw >= 0))))
        return "slc cache needs cliff bandwidth > 0 and refill bandwidth >= 0";
    if (p->kind == SIMDEV_HDD && (!(p->seek_min_us >= 0) || p->seek_max_us < p->seek_min_us || !(p->rotation_us >= 0)))
        return "hdd needs 0 <= seek_min <= seek_max and rotation >= 0";
    if (!(p->noise_p >= 0 && p->noise_p <= 1) || !(p->noise_sigma >= 0))
        return "noise probability must be in [0, 1] and sigma >= 0";
    return NULL;
}

void simdev_reset(simdev *d, uint64_t seed)
{
    memset(d->server_free, 0, sizeof d->server_free);
    d->chan_free = 0;
    d->slc_free = d->p.slc_bytes;
    d->slc_time = 0;
    d->head = 0;
    d->last_end = 0;
    d->rng = seed * 0x9E3779B97F4A7C15ULL + 0xD1B54A32D192ED03ULL;
    if (d->rng == 0)
        d->rng = 1;
    d->used_pages = 0;
    d->next_server = 0;
    d->in_order = 1;
    memset(&d->st, 0, sizeof d->st);
}

void simdev_init(simdev *d, const simdev_params *p, uint64_t seed)
{
    d->p = *p;
    simdev_reset(d, seed);
}

double simdev_free_at(const simdev *d)
{
    if (d->in_order)
        return d->server_free[d->next_server];
    double m = d->server_free[0];
    for (int i = 1; i < d->p.servers; i++)
        if (d->server_free[i] < m)
            m = d->server_free[i];
    return m;
}

static inline __attribute__((always_inline)) double gc_factor(const simdev *d)
{
    if (d->p.gc_max <= 1.0)
        return 1.0;
    double u = (double)d->used_pages / (double)d->p.capacity_pages;
    if (u <= d->p.gc_thr)
        return 1.0;
    if (u > 1.0)
        u = 1.0;
    double x = (u - d->p.gc_thr) / (1.0 - d->p.gc_thr);
    return 1.0 + (d->p.gc_max - 1.0) * x * x;
}

/* Transfer time of a write through the SLC cache (QLC); updates the cache level. The cache
 * refills only while the device is idle: slc_time is when it last stopped writing. */
static double slc_transfer(simdev *d, double bytes, double t)
{
    if (t > d->slc_time) {
        d->slc_free += (t - d->slc_time) * d->p.slc_refill_bw;
        if (d->slc_free > d->p.slc_bytes)
            d->slc_free = d->p.slc_bytes;
        d->slc_time = t;
    }
    double fast = bytes < d->slc_free ? bytes : d->slc_free;
    d->slc_free -= fast;
    return fast / d->p.write_bw + (bytes - fast) / d->p.cliff_bw;
}

/* One I/O (simdev_io), inline for simdev_io_each's loop. */
static inline __attribute__((always_inline)) double io_one(simdev *d, int op, uint64_t slot, uint32_t npages, double t, int background)
{
    const simdev_params *p = &d->p;
    double bytes = (double)npages * SIMDEV_PAGE;

    /* FCFS: the request takes the server that frees up first (the first such one on a tie). Each
     * I/O ends on the channel after the one before (end >= chan_free below), so each server's free
     * time is the end of the last I/O it took, and while every end was strictly later than the one
     * before (in_order), the server that frees up first is the one taken longest ago: the servers
     * are taken round robin from 0 (all free at 0 after a reset, the lowest index first), and the
     * scan is needed only once two ends were equal (or NaN). */
    int s = 0;
    double first;
    if (d->in_order) {
        s = d->next_server;
        first = d->server_free[s];
    } else {
        first = d->server_free[0];
        for (int i = 1; i < p->servers; i++)
            if (d->server_free[i] < first) {
                first = d->server_free[i];
                s = i;
            }
    }
    double start = first > t ? first : t;

    double fixed, xfer;
    if (p->kind == SIMDEV_HDD) {
        if (slot == d->head) {
            fixed = 0;
            d->st.seq_ios++;
        } else {
            uint64_t dist = slot > d->head ? slot - d->head : d->head - slot;
            double frac = (double)dist / (double)p->capacity_pages;
            if (frac > 1.0)
                frac = 1.0;
            fixed = p->seek_min_us + (p->seek_max_us - p->seek_min_us) * sqrt(frac)
                  + rng_uniform(&d->rng) * p->rotation_us;
        }
        d->head = slot + npages;
    } else {
        fixed = op == SIMDEV_READ ? p->read_us : p->write_us * gc_factor(d);
    }
    if (op == SIMDEV_READ)
        xfer = bytes / p->read_bw;
    else if (p->slc_bytes > 0)
        xfer = slc_transfer(d, bytes, start);
    else
        xfer = bytes / p->write_bw;

    if (p->noise_p > 0 && rng_uniform(&d->rng) < p->noise_p)
        fixed *= exp(p->noise_sigma * rng_halfnormal(&d->rng));

    /* Fixed part on the server, then the transfer on the shared channel. */
    double xstart = start + fixed;
    if (d->chan_free > xstart)
        xstart = d->chan_free;
    double end = xstart + xfer;
    if (op == SIMDEV_WRITE && p->slc_bytes > 0)
        d->slc_time = end;
    if (d->in_order) {
        d->in_order = end > d->chan_free; /* chan_free: the latest end so far (0 after a reset) */
        d->next_server = s + 1 < p->servers ? s + 1 : 0;
    }
    d->chan_free = end;
    d->server_free[s] = end;
    d->st.busy_us += end - start;
    if (end > d->last_end) {
        d->st.active_us += end - (start > d->last_end ? start : d->last_end);
        d->last_end = end;
    }

    if (op == SIMDEV_READ) {
        if (background) { d->st.bg_reads++; d->st.bg_bytes_read += (uint64_t)bytes; }
        else { d->st.reads++; d->st.bytes_read += (uint64_t)bytes; }
    } else {
        if (background) { d->st.bg_writes++; d->st.bg_bytes_written += (uint64_t)bytes; }
        else { d->st.writes++; d->st.bytes_written += (uint64_t)bytes; }
    }
    return end;
}

double simdev_io(simdev *d, int op, uint64_t slot, uint32_t npages, double t, int background)
{
    return io_one(d, op, slot, npages, t, background);
}

void simdev_io_each(simdev *d, int op, const uint64_t *slot, size_t n, uint32_t npages, double t, int background)
{
    for (size_t i = 0; i < n; i++)
        io_one(d, op, slot[i], npages, t, background);
}
