/* Python glue of the C51 kernel (c51_kernel.c): the agents' inference network and trainer.
 *
 * C51Net is the paper's separate inference network, refreshed with the training weights every
 * `sync_every` requests; `act` is the epsilon-greedy decision (its own seeded generator), ~1,000
 * multiply-adds for Harmonia's 7-10-(2x51) network, about a microsecond with the call, where a
 * PyTorch forward call costs tens of microseconds of framework overhead.
 *
 *   net = C51Net(sizes=(7, 10), n_actions=2, n_atoms=51, v_min=0.0, v_max=10.0, epsilon=0.001, seed=0)
 *   net.set_weights([(W0, b0), (W1, b1)])   # float32, W as (out, in) like torch.nn.Linear
 *   a = net.act(obs)                         # epsilon-greedy; obs: float32 buffer of sizes[0] values
 *   a = net.greedy(obs); q = net.q(obs)      # argmax; tuple of n_actions expected values
 *
 * C51Trainer takes the C51 gradient step of the *PyTorch training network in place*: it holds
 * the float32 storage of the torch parameters (numpy views), of the target network and of the
 * replay buffer, and computes what agents/c51.py's PyTorch reference step computes, without
 * autograd's per-operation overhead (~80 µs of CPU per minibatch of 128, ~20x less). The
 * torch module stays the one place of the weights (save/load, sync).
 *
 *   tr = C51Trainer(sizes, n_actions, n_atoms, v_min, v_max, gamma, lr, params, target,
 *                   obs_buf, next_buf, act_buf, rew_buf, batch_size, seed[, disc_buf=])
 *   n = tr.push(obs, action, reward, next_obs[, discount])  # store a transition; returns experiences so far
 *   loss = tr.train(scale, r_lo, r_hi[, indices]) # one minibatch (uniform sample unless given)
 *   tr.invalidate()                               # the target network changed: drop cached targets
 *   tr.submit(scale, r_lo, r_hi)                  # the same step on a uniform sample, in a background thread
 *   steps = tr.drain()                            # wait for submitted steps: [(experiences, loss), ...]
 *
 * submit() draws its minibatch at once and a worker thread takes the steps in submission order
 * (c51_async.c), each on the rows it drew as they were then (push() keeps a row it overwrites
 * while a step that may have drawn it waits), so results are those of train() at the same points:
 * call drain() before reading or changing the training or target network's weights (train(),
 * gradients() and steps wait by themselves). The thread runs without the GIL.
 *
 * Each transition's projected target distribution depends only on the target network, its next
 * observation, reward and discount, so it is cached per replay slot (target_cache=True, default)
 * until the target network is refreshed: a transition is drawn ~16 times between refreshes.
 */
#include "_c51.h"

#include <structmember.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t next_u64(uint64_t *s)  /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t uniform(uint64_t *s, uint64_t n)  /* in [0, n), n < 2^32: multiply-shift */
{
    return ((next_u64(s) >> 32) * n) >> 32;
}

static int parse_sizes(PyObject *sizes, int *out, int *n)
{
    PyObject *seq = PySequence_Fast(sizes, "sizes must be a sequence of layer widths");
    if (!seq)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    int rc = len >= 1 && len <= C51_MAX_LAYERS - 1 ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred())
            rc = -1;
        out[i] = v < 1 || v > C51_MAX_WIDTH ? 0 : (int)v;
    }
    Py_DECREF(seq);
    *n = (int)len;
    return rc;
}

static int make_shape(c51_shape *s, PyObject *sizes, int n_actions, int n_atoms, double v_min, double v_max)
{
    int widths[C51_MAX_LAYERS], n = 0;
    if (parse_sizes(sizes, widths, &n) < 0 || c51_shape_init(s, widths, n, n_actions, n_atoms, v_min, v_max) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "C51 network: need 1 to %d layer widths in 1..%d, n_actions >= 1, "
                         "n_atoms >= 2, n_actions * n_atoms <= %d and v_max > v_min", C51_MAX_LAYERS - 1,
                         C51_MAX_WIDTH, C51_MAX_WIDTH);
        return -1;
    }
    return 0;
}

/* Check a buffer: C-contiguous, `count` items of float32 (or int64). */
static int check_buf(Py_buffer *v, Py_ssize_t count, int int64, const char *what)
{
    const char *f = v->format ? v->format : "?";
    int ok = int64 ? (v->itemsize == 8 && (strcmp(f, "l") == 0 || strcmp(f, "q") == 0))
                   : (v->itemsize == 4 && strcmp(f, "f") == 0);
    if (ok && v->len == count * v->itemsize)
        return 0;
    return bind_raise(PyExc_ValueError, "%s: expected %zd contiguous %s values, got %zd bytes of format '%s'", what,
                      count, int64 ? "int64" : "float32", v->len, f);
}

int c51_read_floats(PyObject *obj, float *dst, Py_ssize_t n, const char *what)
{
    Py_buffer v;
    if (bind_get_buffer(obj, &v, 0) < 0)
        return -1;
    int rc = check_buf(&v, n, 0, what);
    if (rc == 0)
        memcpy(dst, v.buf, (size_t)n * sizeof(float));
    PyBuffer_Release(&v);
    return rc;
}

/* ------------------------------------------------------------------------------------------------
 * C51Net: the inference network.
 */
static void C51Net_dealloc(C51Net *self)
{
    for (int l = 0; l < C51_MAX_LAYERS; l++) {
        PyMem_Free(self->w.w[l]);
        PyMem_Free(self->w.b[l]);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int C51Net_init(C51Net *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sizes", "n_actions", "n_atoms", "v_min", "v_max", "epsilon", "seed", NULL};
    PyObject *sizes;
    int n_actions, n_atoms;
    double v_min, v_max, epsilon = 0.0;
    unsigned long long seed = 0;
    if (self->shape.nlayers)
        return bind_raise(PyExc_RuntimeError, "C51Net is already initialised");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oiidd|dK", kwlist, &sizes, &n_actions, &n_atoms, &v_min, &v_max,
                                     &epsilon, &seed)
        || make_shape(&self->shape, sizes, n_actions, n_atoms, v_min, v_max) < 0)
        return -1;
    if (!(epsilon >= 0.0 && epsilon <= 1.0))
        return bind_raise(PyExc_ValueError, "epsilon must be in [0, 1], got %g", epsilon);
    self->epsilon = epsilon;
    self->rng = seed;
    for (int l = 0; l < self->shape.nlayers; l++) {
        self->w.w[l] = PyMem_Calloc((size_t)self->shape.in[l] * self->shape.in[l + 1], sizeof(float));
        self->w.b[l] = PyMem_Calloc((size_t)self->shape.in[l + 1], sizeof(float));
        if (!self->w.w[l] || !self->w.b[l]) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static PyObject *C51Net_set_weights(C51Net *self, PyObject *layers)
{
    PyObject *seq = PySequence_Fast(layers, "set_weights needs a sequence of (weight, bias) pairs");
    if (!seq)
        return NULL;
    const c51_shape *s = &self->shape;
    if (PySequence_Fast_GET_SIZE(seq) != s->nlayers) {
        PyErr_Format(PyExc_ValueError, "set_weights: expected %d (weight, bias) pairs, got %zd", s->nlayers,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    c51_weights src = {{NULL}, {NULL}};  /* as given, (out, in); the network keeps them transposed */
    int rc = 0;
    for (int l = 0; rc == 0 && l < s->nlayers; l++) {
        PyObject *w, *b;
        char what[48];
        snprintf(what, sizeof what, "layer %d", l);
        src.w[l] = PyMem_Malloc((size_t)s->in[l] * s->in[l + 1] * sizeof(float));
        src.b[l] = PyMem_Malloc((size_t)s->in[l + 1] * sizeof(float));
        if (!src.w[l] || !src.b[l]) {
            PyErr_NoMemory();
            rc = -1;
        } else if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, l), "OO", &w, &b)
                   || c51_read_floats(w, src.w[l], (Py_ssize_t)s->in[l] * s->in[l + 1], what) < 0
                   || c51_read_floats(b, src.b[l], s->in[l + 1], what) < 0)
            rc = -1;
    }
    if (rc == 0)
        c51_transpose_weights(s, &src, &self->w);
    for (int l = 0; l < s->nlayers; l++) {
        PyMem_Free(src.w[l]);
        PyMem_Free(src.b[l]);
    }
    Py_DECREF(seq);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

int net_q(C51Net *self, PyObject *obs, float *q)
{
    float x[C51_MAX_WIDTH];
    if (c51_read_floats(obs, x, self->shape.in[0], "observation") < 0)
        return -1;
    c51_q(&self->shape, &self->w, x, q);
    return 0;
}

static PyObject *C51Net_greedy(C51Net *self, PyObject *obs)
{
    float q[C51_MAX_WIDTH];
    if (net_q(self, obs, q) < 0)
        return NULL;
    int best = 0;
    for (int a = 1; a < self->shape.n_actions; a++)
        if (q[a] > q[best])
            best = a;
    return PyLong_FromLong(best);
}

static PyObject *C51Net_act(C51Net *self, PyObject *obs)
{
    /* As random.random() < epsilon, with 53 random bits. */
    if (self->epsilon > 0.0 && (double)(next_u64(&self->rng) >> 11) * 0x1.0p-53 < self->epsilon) {
        float x[C51_MAX_WIDTH];
        if (c51_read_floats(obs, x, self->shape.in[0], "observation") < 0)
            return NULL;
        return PyLong_FromUnsignedLongLong(uniform(&self->rng, (uint64_t)self->shape.n_actions));
    }
    return C51Net_greedy(self, obs);
}

static PyObject *C51Net_q(C51Net *self, PyObject *obs)
{
    float q[C51_MAX_WIDTH];
    if (net_q(self, obs, q) < 0)
        return NULL;
    PyObject *t = PyTuple_New(self->shape.n_actions);
    if (!t)
        return NULL;
    for (int a = 0; a < self->shape.n_actions; a++)
        PyTuple_SET_ITEM(t, a, PyFloat_FromDouble(q[a]));
    return t;
}

BIND_GETTER(C51Net_get_epsilon, C51Net, PyFloat_FromDouble(self->epsilon))

static int C51Net_set_epsilon(C51Net *self, PyObject *value, void *closure)
{
    (void)closure;
    double e = value ? PyFloat_AsDouble(value) : -1.0;
    if (PyErr_Occurred())
        return -1;
    if (!(e >= 0.0 && e <= 1.0))
        return bind_raise(PyExc_ValueError, "epsilon must be in [0, 1], got %g", e);
    self->epsilon = e;
    return 0;
}

static PyGetSetDef C51Net_getset[] = {
    {"epsilon", (getter)C51Net_get_epsilon, (setter)C51Net_set_epsilon, "exploration rate of act()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef C51Net_methods[] = {
    {"set_weights", (PyCFunction)C51Net_set_weights, METH_O,
     "set_weights([(W, b), ...]): float32 weights (out, in) and biases of every linear layer"},
    {"act", (PyCFunction)C51Net_act, METH_O, "act(obs) -> epsilon-greedy action"},
    {"greedy", (PyCFunction)C51Net_greedy, METH_O, "greedy(obs) -> the action with the highest expected value"},
    {"q", (PyCFunction)C51Net_q, METH_O, "q(obs) -> expected value of each action"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject C51NetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.agents._c51.C51Net",
    .tp_basicsize = sizeof(C51Net),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "C51 inference network: swish MLP, softmax over atoms, epsilon-greedy argmax of expected values.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)C51Net_init,
    .tp_dealloc = (destructor)C51Net_dealloc,
    .tp_methods = C51Net_methods,
    .tp_getset = C51Net_getset,
};

/* ------------------------------------------------------------------------------------------------
 * C51Trainer: the gradient step, in place on the torch parameters, with the replay buffer.
 */

/* Steps the agent's thread may run ahead of the worker: 32 (a queued step keeps its slot numbers
 * only, 16 KiB for Harmonia's placement agent, 32 KiB for its migration agent), and 512 shadow rows
 * (40 KiB) for the slots pushed over while they wait (c51_async.h): room for the bursts of steps
 * that an expiry of many transitions submits at once. */
#define ASYNC_STEPS 32
#define ASYNC_SHADOW 512

static void trainer_wait(C51Trainer *self)
{
    if (self->async) {
        Py_BEGIN_ALLOW_THREADS
        c51_async_flush(self->async);
        Py_END_ALLOW_THREADS
    }
}

static void C51Trainer_dealloc(C51Trainer *self)
{
    if (self->async) {  /* stops the worker before the buffers it uses are released */
        Py_BEGIN_ALLOW_THREADS
        c51_async_free(self->async);
        Py_END_ALLOW_THREADS
    }
    bind_release(self->bufs, self->nheld);
    if (self->ready)
        c51_trainer_free(&self->t);
    PyMem_Free(self->idx);
    PyMem_Free(self->rb.mcache);
    PyMem_Free(self->rb.mgen);
    PyMem_Free(self->rb.mver);
    PyMem_Free(self->slotver);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Hold the next buffer from obj (writable when asked) and return its memory, or NULL. */
static void *hold(C51Trainer *self, PyObject *obj, Py_ssize_t count, int int64, int writable, const char *what)
{
    Py_buffer *v = &self->bufs[self->nheld];
    if (bind_get_buffer(obj, v, writable) < 0)
        return NULL;
    self->nheld++;
    return check_buf(v, count, int64, what) < 0 ? NULL : v->buf;
}

static int hold_layers(C51Trainer *self, PyObject *layers, c51_weights *dst, int writable, const char *what)
{
    const c51_shape *s = &self->t.shape;
    PyObject *seq = PySequence_Fast(layers, "weights must be a sequence of (weight, bias) pairs");
    if (!seq)
        return -1;
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != s->nlayers) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d (weight, bias) pairs, got %zd", what, s->nlayers,
                     PySequence_Fast_GET_SIZE(seq));
        rc = -1;
    }
    for (int l = 0; rc == 0 && l < s->nlayers; l++) {
        PyObject *w, *b;
        char name[64];
        snprintf(name, sizeof name, "%s layer %d", what, l);
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, l), "OO", &w, &b)
            || !(dst->w[l] = hold(self, w, (Py_ssize_t)s->in[l] * s->in[l + 1], 0, writable, name))
            || !(dst->b[l] = hold(self, b, s->in[l + 1], 0, writable, name)))
            rc = -1;
    }
    Py_DECREF(seq);
    return rc;
}

static int C51Trainer_init(C51Trainer *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sizes", "n_actions", "n_atoms", "v_min", "v_max", "gamma", "lr", "params",
                             "target", "obs_buf", "next_buf", "act_buf", "rew_buf", "batch_size", "seed",
                             "betas", "eps", "disc_buf", "target_cache", NULL};
    PyObject *sizes, *params, *target, *obs, *next, *act, *rew, *disc = Py_None;
    int n_actions, n_atoms, batch, cache = 1;
    double v_min, v_max, gamma, lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    unsigned long long seed;
    c51_shape shape;
    if (self->ready)
        return bind_raise(PyExc_RuntimeError, "C51Trainer is already initialised");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiiddddOOOOOOiK|(dd)dOp", kwlist, &sizes, &n_actions, &n_atoms,
                                     &v_min, &v_max, &gamma, &lr, &params, &target, &obs, &next, &act, &rew,
                                     &batch, &seed, &beta1, &beta2, &eps, &disc, &cache)
        || make_shape(&shape, sizes, n_actions, n_atoms, v_min, v_max) < 0)
        return -1;
    if (batch < 1 || !(gamma >= 0 && gamma < 1) || !(lr > 0))
        return bind_raise(PyExc_ValueError, "C51Trainer: need batch_size >= 1, 0 <= gamma < 1 and lr > 0");
    if (c51_trainer_init(&self->t, &shape, gamma, lr, beta1, beta2, eps, batch) < 0
        || !(self->idx = PyMem_Calloc((size_t)batch, sizeof(int64_t)))) {
        PyErr_NoMemory();
        return -1;
    }
    self->ready = 1;
    self->rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    if (hold_layers(self, params, &self->t.params, 1, "params") < 0
        || hold_layers(self, target, &self->t.target, 0, "target") < 0)
        return -1;
    Py_buffer probe;  /* the replay buffer's capacity is the length of act_buf */
    if (PyObject_GetBuffer(act, &probe, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    Py_ssize_t cap = probe.itemsize ? probe.len / probe.itemsize : 0;
    PyBuffer_Release(&probe);
    if (cap < 1 || cap > INT32_MAX)
        return bind_raise(PyExc_ValueError, "act_buf: the replay buffer needs a capacity of at least 1");
    self->cap = (int)cap;
    if (!(self->slotver = PyMem_Calloc((size_t)cap, sizeof(int64_t)))) {
        PyErr_NoMemory();
        return -1;
    }
    self->rb.ver = self->slotver;
    if (!(self->rb.obs = hold(self, obs, cap * shape.in[0], 0, 1, "obs_buf"))
        || !(self->rb.next = hold(self, next, cap * shape.in[0], 0, 1, "next_buf"))
        || !(self->rb.act = hold(self, act, cap, 1, 1, "act_buf"))
        || !(self->rb.rew = hold(self, rew, cap, 0, 1, "rew_buf"))
        || (disc != Py_None && !(self->rb.disc = hold(self, disc, cap, 0, 1, "disc_buf"))))
        return -1;
    if (cache) {
        self->rb.mcache = PyMem_Calloc((size_t)cap * (size_t)shape.n_atoms, sizeof(float));
        self->rb.mgen = PyMem_Calloc((size_t)cap, sizeof(int64_t));
        self->rb.mver = PyMem_Calloc((size_t)cap, sizeof(int64_t));
        if (!self->rb.mcache || !self->rb.mgen || !self->rb.mver) {
            PyErr_NoMemory();
            return -1;
        }
        self->rb.gen = 1;
    }
    return 0;
}

long long c51_trainer_store(C51Trainer *self, const float *obs, long a, double r, const float *next, double g)
{
    long long n = self->experiences;
    if (self->async) {  /* steps waiting in the background may have drawn the slot */
        int nin = self->t.shape.in[0];
        float o[C51_MAX_WIDTH], x[C51_MAX_WIDTH];  /* the caller's rows, before the GIL is released */
        memcpy(o, obs, (size_t)nin * sizeof(float));
        memcpy(x, next, (size_t)nin * sizeof(float));
        Py_BEGIN_ALLOW_THREADS
        c51_async_push(self->async, n, o, x, a, (float)r, (float)g, n + 1);
        Py_END_ALLOW_THREADS
    } else {
        int i = (int)(n % self->cap), nin = self->t.shape.in[0];
        memcpy((float *)self->rb.obs + (size_t)i * nin, obs, (size_t)nin * sizeof(float));
        memcpy((float *)self->rb.next + (size_t)i * nin, next, (size_t)nin * sizeof(float));
        ((int64_t *)self->rb.act)[i] = a;
        ((float *)self->rb.rew)[i] = (float)r;
        self->slotver[i] = n + 1;  /* cached targets of the old transition no longer match */
        if (self->rb.disc)
            ((float *)self->rb.disc)[i] = (float)g;
    }
    self->experiences++;
    if (self->size < self->cap)
        self->size++;
    return self->experiences;
}

int c51_check_discount(C51Trainer *self, double g)
{
    if (self->rb.disc && g >= 0 && g < 1)
        return 0;
    PyErr_SetString(PyExc_ValueError, self->rb.disc ? "push: discount must be in [0, 1)"
                                                    : "push: a discount needs a trainer made with disc_buf");
    return -1;
}

static PyObject *C51Trainer_push(C51Trainer *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 4, 5, "push(obs, action, reward, next_obs[, discount]) takes 4 or 5 arguments") < 0)
        return NULL;
    if (!self->ready)
        return PyErr_Format(PyExc_RuntimeError, "C51Trainer is not initialised");
    long a = PyLong_AsLong(args[1]);
    double r = PyFloat_AsDouble(args[2]);
    double g = nargs == 5 ? PyFloat_AsDouble(args[4]) : self->t.gamma;
    if (PyErr_Occurred())
        return NULL;
    if (nargs == 5 && c51_check_discount(self, g) < 0)
        return NULL;
    if (a < 0 || a >= self->t.shape.n_actions)
        return PyErr_Format(PyExc_ValueError, "push: action %ld out of range 0..%d", a, self->t.shape.n_actions - 1);
    int nin = self->t.shape.in[0];
    float obs[C51_MAX_WIDTH], next[C51_MAX_WIDTH];
    if (c51_read_floats(args[0], obs, nin, "obs") < 0 || c51_read_floats(args[3], next, nin, "next_obs") < 0)
        return NULL;
    return PyLong_FromLongLong(c51_trainer_store(self, obs, a, r, next, g));
}

static void sample(C51Trainer *self)
{
    for (int s = 0; s < self->t.batch; s++)
        self->idx[s] = (int64_t)uniform(&self->rng, (uint64_t)self->size);
}

static void check_scaling(C51Trainer *self, double scale, double r_lo, double r_hi)
{
    if (self->rb.mcache && (scale != self->cached_scale || r_lo != self->cached_lo || r_hi != self->cached_hi)) {
        self->rb.gen++;  /* cached targets were projected with another reward scaling */
        self->cached_scale = scale, self->cached_lo = r_lo, self->cached_hi = r_hi;
    }
}

static PyObject *C51Trainer_submit(C51Trainer *self, PyObject *args)
{
    double scale, r_lo, r_hi;
    if (!PyArg_ParseTuple(args, "ddd", &scale, &r_lo, &r_hi))
        return NULL;
    if (!self->ready || self->size < 1)
        return PyErr_Format(PyExc_RuntimeError, "submit: the replay buffer is empty");
    if (!self->async && !(self->async = c51_async_new(&self->t, &self->rb, self->cap, self->t.shape.in[0],
                                                      ASYNC_STEPS, ASYNC_SHADOW)))
        return PyErr_NoMemory();
    sample(self);
    check_scaling(self, scale, r_lo, r_hi);
    Py_BEGIN_ALLOW_THREADS
    c51_async_submit(self->async, self->idx, self->rb.gen, scale, r_lo, r_hi, self->experiences);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *C51Trainer_drain(C51Trainer *self, PyObject *unused)
{
    (void)unused;
    if (!self->async)
        return PyList_New(0);
    const long long *exps;
    const double *losses;
    size_t n;
    Py_BEGIN_ALLOW_THREADS
    n = c51_async_take(self->async, &exps, &losses);
    Py_END_ALLOW_THREADS
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *pair = Py_BuildValue("(Ld)", exps[i], losses[i]);
        if (!pair) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, pair);
    }
    return out;
}

static PyObject *C51Trainer_train(C51Trainer *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"scale", "r_lo", "r_hi", "indices", "apply", NULL};
    double scale, r_lo, r_hi;
    PyObject *indices = Py_None;
    int apply = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ddd|Op", kwlist, &scale, &r_lo, &r_hi, &indices, &apply))
        return NULL;
    int B = self->t.batch;
    if (!self->ready || self->size < 1)
        return PyErr_Format(PyExc_RuntimeError, "train: the replay buffer is empty");
    trainer_wait(self);  /* the submitted steps come first */
    if (indices == Py_None) {
        sample(self);
    } else {
        PyObject *seq = PySequence_Fast(indices, "indices must be a sequence of buffer positions");
        if (!seq)
            return NULL;
        int bad = PySequence_Fast_GET_SIZE(seq) != B;
        for (int s = 0; !bad && s < B; s++) {
            Py_ssize_t v = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, s), PyExc_IndexError);
            bad = v < 0 || v >= self->size;
            self->idx[s] = v;
        }
        Py_DECREF(seq);
        if (bad) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "train: indices needs %d positions in 0..%d", B, self->size - 1);
            return NULL;
        }
    }
    check_scaling(self, scale, r_lo, r_hi);
    double loss = c51_gradients(&self->t, &self->rb, self->idx, scale, r_lo, r_hi);
    if (apply)
        c51_adam(&self->t);
    return PyFloat_FromDouble(loss);
}

static PyObject *C51Trainer_invalidate(C51Trainer *self, PyObject *unused)
{
    (void)unused;
    self->rb.gen++;
    Py_RETURN_NONE;
}

static PyObject *C51Trainer_gradients(C51Trainer *self, PyObject *unused)
{
    (void)unused;
    trainer_wait(self);
    const c51_shape *s = &self->t.shape;
    PyObject *out = PyList_New(self->ready ? s->nlayers : 0);
    for (int l = 0; out && self->ready && l < s->nlayers; l++) {
        PyObject *pair = Py_BuildValue("(y#y#)", (const char *)self->t.gw[l],
                                       (Py_ssize_t)(sizeof(float) * s->in[l] * s->in[l + 1]),
                                       (const char *)self->t.gb[l], (Py_ssize_t)(sizeof(float) * s->in[l + 1]));
        if (!pair) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, l, pair);
    }
    return out;
}

static PyObject *C51Trainer_nbytes(C51Trainer *self, void *closure)
{
    (void)closure;
    size_t cache = self->rb.mcache ? (size_t)self->cap * ((size_t)self->t.shape.n_atoms * sizeof(float) + 16) : 0;
    size_t own = (size_t)self->t.batch * 8 + (size_t)self->cap * 8 + (self->async ? c51_async_bytes(self->async) : 0);
    return PyLong_FromSize_t(self->ready ? c51_trainer_bytes(&self->t) + own + cache : 0);
}

static PyMemberDef C51Trainer_members[] = {
    {"size", T_INT, offsetof(C51Trainer, size), READONLY, "transitions in the replay buffer"},
    {"experiences", T_LONGLONG, offsetof(C51Trainer, experiences), READONLY, "transitions pushed so far"},
    {"capacity", T_INT, offsetof(C51Trainer, cap), READONLY, "replay buffer capacity"},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *C51Trainer_steps(C51Trainer *self, void *closure)
{
    (void)closure;
    trainer_wait(self);
    return PyLong_FromLongLong(self->t.steps);
}

static PyGetSetDef C51Trainer_getset[] = {
    {"steps", (getter)C51Trainer_steps, NULL, "gradient steps taken (waits for submitted steps)", NULL},
    {"nbytes", (getter)C51Trainer_nbytes, NULL, "bytes of the trainer's own state (moments, scratch)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef C51Trainer_methods[] = {
    {"invalidate", (PyCFunction)C51Trainer_invalidate, METH_NOARGS,
     "forget the cached target distributions (call when the target network changes)"},
    {"push", (PyCFunction)(void (*)(void))C51Trainer_push, METH_FASTCALL,
     "push(obs, action, reward, next_obs[, discount]) -> experiences: store a transition in the replay ring "
     "(discount: of the next state, default gamma; 0 = terminal; needs disc_buf)"},
    {"train", (PyCFunction)(void (*)(void))C51Trainer_train, METH_VARARGS | METH_KEYWORDS,
     "train(scale, r_lo, r_hi, indices=None, apply=True) -> loss: one minibatch gradient step (Adam) "
     "in place; apply=False only computes the gradients"},
    {"submit", (PyCFunction)C51Trainer_submit, METH_VARARGS,
     "submit(scale, r_lo, r_hi): one minibatch step on a uniform sample, taken by a background thread in "
     "submission order (the minibatch is drawn now; its rows are read as they are now); results as train()'s"},
    {"drain", (PyCFunction)C51Trainer_drain, METH_NOARGS,
     "drain() -> [(experiences, loss), ...]: wait for the submitted steps; those done since the last drain"},
    {"gradients", (PyCFunction)C51Trainer_gradients, METH_NOARGS,
     "gradients() -> [(dW bytes, db bytes), ...]: float32 gradients of the last train() call"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject C51TrainerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.agents._c51.C51Trainer",
    .tp_basicsize = sizeof(C51Trainer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "C51 gradient step on a torch training network's parameters, with its replay buffer.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)C51Trainer_init,
    .tp_dealloc = (destructor)C51Trainer_dealloc,
    .tp_members = C51Trainer_members,
    .tp_getset = C51Trainer_getset,
    .tp_methods = C51Trainer_methods,
};

static struct PyModuleDef c51module = {
    PyModuleDef_HEAD_INIT, "_c51", "C51 inference network and trainer of the reference agents.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__c51(void)
{
    return bind_module(&c51module,
                       (PyTypeObject *[]){&C51NetType, &C51TrainerType, &PageCreditType, &MigrationCreditType, NULL});
}
