/* hss_gym.backends._lqoco: the Python binding of the L-QoCo simulator (lqoco_sim.c).
 *
 *   Sim(capacity, w_cap, dt, slots, bucket_s, bypass_us, read_hit, sync_share, gc_extra,
 *       gc_burst, gc_share)          bypass_us None = host queue only
 *   .set_mix(io, rd_cost, rd_lat, byp_cost, byp_lat, sync_cost, sync_lat, cache_cost, cache_lat,
 *            flush_io, flush_const, seek_min, seek_max, half_rot, write_bw, n)
 *   .period(rate_bps, read_bps, write_bps, host_queue_b, rd_io, wr_io) -> (admitted, flush_cap,
 *            flushed, bypassed, reads, throughput, full_s, throttled, gc_s)
 *   .flush_cost(dirty), .quantile(q), .dirty, .hq, .backlog, .lat_sum, .n_req, .hist
 * The model and its parameters are described in backends/lqoco/model.py.
 */
#include "binding.h"

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

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "hss_gym.backends._lqoco", "The L-QoCo simulator's C core.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lqoco(void)
{
    return bind_module(&moduledef, (PyTypeObject *[]){&SimType, NULL});
}
