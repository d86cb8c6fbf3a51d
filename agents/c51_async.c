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

struct c51_async {
    c51_trainer *t;
    float *mcache;
    int64_t *mgen, *mver;
    int nin, batch, queue;
    /* The queue: job k's minibatch rows live at offset k * batch of each array. */
    float *obs, *next, *rew, *disc;
    int64_t *act, *slot, *ver, *rows;
    int64_t *gen;
    double *scale, *r_lo, *r_hi;
    long long *exps;
    int head, count;  /* next job to fill; jobs queued (the worker runs the oldest) */
    int wake;         /* a sleeping worker is woken when this many jobs are queued */
    int busy;         /* a thread (the worker, or the owner helping) is running the oldest job */
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

/* Run job k: one gradient step and Adam; record its loss (the caller holds the lock if any). */
static double run_job(c51_async *a, int k)
{
    size_t r0 = (size_t)k * a->batch;
    c51_replay rb = {a->obs + r0 * a->nin, a->next + r0 * a->nin, a->rew + r0, a->act + r0, a->disc + r0,
                     a->mcache, a->mgen, a->gen[k], a->mcache ? a->slot + r0 : NULL,
                     a->mcache ? a->ver + r0 : NULL, a->mver};
    double loss = c51_gradients(a->t, &rb, a->rows, a->scale[k], a->r_lo[k], a->r_hi[k]);
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

#if C51_THREADS
/* Run the oldest queued job on the calling thread: the lock is held on entry and on return, and
 * no job is running (busy == 0). One job at a time, oldest first, whichever thread runs it: the
 * steps and their results are those of the synchronous order. */
static void run_oldest(c51_async *a)
{
    int k = (a->head - a->count + a->queue) % a->queue;
    a->busy = 1;
    pthread_mutex_unlock(&a->mu);
    double loss = run_job(a, k);
    pthread_mutex_lock(&a->mu);
    record(a, a->exps[k], loss);
    a->count--;
    a->busy = 0;
    pthread_cond_broadcast(&a->done);
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

c51_async *c51_async_new(c51_trainer *t, int nin, int queue, float *mcache, int64_t *mgen, int64_t *mver)
{
    if (queue < 1 || nin < 1 || t->batch < 1)
        return NULL;
    c51_async *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->t = t;
    a->mcache = mcache;
    a->mgen = mgen;
    a->mver = mver;
    a->nin = nin;
    a->batch = t->batch;
    a->queue = queue;
    a->wake = queue / 2 > 1 ? queue / 2 : 1;
    size_t rows = (size_t)queue * t->batch;
    a->obs = malloc(rows * nin * sizeof(float));
    a->next = malloc(rows * nin * sizeof(float));
    a->rew = malloc(rows * sizeof(float));
    a->disc = malloc(rows * sizeof(float));
    a->act = malloc(rows * sizeof(int64_t));
    a->slot = malloc(rows * sizeof(int64_t));
    a->ver = malloc(rows * sizeof(int64_t));
    a->rows = malloc((size_t)t->batch * sizeof(int64_t));
    a->gen = malloc((size_t)queue * sizeof(int64_t));
    a->scale = malloc((size_t)queue * sizeof(double));
    a->r_lo = malloc((size_t)queue * sizeof(double));
    a->r_hi = malloc((size_t)queue * sizeof(double));
    a->exps = malloc((size_t)queue * sizeof(long long));
    if (!a->obs || !a->next || !a->rew || !a->disc || !a->act || !a->slot || !a->ver || !a->rows || !a->gen
        || !a->scale || !a->r_lo || !a->r_hi || !a->exps) {
        c51_async_free(a);
        return NULL;
    }
    for (int s = 0; s < t->batch; s++)
        a->rows[s] = s;
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
    free(a->obs);
    free(a->next);
    free(a->rew);
    free(a->disc);
    free(a->act);
    free(a->slot);
    free(a->ver);
    free(a->rows);
    free(a->gen);
    free(a->scale);
    free(a->r_lo);
    free(a->r_hi);
    free(a->exps);
    free(a->res_exp);
    free(a->res_loss);
    free(a);
}

void c51_async_submit(c51_async *a, const c51_replay *rb, const int64_t *idx, double scale, double r_lo,
                      double r_hi, long long experiences)
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
    size_t r0 = (size_t)k * a->batch, nin = (size_t)a->nin;
    for (int s = 0; s < a->batch; s++) {  /* copy the minibatch out of the replay buffer */
        int64_t j = idx[s];
        memcpy(a->obs + (r0 + s) * nin, rb->obs + (size_t)j * nin, nin * sizeof(float));
        memcpy(a->next + (r0 + s) * nin, rb->next + (size_t)j * nin, nin * sizeof(float));
        a->rew[r0 + s] = rb->rew[j];
        a->disc[r0 + s] = rb->disc ? rb->disc[j] : a->t->gamma;
        a->act[r0 + s] = rb->act[j];
        a->slot[r0 + s] = j;
        a->ver[r0 + s] = rb->ver ? rb->ver[j] : 0;
    }
    a->gen[k] = rb->gen;
    a->scale[k] = scale;
    a->r_lo[k] = r_lo;
    a->r_hi[k] = r_hi;
    a->exps[k] = experiences;
#if C51_THREADS
    if (!a->inline_only) {
        pthread_mutex_lock(&a->mu);
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
    a->head = (k + 1) % a->queue;
    record(a, experiences, run_job(a, k));
}

void c51_async_flush(c51_async *a)
{
#if C51_THREADS
    if (!a->started)
        return;  /* no worker: every step ran at submission */
    ensure_worker(a);  /* a forked child starts its own worker for the queue it inherited */
    if (a->inline_only) {  /* ... or, if it cannot, runs that queue itself */
        for (; a->count > 0; a->count--) {
            int k = (a->head - a->count + a->queue) % a->queue;
            record(a, a->exps[k], run_job(a, k));
        }
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
    size_t rows = (size_t)a->queue * a->batch;
    return rows * (2 * (size_t)a->nin + 2) * sizeof(float) + rows * 3 * sizeof(int64_t)
           + (size_t)a->batch * sizeof(int64_t) + (size_t)a->queue * (sizeof(int64_t) + 3 * sizeof(double)
           + sizeof(long long)) + a->res_cap * (sizeof(long long) + sizeof(double));
}
