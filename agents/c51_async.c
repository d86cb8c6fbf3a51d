/* Gradient steps of a C51 trainer in a background thread: see c51_async.h. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#define C51_THREADS 1
#include <pthread.h>
#include <unistd.h>
#else
#define C51_THREADS 0
#endif

#include "c51_async.h"

#include <stdlib.h>
#include <string.h>

/* Transitions side by side: observations and next observations (nin floats each), rewards,
 * discounts, actions and versions. */
typedef struct {
    float *obs, *next, *rew, *disc;
    int64_t *act, *ver;
} rows;

static int rows_alloc(rows *r, size_t n, size_t nin)
{
    r->obs = malloc(n * nin * sizeof(float));
    r->next = malloc(n * nin * sizeof(float));
    r->rew = malloc(n * sizeof(float));
    r->disc = malloc(n * sizeof(float));
    r->act = malloc(n * sizeof(int64_t));
    r->ver = malloc(n * sizeof(int64_t));
    return r->obs && r->next && r->rew && r->disc && r->act && r->ver ? 0 : -1;
}

static void rows_free(rows *r)
{
    free(r->obs);
    free(r->next);
    free(r->rew);
    free(r->disc);
    free(r->act);
    free(r->ver);
}

/* dst row d = src row j (src->disc NULL: gamma; src->ver NULL: version 0). */
static void rows_copy(rows *dst, size_t d, const rows *src, size_t j, size_t nin, float gamma)
{
    memcpy(dst->obs + d * nin, src->obs + j * nin, nin * sizeof(float));
    memcpy(dst->next + d * nin, src->next + j * nin, nin * sizeof(float));
    dst->rew[d] = src->rew[j];
    dst->disc[d] = src->disc ? src->disc[j] : gamma;
    dst->act[d] = src->act[j];
    dst->ver[d] = src->ver ? src->ver[j] : 0;
}

struct c51_async {
    c51_trainer *t;
    int cap, nin, batch, queue, shadow;
    rows ring;        /* the replay ring (written by c51_async_push; disc and ver may be NULL) */
    float *mcache;    /* the target cache */
    int64_t *mgen, *mver;
    /* The queue: job k's minibatch slots at idx + k * batch. */
    int32_t *idx;
    int64_t *gen;
    double *scale, *r_lo, *r_hi;
    long long *exps;  /* transitions pushed when job k was submitted */
    int head, count;  /* next job to fill; jobs queued (the oldest may be running) */
    int wake;         /* a sleeping worker is woken when this many jobs are queued */
    int busy;         /* a thread (the worker, or the owner helping) is running the oldest job */
    long long pushed; /* transitions pushed so far */
    /* Shadow rows: the row that push q overwrote, at q % shadow, kept while a job submitted at or
     * before q has not gathered its rows. */
    rows shadowed;
    /* The running job's rows (and their ring slots), gathered when it starts. */
    rows run;
    int64_t *slot, *order;
    /* Results of the steps done since the last take. */
    long long *res_exp;
    double *res_loss;
    size_t nres, res_cap, taken;
    int stop, started, inline_only;
#if C51_THREADS
    pid_t pid;  /* the process that started the worker (a forked child starts its own) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
#endif
};

/* Copy job k's minibatch rows as they were when it was submitted: a slot pushed over since then
 * is read from the shadow row of the first push over it. The lock is held (if any). */
static void gather(c51_async *a, int k)
{
    long long sub = a->exps[k], cap = a->cap;
    for (int s = 0; s < a->batch; s++) {
        int64_t j = a->idx[(size_t)k * a->batch + s];
        long long first = sub + ((j - sub) % cap + cap) % cap;  /* the first push into slot j since */
        if (first < a->pushed)
            rows_copy(&a->run, (size_t)s, &a->shadowed, (size_t)(first % a->shadow), (size_t)a->nin, a->t->gamma);
        else
            rows_copy(&a->run, (size_t)s, &a->ring, (size_t)j, (size_t)a->nin, a->t->gamma);
        a->slot[s] = j;
    }
}

/* Run the gathered job k: one gradient step and Adam. */
static double run_job(c51_async *a, int k)
{
    c51_replay rb = {a->run.obs, a->run.next, a->run.rew, a->run.act, a->run.disc, a->mcache, a->mgen, a->gen[k],
                     a->mcache ? a->slot : NULL, a->mcache ? a->run.ver : NULL, a->mver};
    double loss = c51_gradients(a->t, &rb, a->order, a->scale[k], a->r_lo[k], a->r_hi[k]);
    c51_adam(a->t);
    return loss;
}

static void record(c51_async *a, long long exps, double loss)
{
    if (a->nres == a->res_cap) {
        size_t cap = a->res_cap ? 2 * a->res_cap : 256;
        long long *e = realloc(a->res_exp, cap * sizeof *e);
        if (e)
            a->res_exp = e;
        double *l = realloc(a->res_loss, cap * sizeof *l);
        if (l)
            a->res_loss = l;
        if (!e || !l)
            return;  /* out of memory: the loss is not recorded; the step itself was taken */
        a->res_cap = cap;
    }
    a->res_exp[a->nres] = exps;
    a->res_loss[a->nres] = loss;
    a->nres++;
}

/* Write transition number `pushed` into its ring slot (the lock is held, if any). */
static void store(c51_async *a, long long pushed, const float *obs, const float *next, int64_t action,
                  float reward, float discount, int64_t version)
{
    size_t i = (size_t)(pushed % a->cap), nin = (size_t)a->nin;
    rows *r = &a->ring;
    memcpy(r->obs + i * nin, obs, nin * sizeof(float));
    memcpy(r->next + i * nin, next, nin * sizeof(float));
    r->act[i] = action;
    r->rew[i] = reward;
    if (r->disc)
        r->disc[i] = discount;
    if (r->ver)
        r->ver[i] = version;
    a->pushed = pushed + 1;
}

/* Run every queued job on the calling thread (no worker). */
static void run_all_inline(c51_async *a)
{
    for (; a->count > 0; a->count--) {
        int k = (a->head - a->count + a->queue) % a->queue;
        gather(a, k);
        record(a, a->exps[k], run_job(a, k));
    }
}

#if C51_THREADS
/* Run the oldest queued job on the calling thread: the lock is held on entry and on return, and
 * no job is running (busy == 0). One job at a time, oldest first, whichever thread runs it: the
 * steps and their results are those of the synchronous order. */
static void run_oldest(c51_async *a)
{
    int k = (a->head - a->count + a->queue) % a->queue;
    a->busy = 1;
    gather(a, k);  /* under the lock: the owner's pushes wait for it */
    pthread_mutex_unlock(&a->mu);
    double loss = run_job(a, k);
    pthread_mutex_lock(&a->mu);
    record(a, a->exps[k], loss);
    a->count--;
    a->busy = 0;
    pthread_cond_broadcast(&a->done);
}

/* Jobs queued that have not gathered their rows yet, and the oldest of them. Lock held. */
static int waiting(const c51_async *a, int *oldest)
{
    *oldest = (a->head - a->count + a->busy + a->queue) % a->queue;
    return a->count - a->busy;
}

/* The owner needs queued jobs done (a flush, or a full queue): it runs the oldest itself while
 * no job is running, so it does not sleep waiting for a worker that waits for a CPU on a loaded
 * machine; it waits only while a job is running. Lock held. */
static void help_while(c51_async *a, int until_count)
{
    while (a->count > until_count) {
        if (!a->busy)
            run_oldest(a);
        else
            pthread_cond_wait(&a->done, &a->mu);
    }
}

static void *worker(void *arg)
{
    c51_async *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while ((a->count == 0 || a->busy) && !a->stop)
            pthread_cond_wait(&a->work, &a->mu);
        if (a->count == 0 || a->busy)
            break;  /* stopping (the owner stops the worker only when it runs no job itself) */
        run_oldest(a);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void init_sync(c51_async *a)
{
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->done, NULL);
}

/* Start the worker if it is not running in this process; on failure, run steps inline. */
static void ensure_worker(c51_async *a)
{
    if (a->inline_only)
        return;
    if (a->started && a->pid == getpid())
        return;
    if (a->started) {  /* a forked child: the worker is the parent's; the queue's copy is ours */
        init_sync(a);
        a->started = 0;
        a->busy = 0;
    }
    a->stop = 0;
    a->pid = getpid();
    if (pthread_create(&a->thread, NULL, worker, a) == 0)
        a->started = 1;
    else
        a->inline_only = 1;
}
#endif

c51_async *c51_async_new(c51_trainer *t, const c51_replay *rb, int cap, int nin, int queue, int shadow)
{
    if (queue < 1 || shadow < 1 || cap < 1 || nin < 1 || t->batch < 1)
        return NULL;
    c51_async *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->t = t;
    a->cap = cap;
    a->nin = nin;
    a->batch = t->batch;
    a->queue = queue;
    a->shadow = shadow;
    /* The owner writes the ring through c51_async_push (the kernel's view of it is const). */
    rows ring = {(float *)rb->obs, (float *)rb->next, (float *)rb->rew, (float *)rb->disc, (int64_t *)rb->act,
                 (int64_t *)rb->ver};
    a->ring = ring;
    a->mcache = rb->mcache, a->mgen = rb->mgen, a->mver = rb->mver;
    int w = 512 / t->batch;  /* a sleeping worker is woken for ~512 rows of work */
    a->wake = w < 1 ? 1 : w > queue / 2 ? (queue / 2 > 1 ? queue / 2 : 1) : w;
    size_t B = (size_t)t->batch;
    a->idx = malloc((size_t)queue * B * sizeof(int32_t));
    a->gen = malloc((size_t)queue * sizeof(int64_t));
    a->scale = malloc((size_t)queue * sizeof(double));
    a->r_lo = malloc((size_t)queue * sizeof(double));
    a->r_hi = malloc((size_t)queue * sizeof(double));
    a->exps = malloc((size_t)queue * sizeof(long long));
    a->slot = malloc(B * sizeof(int64_t));
    a->order = malloc(B * sizeof(int64_t));
    int shadow_ok = rows_alloc(&a->shadowed, (size_t)shadow, (size_t)nin), run_ok = rows_alloc(&a->run, B, (size_t)nin);
    if (!a->idx || !a->gen || !a->scale || !a->r_lo || !a->r_hi || !a->exps || !a->slot || !a->order
        || shadow_ok < 0 || run_ok < 0) {
        c51_async_free(a);
        return NULL;
    }
    for (int s = 0; s < t->batch; s++)
        a->order[s] = s;
#if C51_THREADS
    init_sync(a);
#else
    a->inline_only = 1;
#endif
    return a;
}

void c51_async_free(c51_async *a)
{
    if (!a)
        return;
#if C51_THREADS
    if (a->started && a->pid == getpid()) {
        pthread_mutex_lock(&a->mu);
        a->stop = 1;
        pthread_cond_broadcast(&a->work);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thread, NULL);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->done);
#endif
    void *owned[] = {a->idx, a->gen, a->scale, a->r_lo, a->r_hi, a->exps, a->slot, a->order, a->res_exp,
                     a->res_loss};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
    rows_free(&a->shadowed);
    rows_free(&a->run);
    free(a);
}

void c51_async_push(c51_async *a, long long pushed, const float *obs, const float *next, int64_t action,
                    float reward, float discount, int64_t version)
{
#if C51_THREADS
    if (a->started || a->count) {
        ensure_worker(a);  /* a forked child starts its own worker for the queue it inherited */
        if (a->inline_only)
            run_all_inline(a);  /* ... or, if it cannot, runs that queue before the ring changes */
    }
    if (a->started && !a->inline_only) {
        pthread_mutex_lock(&a->mu);
        int oldest, n = waiting(a, &oldest);
        /* This push's shadow row must not hold one that a waiting job still needs. */
        while (n > 0 && pushed - a->exps[oldest] >= a->shadow) {
            if (!a->busy)
                run_oldest(a);
            else
                pthread_cond_wait(&a->done, &a->mu);
            n = waiting(a, &oldest);
        }
        if (n > 0)  /* a waiting job may have drawn this slot: keep its row */
            rows_copy(&a->shadowed, (size_t)(pushed % a->shadow), &a->ring, (size_t)(pushed % a->cap),
                      (size_t)a->nin, a->t->gamma);
        store(a, pushed, obs, next, action, reward, discount, version);
        pthread_mutex_unlock(&a->mu);
        return;
    }
#endif
    store(a, pushed, obs, next, action, reward, discount, version);  /* no job waits */
}

void c51_async_submit(c51_async *a, const int64_t *idx, int64_t gen, double scale, double r_lo, double r_hi,
                      long long experiences)
{
    int k;
#if C51_THREADS
    ensure_worker(a);
    if (!a->inline_only) {
        pthread_mutex_lock(&a->mu);
        help_while(a, a->queue - 1);  /* a full queue: make room */
        k = a->head;  /* free: the worker only reads the queued jobs */
        pthread_mutex_unlock(&a->mu);
    } else
#endif
        k = a->head;
    for (int s = 0; s < a->batch; s++)
        a->idx[(size_t)k * a->batch + s] = (int32_t)idx[s];
    a->gen[k] = gen;
    a->scale[k] = scale;
    a->r_lo[k] = r_lo;
    a->r_hi[k] = r_hi;
    a->exps[k] = experiences;
#if C51_THREADS
    if (!a->inline_only) {
        pthread_mutex_lock(&a->mu);
        a->pushed = experiences;
        a->head = (k + 1) % a->queue;  /* with count: the worker finds its job at head - count */
        /* Waking the worker costs a system call or two (more than a job's copy): a sleeping
         * worker has caught up, so it is woken once `wake` jobs wait (a running one takes them
         * anyway). The owner runs what is left at a flush or in a full queue (help_while). */
        if (++a->count >= a->wake)
            pthread_cond_signal(&a->work);
        pthread_mutex_unlock(&a->mu);
        return;
    }
#endif
    a->pushed = experiences;
    a->head = (k + 1) % a->queue;
    gather(a, k);
    record(a, experiences, run_job(a, k));
}

void c51_async_flush(c51_async *a)
{
#if C51_THREADS
    if (!a->started)
        return;  /* no worker: every step ran at submission */
    ensure_worker(a);  /* a forked child starts its own worker for the queue it inherited */
    if (a->inline_only) {  /* ... or, if it cannot, runs that queue itself */
        run_all_inline(a);
        return;
    }
    pthread_mutex_lock(&a->mu);
    help_while(a, 0);
    pthread_mutex_unlock(&a->mu);
#else
    (void)a;
#endif
}

size_t c51_async_take(c51_async *a, const long long **experiences, const double **losses)
{
    c51_async_flush(a);
    *experiences = a->res_exp;
    *losses = a->res_loss;
    size_t n = a->nres;
    a->nres = 0;
    return n;
}

size_t c51_async_bytes(const c51_async *a)
{
    size_t row = (2 * (size_t)a->nin + 2) * sizeof(float);  /* obs, next, reward, discount */
    return (size_t)a->queue * ((size_t)a->batch * sizeof(int32_t) + sizeof(int64_t) + 3 * sizeof(double)
                               + sizeof(long long))
           + (size_t)a->shadow * (row + 2 * sizeof(int64_t)) + (size_t)a->batch * (row + 4 * sizeof(int64_t))
           + a->res_cap * (sizeof(long long) + sizeof(double));
}
