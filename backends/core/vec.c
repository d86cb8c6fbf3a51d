/* The HSS environment step in C, one env or a batch; see vec.h. */
#include "vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#define HSS_VEC_THREADS 1
#endif

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

/* Layout: harmonia = req_type, req_size, acc_intr, acc_freq, fast_cap, curr_dev, migr_intr, then
 * the free space of devices 1..N-2; sibyl = req_size, req_type, acc_intr, acc_freq, fast_cap,
 * curr_dev (hss_gym/envs/features.py). */
int hss_features(hss *h, long long page, int op, uint64_t npages, int flags, int *bins, int *nbins)
{
    hss_page *pg = page >= 0 ? hss_lookup(h, (uint64_t)page) : NULL;
    if (pg && !pg->dev)
        pg = NULL;
    int k = 0;
    int size_bin = npages <= 1 ? 0 : (int)log2((double)npages);
    if (size_bin > 7)
        size_bin = 7;
    int fast_bin = free_bin(h, 0, npages, flags);
    int acc = pg ? log_bin((double)(h->now - pg->last_access), 2.0) : 63;
    int freq = pg ? log_bin((double)pg->count, 4.0) : 0;
    int migr = pg ? log_bin((double)(h->now - pg->last_move), 2.0) : 63;
    int dev = pg ? hss_dev_of(pg) : h->home;
    if (flags & HSS_FEAT_SIBYL) {
        nbins[k] = 8; bins[k++] = size_bin;
        nbins[k] = 2; bins[k++] = op;
        nbins[k] = 64; bins[k++] = acc;
        nbins[k] = 64; bins[k++] = freq;
        nbins[k] = 8; bins[k++] = fast_bin;
        nbins[k] = h->ndev; bins[k++] = dev;
        return k;
    }
    nbins[k] = 2; bins[k++] = op;
    nbins[k] = 8; bins[k++] = size_bin;
    nbins[k] = 64; bins[k++] = acc;
    nbins[k] = 64; bins[k++] = freq;
    nbins[k] = 8; bins[k++] = fast_bin;
    nbins[k] = h->ndev; bins[k++] = dev;
    nbins[k] = 64; bins[k++] = migr;
    for (int d = 1; d < h->ndev - 1; d++) {
        nbins[k] = 8; bins[k++] = free_bin(h, d, npages, flags);
    }
    return k;
}

int hss_feature_count(const hss *h, int flags)
{
    return (flags & HSS_FEAT_SIBYL) ? 6 : 7 + (h->ndev > 2 ? h->ndev - 2 : 0);
}

int hss_features_row(hss *h, long long page, int op, uint64_t npages, int flags, int raw, void *row)
{
    int bins[HSS_FEAT_MAX], nbins[HSS_FEAT_MAX];
    int k = hss_features(h, page, op, npages, flags, bins, nbins);
    for (int i = 0; i < k; i++) {
        if (raw)
            ((int64_t *)row)[i] = bins[i];
        else
            ((float *)row)[i] = nbins[i] > 1 ? (float)bins[i] / (float)(nbins[i] - 1) : 0.0f;
    }
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
    return HSS_OK;
}

/* ------------------------------------------------------------------ batches */

/* NumPy's pairwise summation of float64 (numpy/_core/src/umath/loops_utils.h.src), which np.mean
 * uses: the Python env's eq.-3 penalty is np.mean of the penalty terms, so the sum must be this one
 * to the last bit. */
static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int j = 0; j < 8; j++)
            r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* Harmonia's eq. 3, as HSSParallelEnv._migration_reward: count the moves run; once reward_x have,
 * average the next reward_n latencies. `ran` moves are popped from the env's FIFO first. */
static int migration_reward(hss_vec_slot *s, double latency, size_t ran, double *r)
{
    *r = 0.0;
    if (s->exe_len + ran > s->exe_cap) {
        size_t cap = s->exe_cap ? 2 * s->exe_cap : 64;
        while (cap < s->exe_len + ran)
            cap *= 2;
        double *p = realloc(s->exe, cap * sizeof *p);
        if (!p)
            return HSS_ENOMEM;
        s->exe = p, s->exe_cap = cap;
    }
    for (size_t k = 0; k < ran; k++)
        s->exe[s->exe_len++] = hss_env_pop(s->e).pen;
    if (s->window_left) {
        s->window_sum += latency;
        if (--s->window_left == 0) {
            double sum = 1e-9 > s->window_sum ? 1e-9 : s->window_sum;  /* Python's max(sum, 1e-9) */
            *r = s->ref_us * (double)s->reward_n / sum - s->window_pen;
        }
    } else if (s->exe_len >= (size_t)s->reward_x) {
        s->window_pen = s->penalty * (pairwise_sum(s->exe, s->exe_len) / (double)s->exe_len);
        s->exe_len = 0;
        s->window_left = s->reward_n;
        s->window_sum = 0.0;
    }
    return HSS_OK;
}

/* One two-agent step of slot s (HSSParallelEnv.fast_step): rewards into *rp, *rm; rows as asked. */
static int slot_step(hss_vec_slot *s, int raw, int place, int move, double *rp, double *rm, void *row_p,
                     void *row_m)
{
    int needs_before = s->needs;
    long long i = s->i, nxt = i + 1;
    int next = nxt < s->end;
    if (s->e->cand < 0)
        move = -1;
    hss_env_out o;
    int rc = hss_env_step(s->h, s->e, place, move, next, next ? s->t[nxt] : 0.0, next ? s->op[nxt] : 0,
                          next ? (uint64_t)s->off[nxt] : 0, next ? (uint64_t)s->size[nxt] : 1, s->scan, s->flags,
                          raw, i, row_p, row_m, &o);
    if (rc != HSS_OK)
        return rc;
    if (i < s->nlat)
        s->lat[i] = o.latency;
    *rm = 0.0;
    if (o.ran || s->window_left || s->exe_len >= (size_t)s->reward_x)
        if ((rc = migration_reward(s, o.latency, o.ran, rm)) != HSS_OK)
            return rc;
    *rp = needs_before && o.latency > 0 ? s->ref_us / o.latency : 0.0;
    s->i = nxt;
    s->needs = next && o.needs;
    return HSS_OK;
}

static void zero_row(void *row, int nfeat, int raw)
{
    if (row)
        memset(row, 0, (size_t)nfeat * (raw ? sizeof(int64_t) : sizeof(float)));
}

/* Step slot k in v's mode. */
static int vec_step_one(hss_vec *v, int k)
{
    hss_vec_slot *s = &v->s[k];
    size_t width = (size_t)v->nfeat * (v->raw ? sizeof(int64_t) : sizeof(float));
    void *row_p = v->obs_p ? (char *)v->obs_p + (size_t)k * width : NULL;
    void *row_m = v->obs_m ? (char *)v->obs_m + (size_t)k * width : NULL;
    double rp, rm, reward;
    int rc;
    switch (v->mode) {
    case HSS_VEC_PAIR:
        rc = slot_step(s, v->raw, (int)v->act_p[k], (int)v->act_m[k], &rp, &rm, row_p, row_m);
        v->rew_p[k] = rp;
        v->rew_m[k] = rm;
        v->acting_p[k] = (uint8_t)s->needs;
        v->acting_m[k] = s->e->cand >= 0;
        break;
    case HSS_VEC_PLACEMENT:  /* SingleAgentEnv.step, then _advance to the next placement decision */
        rc = slot_step(s, v->raw, (int)v->act_p[k], -1, &reward, &rm, row_p, NULL);
        while (rc == HSS_OK && s->i < s->end && !s->needs) {
            rc = slot_step(s, v->raw, 0, -1, &rp, &rm, row_p, NULL);
            reward += rp;
        }
        v->rew_p[k] = reward;
        break;
    default:  /* HSS_VEC_MIGRATION: placement on place_dev, on to the next candidate */
        rc = slot_step(s, v->raw, s->place_dev, (int)v->act_m[k], &rp, &reward, NULL, row_m);
        while (rc == HSS_OK && s->i < s->end && s->e->cand < 0) {
            rc = slot_step(s, v->raw, s->place_dev, -1, &rp, &rm, NULL, row_m);
            reward += rm;
        }
        v->rew_m[k] = reward;
        break;
    }
    v->trunc[k] = s->i >= s->end;
    if (v->trunc[k]) {  /* the final observation, as the Python env gives it: zeros */
        zero_row(row_p, v->nfeat, v->raw);
        zero_row(row_m, v->nfeat, v->raw);
    }
    return rc;
}

/* Step slots lo..hi-1 (those not skipped); stops at the first error (*bad: its slot). */
static int vec_range(hss_vec *v, int lo, int hi, int *bad)
{
    for (int k = lo; k < hi; k++) {
        if (v->skip[k]) {
            v->trunc[k] = 0;
            if (v->rew_p)
                v->rew_p[k] = 0.0;
            if (v->rew_m)
                v->rew_m[k] = 0.0;
            continue;
        }
        int rc = vec_step_one(v, k);
        if (rc != HSS_OK) {
            *bad = k;
            return rc;
        }
    }
    return HSS_OK;
}

void hss_vec_slot_clear(hss_vec_slot *s)
{
    s->exe_len = 0;
    s->window_left = 0;
    s->window_sum = s->window_pen = 0.0;
}

int hss_vec_init(hss_vec *v, int n, int mode, int nfeat, int raw)
{
    memset(v, 0, sizeof *v);
    if (n < 1 || nfeat < 1 || nfeat > HSS_FEAT_MAX || mode < HSS_VEC_PAIR || mode > HSS_VEC_MIGRATION)
        return HSS_EINVAL;
    v->s = calloc((size_t)n, sizeof *v->s);
    if (!v->s)
        return HSS_ENOMEM;
    v->n = n, v->mode = mode, v->nfeat = nfeat, v->raw = raw, v->nthreads = 1;
    return HSS_OK;
}

/* ------------------------------------------------------------------ threads */

#ifdef HSS_VEC_THREADS
/* The caller and workers 1..T-1 take slots HSS_VEC_GRAIN at a time from a shared counter until
 * none is left, so a thread the system has not scheduled yet holds no work up: the caller waits
 * only for slots being stepped, never for a worker that has not woken (on a busy machine, the
 * batch is then never slower than one thread by more than a grain). A worker that wakes late
 * finds the counter past the end (or takes slots of the next call, which are ready then). */
#define HSS_VEC_GRAIN 4

struct hss_vec_pool {
    hss_vec *v;
    int nthreads, started, stop;
    unsigned gen;               /* calls so far: a change wakes the workers */
    int next, done;             /* next slot to take, slots stepped (atomics) */
    int rc, bad;                /* the first error and its slot (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t go, finished;
    pthread_t *th;
};

static void pool_work(hss_vec_pool *p)
{
    int n = p->v->n;
    for (;;) {
        int lo = __atomic_fetch_add(&p->next, HSS_VEC_GRAIN, __ATOMIC_ACQ_REL);
        if (lo >= n)
            return;
        int hi = lo + HSS_VEC_GRAIN < n ? lo + HSS_VEC_GRAIN : n, bad = -1;
        int rc = vec_range(p->v, lo, hi, &bad);
        if (rc != HSS_OK) {
            pthread_mutex_lock(&p->mu);
            if (p->rc == HSS_OK)
                p->rc = rc, p->bad = bad;
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_add_fetch(&p->done, hi - lo, __ATOMIC_ACQ_REL) == n) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *vec_worker(void *arg)
{
    hss_vec_pool *p = arg;
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        pool_work(p);
    }
}

static void pool_free(hss_vec_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->finished);
    free(p->th);
    free(p);
}

static hss_vec_pool *pool_new(hss_vec *v, int nthreads)
{
    hss_vec_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->v = v, p->nthreads = nthreads;
    p->next = p->done = v->n;  /* nothing to take until the first call */
    if (!(p->th = calloc((size_t)nthreads, sizeof *p->th)) || pthread_mutex_init(&p->mu, NULL)) {
        free(p->th);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->finished, NULL);
    for (int c = 1; c < nthreads; c++) {
        if (pthread_create(&p->th[p->started], NULL, vec_worker, p) != 0) {
            pool_free(p);
            return NULL;
        }
        p->started++;
    }
    return p;
}

static int pool_step(hss_vec_pool *p, int *bad)
{
    int n = p->v->n;
    pthread_mutex_lock(&p->mu);
    p->rc = HSS_OK;
    __atomic_store_n(&p->done, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&p->next, 0, __ATOMIC_RELEASE);
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    pool_work(p);
    pthread_mutex_lock(&p->mu);
    while (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < n)
        pthread_cond_wait(&p->finished, &p->mu);
    int rc = p->rc;
    *bad = p->bad;
    pthread_mutex_unlock(&p->mu);
    return rc;
}
#else
static void pool_free(hss_vec_pool *p) { (void)p; }
#endif

int hss_vec_set_threads(hss_vec *v, int nthreads)
{
    if (nthreads < 1)
        return HSS_EINVAL;
#ifdef HSS_VEC_THREADS
    pool_free(v->pool);
    v->pool = NULL;
    v->nthreads = 1;
    if (nthreads > 1) {
        if (!(v->pool = pool_new(v, nthreads)))
            return HSS_ENOMEM;
        v->nthreads = nthreads;
    }
    return HSS_OK;
#else
    return nthreads == 1 ? HSS_OK : HSS_EINVAL;
#endif
}

int hss_vec_step(hss_vec *v, int *bad)
{
#ifdef HSS_VEC_THREADS
    if (v->pool)
        return pool_step(v->pool, bad);
#endif
    return vec_range(v, 0, v->n, bad);
}

void hss_vec_free(hss_vec *v)
{
    pool_free(v->pool);
    v->pool = NULL;
    if (v->s)
        for (int k = 0; k < v->n; k++)
            free(v->s[k].exe);
    free(v->s);
    v->s = NULL;
}
