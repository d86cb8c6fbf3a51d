/* hss_gym.backends._lqoco: the Python binding of the L-QoCo simulator (lqoco_sim.c).
 *
 *   Sim(capacity, w_cap, dt, slots, bucket_s, bypass_us, read_hit, sync_share, gc_extra,
 *       gc_burst, gc_share)          bypass_us None = host queue only
 *   .set_mix(io, rd_cost, rd_lat, byp_cost, byp_lat, sync_cost, sync_lat, cache_cost, cache_lat,
 *            flush_io, flush_const, seek_min, seek_max, half_rot, write_bw, n)
 *   .period(rate_bps, read_bps, write_bps, host_queue_b, rd_io, wr_io) -> (admitted, flush_cap,
 *            flushed, bypassed, reads, throughput, full_s, throttled, gc_s)
 *   .flush_cost(dirty), .quantile(q), .dirty, .hq, .backlog, .lat_sum, .n_req, .hist
 *   Env(sim, table, traces, seed, ...)   one env's episode over a fresh Sim (lqoco_env.c)
 *   VecEnv(n, raw, arrays)               a batch of Envs stepped in one call
 * The model and its parameters are described in backends/lqoco/model.py, the env's logic in
 * lqoco_env.h.
 */
#include "binding.h"

#include "lqoco_env.h"
#include "lqoco_sim.h"

typedef struct {
    PyObject_HEAD
    lq_sim s;
    int ready;
} SimObject;

static void Sim_dealloc(SimObject *self)
{
    if (self->ready)
        lq_free(&self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Sim_init(SimObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "w_cap", "dt", "slots", "bucket_s", "bypass_us", "read_hit",
                             "sync_share", "gc_extra", "gc_burst", "gc_share", NULL};
    lq_params p;
    PyObject *bypass;
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "dddidOddddd", kwlist, &p.capacity, &p.w_cap, &p.dt,
                                     &p.slots, &p.bucket_s, &bypass, &p.read_hit, &p.sync_share,
                                     &p.gc_extra, &p.gc_burst, &p.gc_share))
        return -1;
    if (bypass != Py_None) {
        p.has_bypass = 1;
        p.bypass_us = PyFloat_AsDouble(bypass);
        if (p.bypass_us == -1.0 && PyErr_Occurred())
            return -1;
    }
    const char *why = lq_check(&p);
    if (why)
        return bind_raise(PyExc_ValueError, "L-QoCo simulator: %s", why);
    if (self->ready)
        lq_free(&self->s);
    self->ready = 0;
    if (lq_init(&self->s, &p) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->ready = 1;
    return 0;
}

static int ready(SimObject *self)
{
    if (!self->ready)
        PyErr_SetString(PyExc_RuntimeError, "L-QoCo simulator not initialised");
    return self->ready;
}

static PyObject *Sim_set_mix(SimObject *self, PyObject *args)
{
    lq_mix m;
    if (!ready(self))
        return NULL;
    if (!PyArg_ParseTuple(args, "dddddddddddddddi", &m.io, &m.rd_cost, &m.rd_lat, &m.byp_cost,
                          &m.byp_lat, &m.sync_cost, &m.sync_lat, &m.cache_cost, &m.cache_lat,
                          &m.flush_io, &m.flush_const, &m.seek_min, &m.seek_max, &m.half_rot,
                          &m.write_bw, &m.n))
        return NULL;
    if (!(m.io > 0 && m.rd_cost > 0 && m.byp_cost > 0 && m.sync_cost > 0 && m.cache_cost > 0
          && m.flush_io > 0 && m.n > 0 && (m.flush_const > 0 || m.write_bw > 0)))
        return PyErr_Format(PyExc_ValueError, "L-QoCo simulator: mix costs and sizes must be > 0");
    lq_set_mix(&self->s, &m);
    Py_RETURN_NONE;
}

static PyObject *Sim_period(SimObject *self, PyObject *args)
{
    double rate, rd, wr, hq, rd_io, wr_io;
    lq_stats st;
    if (!ready(self))
        return NULL;
    if (!PyArg_ParseTuple(args, "dddddd", &rate, &rd, &wr, &hq, &rd_io, &wr_io))
        return NULL;
    if (!(rd_io > 0 && wr_io > 0) || self->s.m.io <= 0)
        return PyErr_Format(PyExc_ValueError, "L-QoCo simulator: call set_mix first; request sizes must be > 0");
    if (lq_period(&self->s, rate, rd, wr, hq, rd_io, wr_io, &st) != 0)
        return PyErr_NoMemory();
    return Py_BuildValue("(ddddddddd)", st.admitted, st.flush_cap, st.flushed, st.bypassed, st.reads,
                         st.throughput, st.full_s, st.throttled, st.gc_s);
}

static PyObject *Sim_flush_cost(SimObject *self, PyObject *args)
{
    double dirty;
    if (!ready(self) || !PyArg_ParseTuple(args, "d", &dirty))
        return NULL;
    return PyFloat_FromDouble(lq_flush_cost(&self->s, dirty));
}

static PyObject *Sim_quantile(SimObject *self, PyObject *args)
{
    double q;
    if (!ready(self) || !PyArg_ParseTuple(args, "d", &q))
        return NULL;
    return PyFloat_FromDouble(lq_quantile(&self->s, q));
}

BIND_GETTER(Sim_hist, SimObject, bind_float_list(self->s.hist, LQ_BINS))
BIND_GETTER(Sim_get_dirty, SimObject, PyFloat_FromDouble(self->s.dirty))
BIND_GETTER(Sim_get_hq, SimObject, PyFloat_FromDouble(self->s.hq))
BIND_GETTER(Sim_get_backlog, SimObject, PyFloat_FromDouble(self->s.backlog))
BIND_GETTER(Sim_get_lat_sum, SimObject, PyFloat_FromDouble(self->s.lat_sum))
BIND_GETTER(Sim_get_n_req, SimObject, PyFloat_FromDouble(self->s.n_req))

static PyMethodDef Sim_methods[] = {
    {"set_mix", (PyCFunction)Sim_set_mix, METH_VARARGS, "set_mix(...): per-mix costs"},
    {"period", (PyCFunction)Sim_period, METH_VARARGS, "period(rate, read, write, host_queue, rd_io, wr_io) -> stats"},
    {"flush_cost", (PyCFunction)Sim_flush_cost, METH_VARARGS, "flush_cost(dirty) -> tier us per byte"},
    {"quantile", (PyCFunction)Sim_quantile, METH_VARARGS, "quantile(q) -> latency (us)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Sim_getset[] = {
    {"dirty", (getter)Sim_get_dirty, NULL, "dirty bytes in the cache", NULL},
    {"hq", (getter)Sim_get_hq, NULL, "bytes waiting in the host queue", NULL},
    {"backlog", (getter)Sim_get_backlog, NULL, "tier foreground work queued (us)", NULL},
    {"lat_sum", (getter)Sim_get_lat_sum, NULL, "sum of request latencies (us)", NULL},
    {"n_req", (getter)Sim_get_n_req, NULL, "requests recorded", NULL},
    {"hist", (getter)Sim_hist, NULL, "latency histogram (requests per bin, 20 bins per decade from 1 us)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SimType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._lqoco.Sim",
    .tp_basicsize = sizeof(SimObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The L-QoCo cache/storage-tier simulator (see backends/lqoco/model.py)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sim_init,
    .tp_dealloc = (destructor)Sim_dealloc,
    .tp_methods = Sim_methods,
    .tp_getset = Sim_getset,
};

/* ------------------------------------------------------------------ Env */

/* The columns of Env's phase table, one row per phase: the 16 values of Sim.set_mix, then
 * nominal, read_ratio, hq, rate_lo, rate_hi, p_high, inv_on, inv_off, high, low, wiggle, periods
 * (lq_phase's fields, in its order). */
#define LQ_PHASE_COLS 28

typedef struct {
    PyObject_HEAD
    lq_env e;
    PyObject *sim;   /* the Sim stepped (strong) */
    lq_phase *ph;    /* the phases, and the copies of their traces */
    double **traces;
    int nph, ready;
} EnvObject;

static void Env_clear(EnvObject *self)
{
    if (self->ready)
        lq_env_free(&self->e);
    self->ready = 0;
    for (int i = 0; self->traces && i < self->nph; i++)
        PyMem_Free(self->traces[i]);
    PyMem_Free(self->traces);
    PyMem_Free(self->ph);
    self->traces = NULL, self->ph = NULL, self->nph = 0;
    Py_CLEAR(self->sim);
}

static void Env_dealloc(EnvObject *self)
{
    Env_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Phase i from row i of the table and its trace (None, or float64 [4, periods]). */
static int env_phase(EnvObject *self, int i, const double *row, PyObject *trace)
{
    lq_phase *ph = &self->ph[i];
    lq_mix *m = &ph->mix;
    double *mv[15] = {&m->io, &m->rd_cost, &m->rd_lat, &m->byp_cost, &m->byp_lat, &m->sync_cost, &m->sync_lat,
                      &m->cache_cost, &m->cache_lat, &m->flush_io, &m->flush_const, &m->seek_min, &m->seek_max,
                      &m->half_rot, &m->write_bw};
    for (int j = 0; j < 15; j++)
        *mv[j] = row[j];
    m->n = (int)row[15];
    double *pv[11] = {&ph->nominal, &ph->read_ratio, &ph->hq, &ph->rate_lo, &ph->rate_hi, &ph->p_high,
                      &ph->inv_on, &ph->inv_off, &ph->high, &ph->low, &ph->wiggle};
    for (int j = 0; j < 11; j++)
        *pv[j] = row[16 + j];
    if (!(row[15] >= 1 && row[15] <= 1e6 && row[27] >= 1 && row[27] <= 1e15))
        return bind_raise(PyExc_ValueError, "Env: phase %d needs 1 <= n and 1 <= periods", i);
    ph->periods = (long)row[27];
    if (trace == Py_None)
        return 0;
    Py_buffer b;
    if (bind_get_buffer(trace, &b, 0) < 0)
        return -1;
    int ok = b.ndim == 2 && b.shape[0] == 4 && b.shape[1] == ph->periods && bind_format(&b)[0] == 'd';
    if (ok && (self->traces[i] = PyMem_Malloc((size_t)b.len)))
        memcpy(self->traces[i], b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    if (!ok)
        return bind_raise(PyExc_ValueError, "Env: phase %d's trace must be a C-contiguous float64 array of shape "
                          "(4, %ld)", i, ph->periods);
    if (!self->traces[i]) {
        PyErr_NoMemory();
        return -1;
    }
    ph->trace = self->traces[i];
    return 0;
}

/* Env(sim, table, traces, seed, periods, period_s, load, capacity, init_rate, magnitudes, w_bins,
 *     p_tol, b_band, bdp_window, weights, eq8): an episode of hss/LQoCo-v0 over `sim` (a Sim just
 * made, no period run), its phases the rows of `table` (float64 [phases, 28]) with `traces` (one
 * None or float64 [4, periods] per phase), its arrivals drawing from random.Random(seed); the
 * rest are LQoCoEnv's options (capacity in bytes). The phase table is computed in
 * hss_gym/envs/lqoco/env.py. */
static int Env_init(EnvObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sim", "table", "traces", "seed", "periods", "period_s", "load", "capacity",
                             "init_rate", "magnitudes", "w_bins", "p_tol", "b_band", "bdp_window", "weights",
                             "eq8", NULL};
    lq_env_params p;
    PyObject *sim, *table, *traces, *seed_o;
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OOOldddd(ddddd)(ddd)d(dd)i(ddd)p", kwlist, &SimType, &sim, &table,
                                     &traces, &seed_o, &p.periods, &p.period_s, &p.load, &p.capacity, &p.init_rate,
                                     &p.magnitudes[0], &p.magnitudes[1], &p.magnitudes[2], &p.magnitudes[3],
                                     &p.magnitudes[4], &p.w_bins[0], &p.w_bins[1], &p.w_bins[2], &p.p_tol, &p.b_lo,
                                     &p.b_hi, &p.bdp_window, &p.weights[0], &p.weights[1], &p.weights[2], &p.eq8))
        return -1;
    unsigned long long seed = PyLong_Check(seed_o) ? PyLong_AsUnsignedLongLong(seed_o) : (unsigned long long)-1;
    if (PyErr_Occurred() || !PyLong_Check(seed_o))
        return bind_raise(PyExc_ValueError, "Env: seed must be an int in [0, 2**64)");
    SimObject *s = (SimObject *)sim;
    if (!s->ready || s->s.slot != 0)
        return bind_raise(PyExc_ValueError, "Env: sim must be a Sim that has run no period");
    if (self->sim || self->ph)
        return bind_raise(PyExc_RuntimeError, "Env is initialised once");
    Py_buffer b;
    if (bind_get_buffer(table, &b, 0) < 0)
        return -1;
    int nph = b.ndim == 2 ? (int)b.shape[0] : 0;
    if (nph < 1 || b.shape[1] != LQ_PHASE_COLS || bind_format(&b)[0] != 'd') {
        PyBuffer_Release(&b);
        return bind_raise(PyExc_ValueError, "Env: table must be a C-contiguous float64 array of shape (phases, %d)",
                          LQ_PHASE_COLS);
    }
    PyObject *tr = PySequence_Fast(traces, "Env: traces must be a sequence");
    int rc = -1;
    if (!tr)
        goto done;
    if (PySequence_Fast_GET_SIZE(tr) != nph) {
        bind_raise(PyExc_ValueError, "Env: traces needs one entry per phase (%d)", nph);
        goto done;
    }
    if (!(self->ph = PyMem_Calloc((size_t)nph, sizeof *self->ph))
        || !(self->traces = PyMem_Calloc((size_t)nph, sizeof *self->traces))) {
        PyErr_NoMemory();
        goto done;
    }
    self->nph = nph;
    for (int i = 0; i < nph; i++)
        if (env_phase(self, i, (const double *)b.buf + (size_t)i * LQ_PHASE_COLS, PySequence_Fast_GET_ITEM(tr, i)) < 0)
            goto done;
    const char *why = lq_env_check(&p, self->ph, nph);
    if (why) {
        bind_raise(PyExc_ValueError, "Env: %s", why);
        goto done;
    }
    Py_INCREF(sim);
    self->sim = sim;
    self->ready = 1;
    if (lq_env_init(&self->e, &s->s, &p, self->ph, nph, (uint64_t)seed) != 0) {
        PyErr_NoMemory();
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(tr);
    PyBuffer_Release(&b);
    return rc;
}

static int env_ready(EnvObject *self)
{
    if (!self->ready)
        return bind_raise(PyExc_RuntimeError, "L-QoCo Env not initialised");
    return 0;
}

/* (reward, truncated, t, state, phase, W, P, B_use, btlbw_mbps, rate_mbps, nominal_mbps,
 *  admitted_mbps, flush_mbps, flushed_mbps, bypassed_mbps, throughput_mbps, full_s, gc_s,
 *  throttled_mb): what the single env's step returns and its info holds. */
static PyObject *env_values(EnvObject *self)
{
    const lq_env *e = &self->e;
    double v[LQ_INFO];
    lq_env_info(e, 0, v, 1, 0);
    return Py_BuildValue("(dNlii" "dddddd" "dddddddd)", e->reward, PyBool_FromLong(e->t >= e->p.periods), e->t,
                         lq_env_state(e), e->phase, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
                         v[10], v[11], v[12], v[13]);
}

static PyObject *env_advance(EnvObject *self, int a, double rate)
{
    if (self->e.t >= self->e.p.periods)
        return PyErr_Format(PyExc_RuntimeError, "L-QoCo Env: the episode is over (%ld periods)", self->e.p.periods);
    if ((a >= 0 ? lq_env_step(&self->e, a) : lq_env_advance(&self->e, rate)) != 0)
        return PyErr_NoMemory();
    return env_values(self);
}

static PyObject *Env_step(EnvObject *self, PyObject *arg)
{
    long a = PyLong_AsLong(arg);
    if (a == -1 && PyErr_Occurred())
        return NULL;
    if (env_ready(self) < 0)
        return NULL;
    if (a < 0 || a > 4)
        return PyErr_Format(PyExc_ValueError, "L-QoCo Env: action must be in 0..4, got %ld", a);
    return env_advance(self, (int)a, 0.0);
}

static PyObject *Env_step_rate(EnvObject *self, PyObject *arg)
{
    double r = PyFloat_AsDouble(arg);
    if (r == -1.0 && PyErr_Occurred())
        return NULL;
    if (env_ready(self) < 0)
        return NULL;
    return env_advance(self, -1, r);
}

static PyObject *Env_values(EnvObject *self, PyObject *Py_UNUSED(ignored))
{
    return env_ready(self) < 0 ? NULL : env_values(self);
}

static PyObject *Env_history(EnvObject *self, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (env_ready(self) < 0)
        return NULL;
    if (i < 0 || i >= LQ_HIST)
        return PyErr_Format(PyExc_IndexError, "L-QoCo Env: history series %ld out of range 0..%d", i, LQ_HIST - 1);
    return self->e.t ? bind_float_list(self->e.hist[i], self->e.t) : PyList_New(0);
}

static PyObject *Env_marks(EnvObject *self, PyObject *Py_UNUSED(ignored))
{
    if (env_ready(self) < 0)
        return NULL;
    PyObject *out = PyList_New((Py_ssize_t)self->e.marks_len);
    for (size_t i = 0; out && i < self->e.marks_len; i++) {
        PyObject *m = Py_BuildValue("(li)", self->e.marks[i].t, self->e.marks[i].phase);
        if (!m)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, m);
    }
    return out;
}

BIND_GETTER(Env_get_t, EnvObject, PyLong_FromLong(self->e.t))
BIND_GETTER(Env_get_phase, EnvObject, PyLong_FromLong(self->e.phase))
BIND_GETTER(Env_get_W, EnvObject, PyFloat_FromDouble(self->e.W))
BIND_GETTER(Env_get_P, EnvObject, PyFloat_FromDouble(self->e.P))
BIND_GETTER(Env_get_B, EnvObject, PyFloat_FromDouble(self->e.B))
BIND_GETTER(Env_get_rate, EnvObject, PyFloat_FromDouble(self->e.rate))
BIND_GETTER(Env_get_btlbw, EnvObject, PyFloat_FromDouble(self->e.btlbw))
BIND_GETTER(Env_get_levels, EnvObject, Py_BuildValue("(iii)", self->e.lw, self->e.lp, self->e.lb))

static PyMethodDef Env_methods[] = {
    {"step", (PyCFunction)Env_step, METH_O, "step(action 0..4) -> values (see values())"},
    {"step_rate", (PyCFunction)Env_step_rate, METH_O, "step_rate(rate_bps) -> values (see values())"},
    {"values", (PyCFunction)Env_values, METH_NOARGS,
     "values() -> (reward, truncated, t, state, phase, W, P, B_use, btlbw_mbps, rate_mbps, nominal_mbps, "
     "admitted_mbps, flush_mbps, flushed_mbps, bypassed_mbps, throughput_mbps, full_s, gc_s, throttled_mb)"},
    {"history", (PyCFunction)Env_history, METH_O,
     "history(i) -> series i per period (W, rate, admitted, flush, throughput, full_s, bypassed, reward)"},
    {"marks", (PyCFunction)Env_marks, METH_NOARGS, "marks() -> [(period, phase)] at each phase start"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Env_getset[] = {
    {"t", (getter)Env_get_t, NULL, "periods run", NULL},
    {"phase", (getter)Env_get_phase, NULL, "index of the current phase", NULL},
    {"W", (getter)Env_get_W, NULL, "watermark W_t", NULL},
    {"P", (getter)Env_get_P, NULL, "P_t = (I_t - O_t) / O_t", NULL},
    {"B", (getter)Env_get_B, NULL, "I_t / BtlBw", NULL},
    {"rate", (getter)Env_get_rate, NULL, "the admitted rate I_t (bytes/s)", NULL},
    {"btlbw", (getter)Env_get_btlbw, NULL, "the bottleneck bandwidth estimate (bytes/s)", NULL},
    {"levels", (getter)Env_get_levels, NULL, "the discrete levels (W, P, B)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EnvType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._lqoco.Env",
    .tp_basicsize = sizeof(EnvObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One hss/LQoCo-v0 episode: phases, arrivals, state, reward, history (lqoco_env.h)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Env_init,
    .tp_dealloc = (destructor)Env_dealloc,
    .tp_methods = Env_methods,
    .tp_getset = Env_getset,
};

/* ------------------------------------------------------------------ VecEnv */

/* VecEnv(n, raw, arrays): a batch of n Envs stepped in one call (lq_vec_step), for
 * hss_gym/envs/lqoco/vector.py. `arrays`: a dict of the shared NumPy arrays (held until the object
 * goes): act (int64 [n]), skip (bool [n]), obs (float32 [n, 3] if raw, else int64 [n]), rew
 * (float64 [n]), trunc (bool [n]), t, state (int64 [n]), info (float64 [14, n]). load(k, env)
 * gives slot k the episode `env` has just begun; step() steps every slot not skipped. */
#define VEC_NARR 8
static const char *const vec_arrays[VEC_NARR] = {"act", "skip", "obs", "rew", "trunc", "t", "state", "info"};

typedef struct {
    PyObject_HEAD
    lq_vec v;
    int loaded;
    Py_buffer arr[VEC_NARR];
    PyObject **env;  /* per slot: its Env (strong) */
} VecEnvObject;

static void VecEnv_dealloc(VecEnvObject *self)
{
    bind_release(self->arr, VEC_NARR);
    for (int k = 0; self->env && k < self->v.n; k++)
        Py_XDECREF(self->env[k]);
    PyMem_Free(self->env);
    PyMem_Free(self->v.e);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Array i of `arrays`, C-contiguous, of its format and shape: 0, or -1. */
static int vec_array(VecEnvObject *self, PyObject *arrays, int i, int n, int raw)
{
    PyObject *o = PyDict_GetItemString(arrays, vec_arrays[i]);
    if (!o)
        return bind_raise(PyExc_ValueError, "VecEnv: array %s is missing", vec_arrays[i]);
    Py_buffer *b = &self->arr[i];
    if (bind_get_buffer(o, b, i > 1) < 0)
        return -1;
    char f = bind_format(b)[0];
    int i64 = (f == 'q' || f == 'l') && b->itemsize == 8, f64 = f == 'd', ok;
    const char *want;
    if (i == 2 && raw)
        ok = b->ndim == 2 && b->shape[0] == n && b->shape[1] == 3 && f == 'f' && b->itemsize == 4, want = "float32 (n, 3)";
    else if (i == 7)
        ok = b->ndim == 2 && b->shape[0] == LQ_INFO && b->shape[1] == n && f64, want = "float64 (14, n)";
    else {
        ok = b->ndim == 1 && b->shape[0] == n;
        ok = ok && (i == 1 || i == 4 ? f == '?' && b->itemsize == 1 : i == 3 ? f64 : i64);
        want = i == 1 || i == 4 ? "bool (n,)" : i == 3 ? "float64 (n,)" : "int64 (n,)";
    }
    if (!ok) {
        PyBuffer_Release(b);
        return bind_raise(PyExc_ValueError, "VecEnv: %s must be a C-contiguous %s array, n = %d", vec_arrays[i], want,
                          n);
    }
    return 0;
}

static int VecEnv_init(VecEnvObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", "raw", "arrays", NULL};
    int n, raw;
    PyObject *arrays;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ipO!", kwlist, &n, &raw, &PyDict_Type, &arrays))
        return -1;
    if (self->env)
        return bind_raise(PyExc_RuntimeError, "VecEnv is initialised once");
    if (n < 1)
        return bind_raise(PyExc_ValueError, "VecEnv: need n >= 1, got %d", n);
    if (!(self->env = PyMem_Calloc((size_t)n, sizeof *self->env))
        || !(self->v.e = PyMem_Calloc((size_t)n, sizeof *self->v.e))) {
        PyErr_NoMemory();
        return -1;
    }
    self->v.n = n, self->v.raw = raw;
    for (int i = 0; i < VEC_NARR; i++)
        if (vec_array(self, arrays, i, n, raw) < 0)
            return -1;
    lq_vec *v = &self->v;
    v->act = self->arr[0].buf, v->skip = self->arr[1].buf, v->obs = self->arr[2].buf, v->rew = self->arr[3].buf;
    v->trunc = self->arr[4].buf, v->t = self->arr[5].buf, v->state = self->arr[6].buf, v->info = self->arr[7].buf;
    return 0;
}

static int vec_ready(VecEnvObject *self)
{
    if (!self->env || !self->arr[VEC_NARR - 1].obj)
        return bind_raise(PyExc_RuntimeError, "VecEnv is not initialised");
    return 0;
}

/* load(k, env): slot k steps `env` (an Env whose episode has just begun). */
static PyObject *VecEnv_load(VecEnvObject *self, PyObject *args)
{
    int k;
    PyObject *env;
    if (!PyArg_ParseTuple(args, "iO!", &k, &EnvType, &env) || vec_ready(self) < 0)
        return NULL;
    if (k < 0 || k >= self->v.n)
        return PyErr_Format(PyExc_IndexError, "slot %d out of range 0..%d", k, self->v.n - 1);
    EnvObject *e = (EnvObject *)env;
    if (!e->ready || e->e.t != 0)
        return PyErr_Format(PyExc_ValueError, "slot %d: the Env has no episode just begun", k);
    if (!self->env[k])
        self->loaded++;
    Py_INCREF(env);
    Py_XSETREF(self->env[k], env);
    self->v.e[k] = &e->e;
    lq_vec_load(&self->v, k);
    Py_RETURN_NONE;
}

static PyObject *VecEnv_step(VecEnvObject *self, PyObject *Py_UNUSED(ignored))
{
    if (vec_ready(self) < 0)
        return NULL;
    if (self->loaded < self->v.n)
        return PyErr_Format(PyExc_RuntimeError, "VecEnv.step: %d of %d slots have no episode (load them)",
                            self->v.n - self->loaded, self->v.n);
    for (int k = 0; k < self->v.n; k++)
        if (!self->v.skip[k] && self->v.e[k]->t >= self->v.e[k]->p.periods)
            return PyErr_Format(PyExc_RuntimeError, "VecEnv.step: env %d's episode is over (reset it first)", k);
    int bad = -1;
    if (lq_vec_step(&self->v, &bad) != 0) {
        int64_t a = self->v.act[bad];
        if (a < 0 || a > 4)
            return PyErr_Format(PyExc_ValueError, "VecEnv.step: env %d's action %lld is not in 0..4", bad, (long long)a);
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

static PyMethodDef VecEnv_methods[] = {
    {"load", (PyCFunction)VecEnv_load, METH_VARARGS, "load(k, env): slot k takes env's episode, just begun"},
    {"step", (PyCFunction)VecEnv_step, METH_NOARGS, "step(): step every slot not skipped"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject VecEnvType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._lqoco.VecEnv",
    .tp_basicsize = sizeof(VecEnvObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch of L-QoCo Envs stepped in one call over shared arrays (lqoco_env.h)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)VecEnv_init,
    .tp_dealloc = (destructor)VecEnv_dealloc,
    .tp_methods = VecEnv_methods,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "hss_gym.backends._lqoco", "The L-QoCo simulator's C core.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lqoco(void)
{
    return bind_module(&moduledef, (PyTypeObject *[]){&SimType, &EnvType, &VecEnvType, NULL});
}
