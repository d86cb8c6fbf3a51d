/* The HSS environment in C: the observation features and one env's step; see env.h. */
#include "env.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ features */

/* Table-1 bins (Harmonia) of a count or interval x: floor(per_octave * log2(1 + x)), at most 63. */
static int log_bin(double x, double per_octave)
{
    int b = (int)(per_octave * log2(1.0 + x));
    return b > 63 ? 63 : b;
}

/* room_feature="fits": bin 0 when the request's `npages` pages do not fit in device d's free space
 * (placing it there evicts on the critical path), else 1 + the free fraction in sevenths;
 * room_feature="binary" (`binary`): 0 or 7, whether it fits alone. */
static int room_bin(const hss *h, int d, uint64_t npages, int binary)
{
    uint64_t used = h->dev[d].used_pages, need = npages ? npages : 1;
    if (used + need > h->cap[d])
        return 0;
    if (binary)
        return 7;
    int b = 1 + (int)(7.0 * (1.0 - (double)used / (double)h->cap[d]));
    return b > 7 ? 7 : b;
}

/* Free-space bin of device d: room_bin, or eighths of the free fraction (room_feature="fraction"). */
static int free_bin(const hss *h, int d, uint64_t npages, int flags)
{
    if (flags & HSS_FEAT_FITS)
        return room_bin(h, d, npages, flags & HSS_FEAT_BINARY);
    double fr = 1.0 - (double)h->dev[d].used_pages / (double)h->cap[d];
    int b = fr <= 0 ? 0 : (int)(fr * 8.0);
    return b > 7 ? 7 : b;
}

/* The feature table: names and bins (0: one per device) in Harmonia's order, then the free space
 * of devices 1..N-2 (free_d, 8 bins each); Sibyl's six features are sibyl_order of these. */
enum { F_REQ_TYPE, F_REQ_SIZE, F_ACC_INTR, F_ACC_FREQ, F_FAST_CAP, F_CURR_DEV, F_MIGR_INTR, F_FREE };
static const hss_feature_desc base_features[F_FREE] = {
    {"req_type", 2}, {"req_size", 8}, {"acc_intr", 64}, {"acc_freq", 64}, {"fast_cap", 8}, {"curr_dev", 0},
    {"migr_intr", 64},
};
static const int sibyl_order[] = {F_REQ_SIZE, F_REQ_TYPE, F_ACC_INTR, F_ACC_FREQ, F_FAST_CAP, F_CURR_DEV};
#define N_SIBYL (int)(sizeof sibyl_order / sizeof *sibyl_order)
#define FREE_BINS 8

int hss_feature_count(int ndev, int flags)
{
    return (flags & HSS_FEAT_SIBYL) ? N_SIBYL : F_FREE + (ndev > 2 ? ndev - 2 : 0);
}

/* Table entry of observation column k. */
static int feature_id(int flags, int k)
{
    return (flags & HSS_FEAT_SIBYL) ? sibyl_order[k] : k;
}

static int feature_bins(int id, int ndev)
{
    return id >= F_FREE ? FREE_BINS : base_features[id].bins ? base_features[id].bins : ndev;
}

int hss_feature_layout(int ndev, int flags, hss_feature_desc *out)
{
    int n = hss_feature_count(ndev, flags);
    for (int k = 0; k < n; k++) {
        int id = feature_id(flags, k);
        if (id < F_FREE)
            out[k] = base_features[id];
        else
            snprintf(out[k].name, sizeof out[k].name, "free_%d", id - F_FREE + 1);
        out[k].bins = feature_bins(id, ndev);
    }
    return n;
}

int hss_features(hss *h, long long page, int op, uint64_t npages, int flags, int *bins, int *nbins)
{
    hss_page *pg = page >= 0 ? hss_lookup(h, (uint64_t)page) : NULL;
    if (pg && !pg->dev)
        pg = NULL;
    int v[F_FREE];
    v[F_REQ_TYPE] = op;
    /* floor(log2(npages)), at most 7: the index of the highest set bit */
    v[F_REQ_SIZE] = npages <= 1 ? 0 : npages >= 128 ? 7 : 63 - __builtin_clzll(npages);
    v[F_ACC_INTR] = pg ? log_bin((double)(h->now - pg->last_access), 2.0) : 63;
    v[F_ACC_FREQ] = pg ? log_bin((double)pg->count, 4.0) : 0;
    v[F_FAST_CAP] = free_bin(h, 0, npages, flags);
    v[F_CURR_DEV] = pg ? hss_dev_of(pg) : h->home;
    v[F_MIGR_INTR] = pg ? log_bin((double)(h->now - pg->last_move), 2.0) : 63;
    /* the columns of hss_feature_layout: Sibyl's (all of the table's first part), or the table */
    int ndev = h->ndev;
    if (flags & HSS_FEAT_SIBYL) {
        for (int k = 0; k < N_SIBYL; k++) {
            int id = sibyl_order[k];
            bins[k] = v[id];
            nbins[k] = base_features[id].bins ? base_features[id].bins : ndev;
        }
        return N_SIBYL;
    }
    for (int k = 0; k < F_FREE; k++) {
        bins[k] = v[k];
        nbins[k] = base_features[k].bins ? base_features[k].bins : ndev;
    }
    int n = hss_feature_count(ndev, flags);
    for (int k = F_FREE; k < n; k++) {
        bins[k] = free_bin(h, k - F_FREE + 1, npages, flags);
        nbins[k] = FREE_BINS;
    }
    return n;
}

int hss_features_row(hss *h, long long page, int op, uint64_t npages, int flags, int raw, void *row)
{
    int bins[HSS_FEAT_MAX], nbins[HSS_FEAT_MAX];
    int k = hss_features(h, page, op, npages, flags, bins, nbins);
    if (raw)
        for (int i = 0; i < k; i++)
            ((int64_t *)row)[i] = bins[i];
    else
        for (int i = 0; i < k; i++)
            ((float *)row)[i] = nbins[i] > 1 ? (float)bins[i] / (float)(nbins[i] - 1) : 0.0f;
    return k;
}

/* ------------------------------------------------------------------ one env */

int hss_page_device(hss *h, long long page)
{
    hss_page *pg = hss_lookup(h, (uint64_t)page);
    return pg && pg->dev ? hss_dev_of(pg) : h->home;
}

void hss_env_free(hss_env *e)
{
    free(e->pend);
    e->pend = NULL;
    e->pend_head = e->pend_len = e->pend_cap = 0;
}

static int pend_push(hss_env *e, long long step, double pen)
{
    if (e->pend_len == e->pend_cap) {
        size_t cap = e->pend_cap ? 2 * e->pend_cap : 64;
        hss_pend *p = malloc(cap * sizeof *p);
        if (!p)
            return HSS_ENOMEM;
        for (size_t k = 0; k < e->pend_len; k++)  /* unwrap the ring */
            p[k] = e->pend[(e->pend_head + k) % e->pend_cap];
        free(e->pend);
        e->pend = p, e->pend_cap = cap, e->pend_head = 0;
    }
    e->pend[(e->pend_head + e->pend_len) % e->pend_cap] = (hss_pend){step, pen};
    e->pend_len++;
    return HSS_OK;
}

hss_pend hss_env_pop(hss_env *e)
{
    hss_pend p = e->pend[e->pend_head];
    e->pend_head = (e->pend_head + 1) % e->pend_cap;
    e->pend_len--;
    return p;
}

/* Begin a request, pick the candidate and write the rows: the common tail of begin and step. */
static int env_next(hss *h, hss_env *e, double t, int op, uint64_t offset, uint64_t size, int scan, int flags,
                    int raw, void *obs_p, void *obs_m)
{
    int rc = hss_begin(h, t, op, offset, size);
    if (rc != HSS_OK)
        return rc;
    uint64_t page;
    e->cand = scan && hss_candidate(h, &page) ? (long long)page : -1;
    uint64_t npages = h->cur.p1 - h->cur.p0 + 1;
    if (obs_p)
        hss_features_row(h, (long long)h->cur.p0, op, npages, flags, raw, obs_p);
    if (obs_m)
        hss_features_row(h, e->cand, op, npages, flags, raw, obs_m);
    return HSS_OK;
}

int hss_env_begin(hss *h, hss_env *e, double t, int op, uint64_t offset, uint64_t size, int scan, int flags,
                  int raw, void *obs_p, void *obs_m)
{
    e->evict_seen = 0;
    e->delay_seen = 0.0;
    e->pend_len = e->pend_head = 0;
    int rc = env_next(h, e, t, op, offset, size, scan, flags, raw, obs_p, obs_m);
    if (rc != HSS_OK)
        return rc;
    e->cand_dev = e->cand >= 0 ? hss_page_device(h, e->cand) : -1;
    e->moved_seen = h->c.migrations + h->c.migrations_stale;
    return HSS_OK;
}

int hss_env_step(hss *h, hss_env *e, int place, int move, int next, double t, int op, uint64_t offset,
                 uint64_t size, int scan, int flags, int raw, long long step, void *obs_p, void *obs_m,
                 hss_env_out *out)
{
    if (!h->cur.active)
        return HSS_EINVAL;
    if (!h->cur.needs_placement)
        place = 0;
    int rc = hss_finish(h, place, &out->latency);
    if (rc != HSS_OK)
        return rc;
    int queued = 0;
    double pen = 0.0;
    if (move >= 0 && e->cand >= 0 && move != e->cand_dev) {
        hss_page *pg = hss_lookup(h, (uint64_t)e->cand);
        if (pg && pg->dev) {
            double acc = (double)(h->now - pg->last_access), mig = (double)(h->now - pg->last_move);
            pen = 1.0 / (acc < 1 ? 1 : acc) + 1.0 / (mig < 1 ? 1 : mig);
        }
        rc = hss_enqueue(h, (uint64_t)e->cand, move);
        if (rc < 0)
            return rc;
        queued = rc;
    }
    out->needs = 0;
    e->cand = -1;
    if (next) {
        rc = env_next(h, e, t, op, offset, size, scan, flags, raw, obs_p, obs_m);
        if (rc != HSS_OK)
            return rc;
        out->needs = h->cur.needs_placement;
    }
    out->evicted = (long long)(h->c.evictions - e->evict_seen);
    e->evict_seen = h->c.evictions;
    if (queued && (rc = pend_push(e, step, pen)) != HSS_OK)
        return rc;
    uint64_t moved = h->c.migrations + h->c.migrations_stale;
    size_t executed = (size_t)(moved - e->moved_seen);
    e->moved_seen = moved;
    out->executed = executed > 0;
    out->ran = executed < e->pend_len ? executed : e->pend_len;
    out->delay = 0.0;
    if (executed) {  /* queued moves run (or are dropped as stale) in FIFO order */
        out->delay = h->c.mig_delay_us - e->delay_seen;
        e->delay_seen = h->c.mig_delay_us;
    }
    e->cand_dev = e->cand >= 0 ? hss_page_device(h, e->cand) : -1;
    if (e->lat && step >= 0 && step < e->nlat)
        e->lat[step] = out->latency;
    return HSS_OK;
}
