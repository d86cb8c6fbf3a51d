/* The L-QoCo cache/storage-tier simulator; see lqoco_sim.h and backends/lqoco/model.py.
 * The arithmetic follows the order of the model's description so that results are reproducible
 * bit for bit across builds (C99, no fast-math, no FP contraction under -std=c99). */
#include "lqoco_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lq_check(const lq_params *p)
{
    if (!(p->capacity > 0))
        return "capacity must be > 0";
    if (!(p->w_cap > 0 && p->w_cap <= p->capacity))
        return "w_cap must be in (0, capacity]";
    if (!(p->dt > 0) || p->slots < 1)
        return "dt must be > 0 and slots >= 1";
    if (!(p->bucket_s > 0))
        return "bucket_s must be > 0";
    if (p->has_bypass && !(p->bypass_us >= 0))
        return "bypass_us must be >= 0";
    if (!(p->read_hit >= 0 && p->read_hit <= 1))
        return "read_hit must be in [0, 1]";
    if (!(p->sync_share > 0 && p->sync_share <= 1))
        return "sync_share must be in (0, 1]";
    if (!(p->gc_extra >= 0) || !(p->gc_burst > 0) || !(p->gc_share > 0 && p->gc_share < 1))
        return "gc needs extra >= 0, burst > 0 and share in (0, 1)";
    return NULL;
}

int lq_init(lq_sim *s, const lq_params *p)
{
    memset(s, 0, sizeof *s);
    s->p = *p;
    s->cap = 64;
    s->q = malloc(s->cap * sizeof *s->q);
    return s->q ? 0 : -1;
}

void lq_free(lq_sim *s)
{
    free(s->q);
    s->q = NULL;
    s->cap = s->len = s->head = 0;
}

void lq_set_mix(lq_sim *s, const lq_mix *m) { s->m = *m; }

double lq_flush_cost(const lq_sim *s, double dirty)
{
    const lq_mix *m = &s->m;
    if (m->flush_const)
        return m->flush_const;
    double per_disk = dirty / m->flush_io / m->n;
    double dist = 1.0 / (per_disk + 1.0);
    double lat = m->seek_min + (m->seek_max - m->seek_min) * sqrt(dist < 1.0 ? dist : 1.0) + m->half_rot
                 + m->flush_io / m->write_bw;
    return lat / m->flush_io / m->n;
}

static void rec(lq_sim *s, double lat_us, double count)
{
    if (count <= 0)
        return;
    int i = lat_us > 1.0 ? (int)(log10(lat_us) * LQ_BINS_PER_DECADE) : 0;
    s->hist[i < LQ_BINS ? i : LQ_BINS - 1] += count;
    s->lat_sum += lat_us * count;
    s->n_req += count;
}

static int push(lq_sim *s, double bytes, double first, double last)
{
    if (s->len == s->cap) {
        if (s->head > 0) { /* compact */
            memmove(s->q, s->q + s->head, (s->len - s->head) * sizeof *s->q);
            s->len -= s->head;
            s->head = 0;
        }
        if (s->len == s->cap) {
            lq_batch *q = realloc(s->q, 2 * s->cap * sizeof *q);
            if (!q)
                return -1;
            s->q = q;
            s->cap *= 2;
        }
    }
    s->q[s->len++] = (lq_batch){bytes, first, last};
    return 0;
}

/* Admit `amount` bytes FIFO in `slot`: admissions spread evenly over the slot, each part waits
 * from its mean arrival to its mean departure. */
static void pop_front(lq_sim *s, double amount, long slot, double service_us, double io)
{
    double dt = s->p.dt, total = amount, done = 0.0, base = slot * dt;
    s->hq -= amount;
    while (amount > 1e-9 && s->head < s->len) {
        lq_batch *b = &s->q[s->head];
        double take = b->bytes < amount ? b->bytes : amount;
        double span = (b->last - b->first) * take / b->bytes;
        double wait = base + (done + 0.5 * take) / total * dt - (b->first + 0.5 * span);
        rec(s, (wait > 0 ? wait : 0.0) + service_us, take / io);
        done += take;
        b->bytes -= take;
        b->first += span;
        amount -= take;
        if (b->bytes <= 1e-9)
            s->head++;
    }
    if (s->hq < 1e-6)
        s->hq = 0.0;
}

/* Take `amount` bytes out of the newest batches (thinning them): bypassed (recorded when io > 0)
 * or never issued. */
static void pop_back(lq_sim *s, double amount, double service_us, double io)
{
    s->hq -= amount;
    while (amount > 1e-9 && s->len > s->head) {
        lq_batch *b = &s->q[s->len - 1];
        double take = b->bytes < amount ? b->bytes : amount;
        if (io > 0)
            rec(s, service_us, take / io);
        b->bytes -= take;
        amount -= take;
        if (b->bytes <= 1e-9)
            s->len--;
    }
    if (s->hq < 1e-6)
        s->hq = 0.0;
}

static double min2(double a, double b) { return b < a ? b : a; }
static double max2(double a, double b) { return b > a ? b : a; }

int lq_period(lq_sim *s, double rate_bps, double read_bps, double write_bps, double host_queue_b,
              double rd_io, double wr_io, lq_stats *st)
{
    const lq_params *p = &s->p;
    const lq_mix *m = &s->m;
    double dt = p->dt, dt_s = dt * 1e-6;
    int unlimited = isinf(rate_bps);
    double tok_add = rate_bps * dt_s;
    double tok_max = rate_bps * max2(p->bucket_s, dt_s);
    memset(st, 0, sizeof *st);
    for (int k = 0; k < p->slots; k++) {
        long slot = s->slot;
        double w = write_bps * dt_s;
        if (w > 0) {
            if (push(s, w, slot * dt, (slot + 1) * dt) != 0)
                return -1;
            s->hq += w;
        }
        double r = read_bps * dt_s;
        /* tier: read misses first; the readers are a closed loop of their own */
        double miss = r * (1.0 - p->read_hit);
        double room = host_queue_b - s->backlog / m->rd_cost;
        if (miss > room && miss > 0) {
            double scale = max2(room, 0.0) / miss;
            st->throttled += r * (1.0 - scale);
            r *= scale;
            miss *= scale;
        }
        if (miss > 0) {
            rec(s, s->backlog + m->rd_lat, miss / rd_io);
            s->backlog += miss * m->rd_cost;
        }
        double served = s->backlog < dt ? s->backlog : dt;
        s->backlog -= served;
        double idle = dt - served;
        if (s->gc_on) {
            double g = min2(s->debt, idle * p->gc_share);
            s->debt -= g;
            idle -= g;
            st->gc_s += g * 1e-6;
            if (s->debt <= 0)
                s->gc_on = 0;
        }
        int full = s->dirty >= p->w_cap;
        double cost = lq_flush_cost(s, s->dirty);
        double sync = 0.0, cap;
        if (full) {
            sync = idle * p->sync_share / m->sync_cost;
            cap = idle * (1.0 - p->sync_share) / cost + sync;
        } else {
            cap = idle / cost;
        }
        /* cache: read hits, then writes through the token bucket */
        double hits = r - miss;
        double cache_time = dt - hits * m->cache_cost;
        if (hits > 0)
            rec(s, m->cache_lat, hits / rd_io);
        double tokens = unlimited ? INFINITY : min2(s->tokens + tok_add, tok_max);
        room = full ? sync : max2(0.0, p->capacity - s->dirty) + cap;
        double adm = min2(min2(min2(tokens, s->hq), max2(0.0, cache_time) / m->cache_cost), room);
        if (!unlimited)
            s->tokens = tokens - adm;
        double before = s->dirty;
        s->dirty = max2(0.0, before + adm - cap);
        double flushed = before + adm - s->dirty;
        if (p->gc_extra > 0) {
            s->debt += flushed * cost * p->gc_extra;
            if (s->debt > p->gc_burst)
                s->gc_on = 1;
        }
        double lat = m->cache_lat + (full ? wr_io * m->sync_cost * m->n + m->sync_lat : 0.0);
        /* what stays queued: bypass and the closed-loop limit thin the newest writes, then the
         * admissions leave FIFO from the front */
        double left = s->hq - adm, byp = 0.0;
        if (p->has_bypass && left > 0) {
            double rate = adm / dt;
            double wait = rate > 0 ? left / rate : INFINITY;
            double keep = p->bypass_us * rate;
            byp = min2(min2(left - keep, max2(0.0, (wait - s->backlog - m->byp_lat) / m->byp_cost)),
                       max2(0.0, host_queue_b - s->backlog / m->byp_cost));
            if (byp > 0) {
                pop_back(s, byp, s->backlog + m->byp_lat, wr_io);
                s->backlog += byp * m->byp_cost;
                left -= byp;
                if (p->gc_extra > 0)
                    s->debt += byp * m->byp_cost * p->gc_extra;
            } else {
                byp = 0.0;
            }
        }
        double limit = max2(0.0, host_queue_b - (p->has_bypass ? s->backlog / m->byp_cost : 0.0));
        if (left > limit) {
            st->throttled += left - limit;
            pop_back(s, left - limit, 0.0, 0.0);
        }
        if (adm > 0)
            pop_front(s, adm, slot, lat, wr_io);
        st->admitted += adm;
        st->flush_cap += cap;
        st->flushed += flushed;
        st->bypassed += byp;
        st->reads += r;
        if (full)
            st->full_s += dt_s;
        s->slot = slot + 1;
    }
    st->throughput = st->admitted + st->bypassed + st->reads;
    return 0;
}

double lq_quantile(const lq_sim *s, double q)
{
    double total = 0.0;
    for (int i = 0; i < LQ_BINS; i++)
        total += s->hist[i];
    if (total <= 0)
        return NAN;
    double need = q * total, acc = 0.0;
    for (int i = 0; i < LQ_BINS; i++) {
        acc += s->hist[i];
        if (acc >= need)
            return pow(10.0, (double)(i + 1) / LQ_BINS_PER_DECADE);
    }
    return pow(10.0, (double)LQ_BINS / LQ_BINS_PER_DECADE);
}
