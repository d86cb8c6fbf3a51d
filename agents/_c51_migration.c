/* The _c51 extension's MigrationCredit type: Harmonia's migration agent's per-request decision and
 * bookkeeping (agents/harmonia.py, MigrationAgent with credit="page") on a PageCredit table.
 *
 *   mc = MigrationCredit(trainer, gamma, horizon, idle_horizon, train_every, batch_size, queue_step,
 *                        expire_every, ref_us, n_devices)
 *   mc.setup(net, bit_generator, integers, move_reward, epsilon, explore_steps, explore_left,
 *            idle_left, explore_rate, evicting_only, idle_only, move_delay, reward_n, curr_dev_feature)
 *   mc.decide(obs, acting, page, device, step, placement_obs, request, queue_length)  # -> target device
 *   mc.placed(device, latency, evicted, step)                                          # the placement's outcome
 *   mc.learned(step, latency)                                                          # after the env step
 *
 * decide() is MigrationAgent's choice (docs in agents/harmonia.py): epsilon-greedy over relative
 * actions, a stay worth 0, moves only while the fast device evicts (evicting_only), a budget of
 * exploratory moves into an empty queue, the inference network's best move if its expected return
 * is positive. Its uniform draws are the bit generator's, as Generator.random() makes them; the
 * rare integer draws (exploration) and a move's immediate reward are the agent's Python
 * (integers, move_reward). It records the request and the decision, as
 * request(request, served[, page, obs, action, reward, device]) does for a decision made elsewhere:
 * request is the env's request tuple (time, op, offset, size), or None; served the device that
 * holds its first page (-1: unknown); the decision (if the agent acted) the candidate page, its
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

#define PAGE_SHIFT 12  /* 4 KiB pages: page = byte offset >> PAGE_SHIFT (hss_gym.hss.PAGE_SHIFT) */

/* NumPy's bit generator interface (numpy/random/bitgen.h), from BitGenerator.capsule. */
typedef struct {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} bitgen_t;

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
    /* decide() (setup()): the inference network, the bit generator and the agent's callables */
    C51Net *net;
    PyObject *bitgen_obj, *integers, *move_reward;
    bitgen_t *bitgen;
    double epsilon, explore_rate, delay_cost;
    long long explore_steps, explore_left, idle_left, reward_n;
    int evicting_only, idle_only, move_delay, dev_at;
} MigrationCreditObject;

static void MigrationCredit_dealloc(MigrationCreditObject *self)
{
    Py_XDECREF(self->net);
    Py_XDECREF(self->bitgen_obj);
    Py_XDECREF(self->integers);
    Py_XDECREF(self->move_reward);
    PageCreditType.tp_dealloc((PyObject *)self);
}

static int MigrationCredit_init(MigrationCreditObject *self, PyObject *args, PyObject *kw)
{
    if (kw && PyDict_GET_SIZE(kw))
        return bind_raise(PyExc_TypeError, "MigrationCredit takes positional arguments only");
    if (PyTuple_GET_SIZE(args) != 10)
        return bind_raise(PyExc_TypeError, "MigrationCredit(trainer, gamma, horizon, idle_horizon, train_every, "
                          "batch_size, queue_step, expire_every, ref_us, n_devices)");
    double ref = PyFloat_AsDouble(PyTuple_GET_ITEM(args, 8));
    long n = PyLong_AsLong(PyTuple_GET_ITEM(args, 9));
    if (PyErr_Occurred())
        return -1;
    if (!(ref > 0) || n < 2 || n > PC_MAX_TAGS)
        return bind_raise(PyExc_ValueError, "MigrationCredit: need ref_us > 0 and 2 <= n_devices <= %d, got %g, %ld",
                          PC_MAX_TAGS, ref, n);
    PyObject *head = PyTuple_GetSlice(args, 0, 8);
    if (!head)
        return -1;
    int rc = PageCreditType.tp_init((PyObject *)self, head, NULL);
    Py_DECREF(head);
    if (rc < 0)
        return -1;
    if (self->base.trainer->t.shape.n_actions != n)
        return bind_raise(PyExc_ValueError, "MigrationCredit: the trainer has %d actions for %ld devices",
                          self->base.trainer->t.shape.n_actions, n);
    self->ref = ref;
    self->n = (int)n;
    for (int i = 0; i < PC_MAX_TAGS; i++)
        self->read_reward[i] = -1.0;
    self->fast_write = -1.0;
    self->evict_cost = 0.0;
    self->evicted_at = -(1LL << 30);
    return 0;
}

/* The step's request (None: none), and the device holding its first page (-1: unknown). */
static int read_request(MigrationCreditObject *self, PyObject *rq, long long served)
{
    self->has_req = 0;
    if (served >= self->n)
        return bind_raise(PyExc_ValueError, "request: served device %lld out of range (-1..%d)", served, self->n - 1);
    if (rq == Py_None)
        return 0;
    if (!PyTuple_Check(rq) || PyTuple_GET_SIZE(rq) != 4)
        return bind_raise(PyExc_TypeError, "request: expected the env's (time, op, offset, size) tuple or None");
    long op = PyLong_AsLong(PyTuple_GET_ITEM(rq, 1));
    long long off = PyLong_AsLongLong(PyTuple_GET_ITEM(rq, 2)), size = PyLong_AsLongLong(PyTuple_GET_ITEM(rq, 3));
    if (PyErr_Occurred())
        return -1;
    self->op = (int)op, self->off = off, self->size = size, self->served = served;
    self->has_req = 1;
    return 0;
}

static PyObject *MigrationCredit_request(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 7)
        return PyErr_Format(PyExc_TypeError, "request(request, served[, page, obs, action, reward, device])");
    if (credit_ready(&self->base) < 0)
        return NULL;
    self->has_decision = 0;
    long long served = PyLong_AsLongLong(args[1]);
    if ((served == -1 && PyErr_Occurred()) || read_request(self, args[0], served) < 0)
        return NULL;
    if (nargs == 7) {
        long long page = PyLong_AsLongLong(args[2]);
        long a = PyLong_AsLong(args[4]), dev = PyLong_AsLong(args[6]);
        double r = PyFloat_AsDouble(args[5]);
        if (PyErr_Occurred())
            return NULL;
        if (a < 0 || a >= self->n || dev < 0 || dev >= self->n)
            return PyErr_Format(PyExc_ValueError, "request: action %ld and device %ld must be in 0..%d", a, dev,
                                self->n - 1);
        if (c51_read_floats(args[3], self->obs, self->base.c.nin, "obs") < 0)
            return NULL;
        self->page = page, self->action = (int)a, self->reward = r, self->dev = (int)dev;
        self->has_decision = 1;
    }
    Py_RETURN_NONE;
}

static PyObject *MigrationCredit_setup(MigrationCreditObject *self, PyObject *args)
{
    PyObject *net, *bg, *integers, *move_reward;
    double eps, rate;
    long long steps, explore_left, idle_left, reward_n;
    int evicting_only, idle_only, move_delay, dev_at;
    if (!PyArg_ParseTuple(args, "O!OOOdLLLdpppLi", &C51NetType, &net, &bg, &integers, &move_reward, &eps, &steps,
                          &explore_left, &idle_left, &rate, &evicting_only, &idle_only, &move_delay, &reward_n,
                          &dev_at))
        return NULL;
    C51Net *nt = (C51Net *)net;
    if (nt->shape.n_actions != self->n || dev_at < 0 || dev_at >= nt->shape.in[0] || !PyCallable_Check(integers)
        || !PyCallable_Check(move_reward) || !(eps >= 0 && eps <= 1) || steps < 0 || explore_left < 0
        || idle_left < 0 || !(rate >= 0 && rate <= 1) || (explore_left && !steps))
        return PyErr_Format(PyExc_ValueError, "setup: need a network with one output per device, curr_dev_feature "
                            "an input, callable integers and move_reward, 0 <= epsilon, explore_rate <= 1, "
                            "budgets >= 0");
    PyObject *cap = PyObject_GetAttrString(bg, "capsule");
    if (!cap)
        return NULL;
    bitgen_t *b = PyCapsule_GetPointer(cap, "BitGenerator");
    Py_DECREF(cap);  /* the bit generator owns the struct the capsule points to */
    if (!b)
        return NULL;
    Py_INCREF(net), Py_INCREF(bg), Py_INCREF(integers), Py_INCREF(move_reward);
    Py_XSETREF(self->net, nt);
    Py_XSETREF(self->bitgen_obj, bg);
    Py_XSETREF(self->integers, integers);
    Py_XSETREF(self->move_reward, move_reward);
    self->bitgen = b;
    self->epsilon = eps, self->explore_steps = steps, self->explore_left = explore_left;
    self->idle_left = idle_left, self->explore_rate = rate, self->reward_n = reward_n;
    self->evicting_only = evicting_only, self->idle_only = idle_only, self->move_delay = move_delay;
    self->dev_at = dev_at;
    Py_RETURN_NONE;
}

/* A uniform draw in [0, 1), as Generator.random() makes it: the top 53 bits of a 64-bit draw. */
static double uniform(MigrationCreditObject *self)
{
    return (double)(self->bitgen->next_raw(self->bitgen->state) >> 11) * (1.0 / 9007199254740992.0);
}

/* integers(lo, hi) of the agent's Generator (lo 0: integers(hi)); -1 with an exception. */
static long draw_integer(MigrationCreditObject *self, long lo)
{
    PyObject *r = lo ? PyObject_CallFunction(self->integers, "ll", lo, (long)self->n)
                     : PyObject_CallFunction(self->integers, "l", (long)self->n);
    if (!r)
        return -1;
    long v = PyLong_AsLong(r);
    Py_DECREF(r);
    return v;
}

/* The relative action for the candidate (MigrationAgent's choice); -1 with an exception. */
static long choose(MigrationCreditObject *self, PyObject *obs, long long step, long long queue_length)
{
    long long evicted_at = self->evicted_at;
    if (self->evicting_only && step - evicted_at > self->reward_n)
        return 0;  /* the eviction terms of a move's reward are live only while the fast device evicts */
    double eps = self->epsilon;
    if (self->explore_left && evicted_at >= 0) {  /* explore once the fast device is full */
        self->explore_left--;
        eps += (1.0 - eps) * (double)self->explore_left / (double)self->explore_steps;
    }
    if (eps != 0.0 && uniform(self) < eps)
        return draw_integer(self, 0);
    if (self->idle_left && evicted_at >= 0 && uniform(self) < self->explore_rate && queue_length == 0
        && (!self->move_delay || self->delay_cost < self->evict_cost)) {  /* a cheap try: it runs in the background */
        self->idle_left--;
        return draw_integer(self, 1);
    }
    float q[C51_MAX_WIDTH];
    if (net_q(self->net, obs, q) < 0)
        return -1;
    int best = 1;  /* the first best move */
    for (int a = 2; a < self->n; a++)
        if (q[a] > q[best])
            best = a;
    return q[best] > 0.0f && (!self->idle_only || queue_length == 0) ? best : 0;
}

static PyObject *MigrationCredit_decide(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 8, 8, "decide(obs, acting, page, device, step, placement_obs, request, queue_length)") < 0
        || credit_ready(&self->base) < 0)
        return NULL;
    if (!self->net)
        return PyErr_Format(PyExc_RuntimeError, "decide: call setup() first");
    self->has_decision = 0;
    int acting = PyObject_IsTrue(args[1]);
    long long page = PyLong_AsLongLong(args[2]), step = PyLong_AsLongLong(args[4]);
    long long queue_length = PyLong_AsLongLong(args[7]);
    long dev = PyLong_AsLong(args[3]);
    if (acting < 0 || PyErr_Occurred())
        return NULL;
    long long served = -1;
    if (args[5] != Py_None) {  /* the device holding the request's page: the placement observation's curr_dev */
        float x[C51_MAX_WIDTH];
        if (c51_read_floats(args[5], x, self->net->shape.in[0], "placement_obs") < 0)
            return NULL;
        served = (long long)((double)x[self->dev_at] * (double)(self->n - 1) + 0.5);
    }
    if (read_request(self, args[6], served) < 0)
        return NULL;
    if (!acting)
        return PyLong_FromLong(dev > 0 ? dev : 0);
    if (dev < 0 || dev >= self->n)
        return PyErr_Format(PyExc_ValueError, "decide: device %ld out of range 0..%d", dev, self->n - 1);
    long a = choose(self, args[0], step, queue_length);
    if (a < 0 || a >= self->n) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "decide: action %ld out of range 0..%d", a, self->n - 1);
        return NULL;
    }
    long target = (dev + a) % self->n;
    double reward = 0.0;
    if (a) {
        PyObject *r = PyObject_CallFunction(self->move_reward, "LLll", page, step, dev, target);
        if (!r)
            return NULL;
        reward = PyFloat_AsDouble(r);
        Py_DECREF(r);
        if (reward == -1.0 && PyErr_Occurred())
            return NULL;
    }
    if (c51_read_floats(args[0], self->obs, self->base.c.nin, "obs") < 0)
        return NULL;
    self->page = page, self->action = (int)a, self->reward = reward, self->dev = (int)dev;
    self->has_decision = 1;
    return PyLong_FromLong(target);
}

static PyObject *MigrationCredit_placed(MigrationCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 4, 4, "placed(device, latency, evicted, step)") < 0)
        return NULL;
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
    if (bind_nargs(nargs, 2, 2, "learned(step, latency)") < 0 || credit_ready(&self->base) < 0)
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
            && credit_touch(&self->base, self->off >> PAGE_SHIFT, (self->off + self->size - 1) >> PAGE_SHIFT, read,
                            r, self->read_reward, self->n) < 0)
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

BIND_GETTER(MigrationCredit_read_reward, MigrationCreditObject, bind_float_list(self->read_reward, self->n))

static int MigrationCredit_set_read_reward(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    if (!value || !PyList_Check(value) || PyList_GET_SIZE(value) != self->n)
        return bind_raise(PyExc_ValueError, "read_reward: expected a list of %d floats", self->n);
    double v[PC_MAX_TAGS];
    for (int i = 0; i < self->n; i++)
        if ((v[i] = PyFloat_AsDouble(PyList_GET_ITEM(value, i))) == -1.0 && PyErr_Occurred())
            return -1;
    memcpy(self->read_reward, v, (size_t)self->n * sizeof(double));
    return 0;
}

BIND_GETTER(MigrationCredit_evicted_at, MigrationCreditObject, PyLong_FromLongLong(self->evicted_at))

static int MigrationCredit_set_evicted_at(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    long long v = value ? PyLong_AsLongLong(value) : -1;
    if (!value || (v == -1 && PyErr_Occurred())) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "evicted_at cannot be deleted");
        return -1;
    }
    self->evicted_at = v;
    return 0;
}

BIND_GETTER(MigrationCredit_evict_cost, MigrationCreditObject, PyFloat_FromDouble(self->evict_cost))
BIND_GETTER(MigrationCredit_fast_write, MigrationCreditObject, PyFloat_FromDouble(self->fast_write))

static PyObject *MigrationCredit_decided(MigrationCreditObject *self, void *closure)
{
    (void)closure;
    if (!self->has_decision)
        Py_RETURN_NONE;
    return Py_BuildValue("(Lidi)", self->page, self->action, self->reward, self->dev);
}

static int set_count(long long *dst, PyObject *value, const char *what)
{
    long long v = value ? PyLong_AsLongLong(value) : -1;
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0)
        return bind_raise(PyExc_ValueError, "%s must be an int >= 0", what);
    *dst = v;
    return 0;
}

BIND_GETTER(MigrationCredit_explore_left, MigrationCreditObject, PyLong_FromLongLong(self->explore_left))

static int MigrationCredit_set_explore_left(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    if (set_count(&self->explore_left, value, "explore_left") < 0)
        return -1;
    if (self->explore_left && !self->explore_steps) {
        self->explore_left = 0;
        return bind_raise(PyExc_ValueError, "explore_left: no warm-up was set up (explore_steps 0)");
    }
    return 0;
}

BIND_GETTER(MigrationCredit_idle_left, MigrationCreditObject, PyLong_FromLongLong(self->idle_left))

static int MigrationCredit_set_idle_left(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    return set_count(&self->idle_left, value, "idle_left");
}

BIND_GETTER(MigrationCredit_delay_cost, MigrationCreditObject, PyFloat_FromDouble(self->delay_cost))

static int MigrationCredit_set_delay_cost(MigrationCreditObject *self, PyObject *value, void *closure)
{
    (void)closure;
    double v = value ? PyFloat_AsDouble(value) : -1.0;
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    self->delay_cost = v;
    return 0;
}

static PyGetSetDef MigrationCredit_getset[] = {
    {"read_reward", (getter)MigrationCredit_read_reward, (setter)MigrationCredit_set_read_reward,
     "mean eq.-2 reward of the reads each device served (-1: none yet)", NULL},
    {"evicted_at", (getter)MigrationCredit_evicted_at, (setter)MigrationCredit_set_evicted_at,
     "step of the last placement that evicted, or found the fast device full (Harmonia sets it)", NULL},
    {"evict_cost", (getter)MigrationCredit_evict_cost, NULL, "measured cost of one critical-path eviction", NULL},
    {"fast_write", (getter)MigrationCredit_fast_write, NULL,
     "running eq.-2 reward of fast placements that evicted nothing (-1: none yet)", NULL},
    {"explore_left", (getter)MigrationCredit_explore_left, (setter)MigrationCredit_set_explore_left,
     "decisions left in the epsilon warm-up", NULL},
    {"idle_left", (getter)MigrationCredit_idle_left, (setter)MigrationCredit_set_idle_left,
     "exploratory moves left in the budget", NULL},
    {"delay_cost", (getter)MigrationCredit_delay_cost, (setter)MigrationCredit_set_delay_cost,
     "running mean delay cost of an executed move (move_delay; the agent updates it)", NULL},
    {"decided", (getter)MigrationCredit_decided, NULL, "this step's decision (page, action, reward, device), or None",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef MigrationCredit_methods[] = {
    {"setup", (PyCFunction)MigrationCredit_setup, METH_VARARGS,
     "setup(net, bit_generator, integers, move_reward, epsilon, explore_steps, explore_left, idle_left, "
     "explore_rate, evicting_only, idle_only, move_delay, reward_n, curr_dev_feature): what decide() needs"},
    {"decide", (PyCFunction)(void (*)(void))MigrationCredit_decide, METH_FASTCALL,
     "decide(obs, acting, page, device, step, placement_obs, request, queue_length) -> target device"},
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
    .tp_doc = "Harmonia's migration agent's per-request choice and bookkeeping on a PageCredit (agents/harmonia.py).",
    .tp_base = &PageCreditType,
    .tp_init = (initproc)MigrationCredit_init,
    .tp_dealloc = (destructor)MigrationCredit_dealloc,
    .tp_getset = MigrationCredit_getset,
    .tp_methods = MigrationCredit_methods,
};
