/* The _c51 extension's MigrationCredit type: Harmonia's migration agent's per-request bookkeeping
 * (agents/harmonia.py, MigrationAgent with credit="page") on a PageCredit table.
 *
 * Per request the agent tells it the request and its decision, then the outcome; it keeps what
 * those need between requests:
 *
 *   mc = MigrationCredit(trainer, gamma, horizon, idle_horizon, train_every, batch_size, queue_step,
 *                        expire_every, ref_us, n_devices)
 *   mc.request(request, served[, page, obs, action, reward, device])  # before the env step
 *   mc.placed(device, latency, evicted, step)                          # the placement's outcome
 *   mc.learned(step, latency)                                          # after the env step
 *
 * request: the env's request tuple (time, op, offset, size), or None; served: the device that
 * holds its first page (-1: unknown); the decision (if the agent acted): the candidate page, its
 * observation, the relative action (0 stays), the move's immediate reward and the device it is on.
 * learned() is MigrationAgent's bookkeeping after a step, in its order and arithmetic (double
 * precision): the mean eq.-2 reward of the reads each device served; each open page of the request
 * gets a read's reward against the device it left (a write ends it); the decided page's open
 * transition ends, and a move opens a new one (undiscounted: its first read is its first
 * consequence); transitions past their horizons end. placed() measures what one critical-path
 * eviction costs in eq.-2 reward (fast placements that evicted against those that did not).
 * It was Python until the agent thread's time had to shrink (docs/learning-diagnostics.md). */
#include "_c51.h"

#include <string.h>

typedef struct {
    PageCreditObject base;
    double ref;                       /* L_ref (us): eq. 2's reward is ref / latency */
    int n;                            /* devices */
    double read_reward[PC_MAX_TAGS];  /* mean eq.-2 reward of the reads each device served (< 0: none yet) */
    double fast_write, evict_cost;    /* running eq.-2 reward of fast placements; one eviction's cost */
    long long evicted_at;             /* the step of the last placement that evicted */
    int has_req, op;                  /* the request of this step */
    long long off, size, served;
    int has_decision, action, dev;    /* the decision of this step */
    long long page;
    double reward;
    float obs[C51_MAX_WIDTH];
} MigrationCreditObject;

static int MigrationCredit_init(MigrationCreditObject *self, PyObject *args, PyObject *kw)
{
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "MigrationCredit takes positional arguments only");
        return -1;
    }
    if (PyTuple_GET_SIZE(args) != 10) {
        PyErr_SetString(PyExc_TypeError, "MigrationCredit(trainer, gamma, horizon, idle_horizon, train_every, "
                        "batch_size, queue_step, expire_every, ref_us, n_devices)");
        return -1;
    }
    double ref = PyFloat_AsDouble(PyTuple_GET_ITEM(args, 8));
    long n = PyLong_AsLong(PyTuple_GET_ITEM(args, 9));
    if (PyErr_Occurred())
        return -1;
    if (!(ref > 0) || n < 2 || n > PC_MAX_TAGS) {
        PyErr_Format(PyExc_ValueError, "MigrationCredit: need ref_us > 0 and 2 <= n_devices <= %d, got %g, %ld",
                     PC_MAX_TAGS, ref, n);
        return -1;
    }
    PyObject *head = PyTuple_GetSlice(args, 0, 8);
    if (!head)
        return -1;
    int rc = PageCreditType.tp_init((PyObject *)self, head, NULL);
    Py_DECREF(head);
    if (rc < 0)
        return -1;
    if (self->base.trainer->t.shape.n_actions != n) {
        PyErr_Format(PyExc_ValueError, "MigrationCredit: the trainer has %d actions for %ld devices",
                     self->base.trainer->t.shape.n_actions, n);
        return -1;
    }
    self->ref = ref;
    self->n = (int)n;
    for (int i = 0; i < PC_MAX_TAGS; i++)
        self->read_reward[i] = -1.0;
    self->fast_write = -1.0;
    self->evict_cost = 0.0;
    self->evicted_at = -(1LL << 30);
    return 0;
}

static PyObject *MigrationCredit_request(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "request(request, served[, page, obs, action, reward, device])");
        return NULL;
    }
    if (credit_ready(&self->base) < 0)
        return NULL;
    self->has_req = self->has_decision = 0;
    long long served = PyLong_AsLongLong(args[1]);
    if (served == -1 && PyErr_Occurred())
        return NULL;
    if (served >= self->n) {
        PyErr_Format(PyExc_ValueError, "request: served device %lld out of range (-1..%d)", served, self->n - 1);
        return NULL;
    }
    if (args[0] != Py_None) {
        PyObject *rq = args[0];
        if (!PyTuple_Check(rq) || PyTuple_GET_SIZE(rq) != 4) {
            PyErr_SetString(PyExc_TypeError, "request: expected the env's (time, op, offset, size) tuple or None");
            return NULL;
        }
        long op = PyLong_AsLong(PyTuple_GET_ITEM(rq, 1));
        long long off = PyLong_AsLongLong(PyTuple_GET_ITEM(rq, 2)), size = PyLong_AsLongLong(PyTuple_GET_ITEM(rq, 3));
        if (PyErr_Occurred())
            return NULL;
        self->op = (int)op, self->off = off, self->size = size, self->served = served;
        self->has_req = 1;
    }
    if (nargs == 7) {
        long long page = PyLong_AsLongLong(args[2]);
        long a = PyLong_AsLong(args[4]), dev = PyLong_AsLong(args[6]);
        double r = PyFloat_AsDouble(args[5]);
        if (PyErr_Occurred())
            return NULL;
        if (a < 0 || a >= self->n || dev < 0 || dev >= self->n) {
            PyErr_Format(PyExc_ValueError, "request: action %ld and device %ld must be in 0..%d", a, dev, self->n - 1);
            return NULL;
        }
        if (c51_read_floats(args[3], self->obs, self->base.c.nin, "obs") < 0)
            return NULL;
        self->page = page, self->action = (int)a, self->reward = r, self->dev = (int)dev;
        self->has_decision = 1;
    }
    Py_RETURN_NONE;
}

static PyObject *MigrationCredit_placed(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "placed(device, latency, evicted, step)");
        return NULL;
    }
    long device = PyLong_AsLong(args[0]);
    double latency = PyFloat_AsDouble(args[1]);
    long evicted = PyLong_AsLong(args[2]);
    long long step = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (device != 0 || latency <= 0)
        Py_RETURN_NONE;
    if (evicted)
        self->evicted_at = step;
    double r = self->ref / latency;
    if (!evicted) {
        self->fast_write = self->fast_write < 0 ? r : self->fast_write + 0.01 * (r - self->fast_write);
    } else if (self->fast_write > 0) {
        double d = self->fast_write - r;
        if (0.0 > d)  /* max(d, 0.0) */
            d = 0.0;
        self->evict_cost += 0.01 * (d / (double)evicted - self->evict_cost);
    }
    Py_RETURN_NONE;
}

static PyObject *MigrationCredit_learned(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "learned(step, latency)");
        return NULL;
    }
    if (credit_ready(&self->base) < 0)
        return NULL;
    long long step = PyLong_AsLongLong(args[0]);
    double latency = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred())
        return NULL;
    page_credit *c = &self->base.c;
    if (self->has_req) {
        int read = self->op == 0 && latency > 0;
        double r = 0.0;
        if (read) {  /* a read: served by the device that holds its first page */
            r = self->ref / latency;
            if (self->served >= 0) {
                double *m = &self->read_reward[self->served];
                *m = *m < 0 ? r : *m + 0.01 * (r - *m);
            }
        }
        if (c->count  /* a read of a moved page: its reward against the device it left; a write ends it */
            && credit_touch(&self->base, self->off >> 12, (self->off + self->size - 1) >> 12, read, r,
                            self->read_reward, self->n) < 0)
            return NULL;
    }
    if (self->has_decision) {
        if (pc_end(c, self->page) < 0)  /* a new decision on the page: its open move transition ends */
            return NULL;
        if (self->action  /* the page's first read is the move's first consequence: undiscounted */
            && pc_decision(c, self->page, self->obs, self->action, self->reward, step, 1.0, self->dev) < 0)
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    if (step >= c->next_expiry && pc_expire(c, step) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *MigrationCredit_read_reward(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    PyObject *out = PyList_New(self->n);
    for (int i = 0; out && i < self->n; i++) {
        PyObject *v = PyFloat_FromDouble(self->read_reward[i]);
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

static int MigrationCredit_set_read_reward(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    if (!value || !PyList_Check(value) || PyList_GET_SIZE(value) != self->n) {
        PyErr_Format(PyExc_ValueError, "read_reward: expected a list of %d floats", self->n);
        return -1;
    }
    double v[PC_MAX_TAGS];
    for (int i = 0; i < self->n; i++)
        if ((v[i] = PyFloat_AsDouble(PyList_GET_ITEM(value, i))) == -1.0 && PyErr_Occurred())
            return -1;
    memcpy(self->read_reward, v, (size_t)self->n * sizeof(double));
    return 0;
}

static PyObject *MigrationCredit_evicted_at(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(self->evicted_at);
}

static PyObject *MigrationCredit_evict_cost(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    return PyFloat_FromDouble(self->evict_cost);
}

static PyObject *MigrationCredit_fast_write(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    return PyFloat_FromDouble(self->fast_write);
}

static PyObject *MigrationCredit_decided(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    if (!self->has_decision)
        Py_RETURN_NONE;
    return Py_BuildValue("(Lidi)", self->page, self->action, self->reward, self->dev);
}

static PyGetSetDef MigrationCredit_getset[] = {
    {"read_reward", (getter)MigrationCredit_read_reward, (setter)MigrationCredit_set_read_reward,
     "mean eq.-2 reward of the reads each device served (-1: none yet)", NULL},
    {"evicted_at", (getter)MigrationCredit_evicted_at, NULL, "step of the last placement that evicted", NULL},
    {"evict_cost", (getter)MigrationCredit_evict_cost, NULL, "measured cost of one critical-path eviction", NULL},
    {"fast_write", (getter)MigrationCredit_fast_write, NULL,
     "running eq.-2 reward of fast placements that evicted nothing (-1: none yet)", NULL},
    {"decided", (getter)MigrationCredit_decided, NULL, "this step's decision (page, action, reward, device), or None",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef MigrationCredit_methods[] = {
    {"request", (PyCFunction)(void (*)(void))MigrationCredit_request, METH_FASTCALL,
     "request(request, served[, page, obs, action, reward, device]): this step's request and decision"},
    {"placed", (PyCFunction)(void (*)(void))MigrationCredit_placed, METH_FASTCALL,
     "placed(device, latency, evicted, step): the placement's outcome (measures the eviction cost)"},
    {"learned", (PyCFunction)(void (*)(void))MigrationCredit_learned, METH_FASTCALL,
     "learned(step, latency): the bookkeeping after the env step"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject MigrationCreditType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.agents._c51.MigrationCredit",
    .tp_basicsize = sizeof(MigrationCreditObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Harmonia's migration agent's per-request bookkeeping on a PageCredit (agents/harmonia.py).",
    .tp_base = &PageCreditType,
    .tp_init = (initproc)MigrationCredit_init,
    .tp_getset = MigrationCredit_getset,
    .tp_methods = MigrationCredit_methods,
};
