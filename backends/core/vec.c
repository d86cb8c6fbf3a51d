/* A batch of HSS envs stepped in one call; see vec.h. */
#include "vec.h"

#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#define HSS_VEC_THREADS 1
#endif

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

/* Grow a slot's array to hold `need` entries of `size` bytes (capacity *cap, doubled). */
static int grow(void **a, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return HSS_OK;
    size_t c = *cap ? 2 * *cap : 64;
    while (c < need)
        c *= 2;
    void *p = realloc(*a, c * size);
    if (!p)
        return HSS_ENOMEM;
    *a = p, *cap = c;
    return HSS_OK;
}

/* Harmonia's eq. 3: count the moves run; once reward_x have, average the next reward_n latencies.
 * `ran` moves are popped from the env's FIFO first (their decision steps into s->ran_step); a
 * window credits the decision steps of the moves counted when it opened (s->credit). */
static int migration_reward(hss_vec_slot *s, double latency, size_t ran, double *r)
{
    *r = 0.0;
    if (grow((void **)&s->exe, &s->exe_cap, s->exe_len + ran, sizeof *s->exe) != HSS_OK
        || grow((void **)&s->exe_step, &s->step_cap, s->exe_len + ran, sizeof *s->exe_step) != HSS_OK
        || grow((void **)&s->ran_step, &s->ran_cap, ran, sizeof *s->ran_step) != HSS_OK)
        return HSS_ENOMEM;
    for (size_t k = 0; k < ran; k++) {
        hss_pend p = hss_env_pop(s->e);
        s->ran_step[k] = s->exe_step[s->exe_len] = p.step;
        s->exe[s->exe_len++] = p.pen;
    }
    s->ran_len = ran;
    if (s->window_left) {
        s->window_sum += latency;
        if (--s->window_left == 0) {
            double sum = 1e-9 > s->window_sum ? 1e-9 : s->window_sum;  /* Python's max(sum, 1e-9) */
            *r = s->ref_us * (double)s->reward_n / sum - s->window_pen;
            s->credited = 1;
        }
    } else if (s->exe_len >= (size_t)s->reward_x) {
        if (grow((void **)&s->credit, &s->credit_cap, s->exe_len, sizeof *s->credit) != HSS_OK)
            return HSS_ENOMEM;
        memcpy(s->credit, s->exe_step, s->exe_len * sizeof *s->credit);
        s->credit_len = s->exe_len;
        s->window_pen = s->penalty * (pairwise_sum(s->exe, s->exe_len) / (double)s->exe_len);
        s->exe_len = 0;
        s->window_left = s->reward_n;
        s->window_sum = 0.0;
    }
    return HSS_OK;
}

int hss_slot_advance(hss_vec_slot *s, int raw, int place, int move, void *row_p, void *row_m, hss_env_out *o)
{
    long long i = s->i, nxt = i + 1;
    int next = nxt < s->end;
    if (s->e->cand < 0)
        move = -1;
    s->ran_len = 0, s->credited = 0;
    return hss_env_step(s->h, s->e, place, move, next, next ? s->t[nxt] : 0.0, next ? s->op[nxt] : 0,
                        next ? (uint64_t)s->off[nxt] : 0, next ? (uint64_t)s->size[nxt] : 1, s->scan, s->flags,
                        raw, i, row_p, row_m, o);
}

int hss_slot_rewards(hss_vec_slot *s, const hss_env_out *o, double latency, double *rp, double *rm)
{
    int rc;
    *rm = 0.0;
    if (o->ran || s->window_left || s->exe_len >= (size_t)s->reward_x)
        if ((rc = migration_reward(s, latency, o->ran, rm)) != HSS_OK)
            return rc;
    if (s->latency_reward)
        *rp = -latency / s->ref_us;
    else
        *rp = s->needs && latency > 0 ? s->ref_us / latency : 0.0;
    s->i++;
    s->needs = s->i < s->end && o->needs;
    return HSS_OK;
}

/* One two-agent step of slot s (HSSParallelEnv.fast_step): rewards into *rp, *rm; rows as asked. */
static int slot_step(hss_vec_slot *s, int raw, int place, int move, double *rp, double *rm, void *row_p,
                     void *row_m)
{
    hss_env_out o;
    int rc = hss_slot_advance(s, raw, place, move, row_p, row_m, &o);
    return rc != HSS_OK ? rc : hss_slot_rewards(s, &o, o.latency, rp, rm);
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

/* The first lookup of a slot's step misses the caches (each env's page table is its own, far
 * larger than the caches beyond a few envs): the next request's first page (hss_begin, then its
 * features). It is a chain of dependent misses (hss_prefetch_step), so it is prefetched one level
 * per slot stepped before it: the slot HSS_VEC_AHEAD - 1 ahead gets level 0 (the request's trace
 * entries), the next slot the last level (the page's record), each level carrying on from what the
 * one before found (the slot's pf, valid in this call only). Slots of this range only: another
 * thread's slots change meanwhile. */
#define HSS_VEC_AHEAD 6

#define HSS_VEC_PF_FIELDS (-2) /* a slot's pf.level after level 0: the core's fields next */

/* The core's fields the step updates on every request (the counters, the fast device's LRU queue
 * and both devices' timing state), and the first level of the lookup. */
static void vec_prefetch_fields(hss_vec_slot *s)
{
    const hss *h = s->h;
    __builtin_prefetch(&h->c);
    __builtin_prefetch(&h->lru[0]);
    __builtin_prefetch(&h->dev[0].chan_free);
    __builtin_prefetch(&h->dev[h->home].chan_free);
    hss_prefetch_step(h, &s->pf, (uint64_t)s->off[s->i + 1] >> 12, 0);
}

/* One more level for slot k (`level` 0: the first, else the next one); a slot first met at a
 * later level (the first slots of a range) starts there. */
static void vec_prefetch(const hss_vec *v, int k, int level)
{
    hss_vec_slot *s = &v->s[k];
    if (s->pf_call != v->calls) {
        long long i = s->i + 1;
        if (v->skip[k] || i >= s->end)
            return;
        s->pf_call = v->calls;
        if (level > 0) {
            vec_prefetch_fields(s);
            return;
        }
        __builtin_prefetch(&s->t[i]);
        __builtin_prefetch(&s->op[i]);
        __builtin_prefetch(&s->off[i]);
        __builtin_prefetch(&s->size[i]);
        /* the core's fields the step reads first: the page table's directory (the lookup's first
         * level reads it) and the request being finished, and the env's state */
        __builtin_prefetch(&s->h->pt);
        __builtin_prefetch(&s->h->cur);
        __builtin_prefetch(s->e);
        s->pf.level = HSS_VEC_PF_FIELDS;
    } else if (s->pf.level == HSS_VEC_PF_FIELDS) {
        vec_prefetch_fields(s);
    } else if (s->pf.level >= 0) {
        hss_prefetch_step(s->h, &s->pf, s->pf.page, s->pf.level + 1);
    }
}

/* Step slots lo..hi-1 (those not skipped); stops at the first error (*bad: its slot). */
static int vec_range(hss_vec *v, int lo, int hi, int *bad)
{
    for (int k = lo; k < hi; k++) {
        for (int j = 1; j <= HSS_VEC_AHEAD && k + j < hi; j++)
            vec_prefetch(v, k + j, HSS_VEC_AHEAD - j);
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
    s->exe_len = s->ran_len = s->credit_len = 0;
    s->credited = 0;
    s->window_left = 0;
    s->window_sum = s->window_pen = 0.0;
}

void hss_vec_slot_free(hss_vec_slot *s)
{
    free(s->exe);
    free(s->exe_step);
    free(s->ran_step);
    free(s->credit);
    s->exe = NULL, s->exe_step = s->ran_step = s->credit = NULL;
    s->exe_cap = s->step_cap = s->ran_cap = s->credit_cap = 0;
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
    v->calls++; /* the slots' prefetch states of the call before are stale */
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
            hss_vec_slot_free(&v->s[k]);
    free(v->s);
    v->s = NULL;
}
