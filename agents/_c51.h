/* Internal header of the _c51 extension: the trainer (_c51.c) as its PageCredit type
 * (_c51_credit.c) uses it, and PageCredit as MigrationCredit (_c51_migration.c) extends it. */
#ifndef C51_MODULE_H
#define C51_MODULE_H

#include "binding.h"

#include "c51_async.h"
#include "c51_kernel.h"
#include "page_credit.h"

#define N_BUFS (4 * C51_MAX_LAYERS + 5)

/* The inference network (C51Net). */
typedef struct {
    PyObject_HEAD
    c51_shape shape;
    c51_weights w;  /* PyMem-owned, transposed: (in, out) per layer (c51_q) */
    double epsilon;
    uint64_t rng;
} C51Net;

extern PyTypeObject C51NetType;

/* The network's expected value of each action for an observation (a float32 buffer); 0 or -1. */
int net_q(C51Net *self, PyObject *obs, float *q);

typedef struct {
    PyObject_HEAD
    c51_trainer t;
    int ready;
    Py_buffer bufs[N_BUFS];  /* params (w, b per layer), target (w, b per layer), obs next act rew [disc] */
    int nheld;
    c51_replay rb;
    int cap, size;
    long long experiences;
    int64_t *idx;
    uint64_t rng;
    double cached_scale, cached_lo, cached_hi;  /* the reward scaling the target cache holds */
    int64_t *slotver;  /* version of each replay slot's transition (the experience count that wrote it) */
    c51_async *async;  /* background steps (made by the first submit) */
} C51Trainer;

extern PyTypeObject C51TrainerType;
extern PyTypeObject PageCreditType;
extern PyTypeObject MigrationCreditType;

/* Copy one float32 buffer of n values (a ValueError naming `what` otherwise); 0 or -1. */
int c51_read_floats(PyObject *obj, float *dst, Py_ssize_t n, const char *what);

/* 0 if g is a valid discount for the trainer's replay (it has discounts, 0 <= g < 1), else -1 with
 * a ValueError. */
int c51_check_discount(C51Trainer *self, double g);

/* Store one transition in the replay ring (action and discount checked by the caller); returns
 * the experiences so far. */
long long c51_trainer_store(C51Trainer *self, const float *obs, long a, double r, const float *next, double g);

/* PageCredit's object (_c51_credit.c; MigrationCredit extends it). */
typedef struct {
    PyObject_HEAD
    page_credit c;
    int ready;
    C51Trainer *trainer;
    PyObject *queue_step;
    int train_every;
    int batch;
} PageCreditObject;

#define PC_MAX_TAGS 64  /* touch(): baselines (one per tag: a device) */

/* 0, or -1 with a RuntimeError if the PageCredit was not initialised. */
int credit_ready(PageCreditObject *self);

/* A page number from a Python int (-1 with an exception set on error). */
static inline int64_t c51_as_page(PyObject *o) { return (int64_t)PyLong_AsLongLong(o); }

/* touch(first, last, reward, baselines) on a C array of nb baselines (has_reward 0: reward None,
 * the open pages of the range end). 0, or -1 with an exception. */
int credit_touch(PageCreditObject *self, int64_t first, int64_t last, int has_reward, double r,
                 const double *baselines, Py_ssize_t nb);

#endif
