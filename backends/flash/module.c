/* hss_gym.backends._flash: the CPython binding of the flash SSD model's core (flash.c). A thin
 * layer: arrays cross as buffers (NumPy arrays, no copies, no NumPy C API); the Python wrapper
 * (backends/flash/ssd.py) owns validation of profiles and the window arithmetic. */
#include "binding.h"

#include "flash.h"

typedef struct {
    PyObject_HEAD
    fl_sim *sim;
    int n_streams, n_units, n_channels;
} SimObject;

static int get_buf(PyObject *o, const char *fmt, size_t item, int writable, Py_buffer *b, const char *name, Py_ssize_t n)
{
    if (bind_get_buffer(o, b, writable) < 0) return -1;
    if ((size_t)b->itemsize != item || strchr(fmt, *bind_format(b)) == NULL || (n >= 0 && b->len / b->itemsize != n)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous array of '%s' (%zu bytes) with %zd items, got "
                     "format '%s' itemsize %zd len %zd", name, fmt, item, n, b->format ? b->format : "B",
                     b->itemsize, b->len / (b->itemsize ? b->itemsize : 1));
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static int check_sim(SimObject *self)
{
    return self->sim ? 0 : bind_raise(PyExc_ValueError, "the FlashSSD is closed");
}

static int check_stream(SimObject *self, int stream)
{
    if (check_sim(self) < 0) return -1;
    if (stream < 0 || stream >= self->n_streams)
        return bind_raise(PyExc_ValueError, "stream %d does not exist (n_streams=%d)", stream, self->n_streams);
    return 0;
}

static int Sim_init(SimObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n_channels", "chips_per_channel", "dies_per_chip", "planes_per_die",
                             "blocks_per_plane", "pages_per_block", "page_size", "op_ratio", "gc_threshold",
                             "read_ns", "program_ns", "erase_ns", "channel_mtps", "channel_width",
                             "queue_depth", "seed", "map_unwritten_reads", "susp_program", "susp_erase",
                             "susp_program_ns", "susp_erase_ns", "susp_program_read_min_ns", "susp_erase_read_min_ns",
                             "susp_erase_write_min_ns", "cache_mode", "cache_partitioned", "cache_bytes",
                             "dram_row_bytes", "dram_burst_bytes", "dram_mtps", "dram_trcd_ns", "dram_tcl_ns",
                             "dram_trp_ns", NULL};
    fl_config c;
    memset(&c, 0, sizeof c);
    PyObject *qd;
    unsigned long long seed = 0;
    long long rn, pn, en;
    int mur = 0, sp = 0, se = 0;
    long long spn = 0, sen = 0, sprm = 0, serm = 0, sewm = 0;
    int cpart = 0;
    long long cbytes = 0, trcd = 0, tcl = 0, trp = 0;
    c.dram_row_bytes = c.dram_burst_bytes = 1;
    c.dram_mtps = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiiiiiddLLLdiO|KpppLLLLLipLiidLLL", kwlist, &c.n_channels,
                                     &c.chips_per_channel, &c.dies_per_chip, &c.planes_per_die, &c.blocks_per_plane,
                                     &c.pages_per_block, &c.page_size, &c.op_ratio, &c.gc_threshold, &rn, &pn, &en,
                                     &c.channel_mtps, &c.channel_width, &qd, &seed, &mur, &sp, &se, &spn, &sen, &sprm,
                                     &serm, &sewm, &c.cache_mode, &cpart, &cbytes, &c.dram_row_bytes,
                                     &c.dram_burst_bytes, &c.dram_mtps, &trcd, &tcl, &trp))
        return -1;
    c.cache_partitioned = cpart;
    c.cache_bytes = cbytes;
    c.dram_trcd_ns = trcd; c.dram_tcl_ns = tcl; c.dram_trp_ns = trp;
    c.susp_program = sp; c.susp_erase = se;
    c.susp_program_ns = spn; c.susp_erase_ns = sen;
    c.susp_program_read_min_ns = sprm; c.susp_erase_read_min_ns = serm; c.susp_erase_write_min_ns = sewm;
    c.map_unwritten_reads = mur;
    c.read_ns = rn; c.program_ns = pn; c.erase_ns = en; c.seed = seed;
    PyObject *seq = PySequence_Fast(qd, "queue_depth must be a sequence of ints (one per stream)");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > FL_MAX_STREAMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "n_streams must be in 1..%d (got %zd)", FL_MAX_STREAMS, n);
        return -1;
    }
    c.n_streams = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        c.queue_depth[i] = v > 1 << 30 ? 1 << 30 : (int)v;
    }
    Py_DECREF(seq);
    char err[512];
    if (self->sim) fl_free(self->sim);
    self->sim = fl_new(&c, err, sizeof err);
    if (!self->sim) return bind_raise(PyExc_ValueError, "%s", err);
    self->n_streams = c.n_streams;
    self->n_units = c.n_channels * c.chips_per_channel;
    self->n_channels = c.n_channels;
    return 0;
}

static void Sim_dealloc(SimObject *self)
{
    fl_free(self->sim);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Sim_close(SimObject *self, PyObject *Py_UNUSED(a))
{
    fl_free(self->sim);
    self->sim = NULL;
    Py_RETURN_NONE;
}

/* precondition(valid, pages_bitmap_u1_or_None, layout, lo_i8, hi_i8, stream_i4): a fraction of the
 * logical pages (or the pages set in the bitmap), laid out linearly (0) or as MQSim does (1); ranges
 * of logical pages owned by streams */
static PyObject *Sim_precondition(SimObject *self, PyObject *args)
{
    double v;
    int layout;
    char err[512];
    PyObject *osel, *ol, *oh, *os;
    if (!PyArg_ParseTuple(args, "dOiOOO", &v, &osel, &layout, &ol, &oh, &os) || check_sim(self) < 0) return NULL;
    Py_buffer b[4] = {{0}};  /* lo, hi, stream, bitmap */
    if (get_buf(ol, "lq", 8, 0, &b[0], "range lo", -1) < 0) return NULL;
    Py_ssize_t n = b[0].len / 8;
    int rc = -2;
    if (get_buf(oh, "lq", 8, 0, &b[1], "range hi", n) == 0 && get_buf(os, "il", 4, 0, &b[2], "range stream", n) == 0
        && (osel == Py_None
            || get_buf(osel, "Bb", 1, 0, &b[3], "page bitmap", (Py_ssize_t)((fl_logical_pages(self->sim) + 7) / 8)) == 0)) {
        const uint8_t *sel = osel == Py_None ? NULL : b[3].buf;
        Py_BEGIN_ALLOW_THREADS
        rc = fl_precondition(self->sim, v, sel, layout, b[0].buf, b[1].buf, b[2].buf, (int)n, err, sizeof err);
        Py_END_ALLOW_THREADS
    }
    bind_release(b, 4);
    if (rc == -2) return NULL;
    if (rc < 0) return PyErr_Format(PyExc_ValueError, "%s", err);
    Py_RETURN_NONE;
}

static PyObject *Sim_set_units(SimObject *self, PyObject *args)
{
    int stream;
    PyObject *o;
    Py_buffer b;
    char err[512];
    if (!PyArg_ParseTuple(args, "iO", &stream, &o) || check_stream(self, stream) < 0) return NULL;
    if (get_buf(o, "il", 4, 0, &b, "units", -1) < 0) return NULL;
    int rc = fl_set_units(self->sim, stream, b.buf, (int)(b.len / 4), err, sizeof err);
    PyBuffer_Release(&b);
    if (rc < 0) return PyErr_Format(PyExc_ValueError, "%s", err);
    Py_RETURN_NONE;
}

static PyObject *Sim_units(SimObject *self, PyObject *args)
{
    int stream;
    if (!PyArg_ParseTuple(args, "i", &stream) || check_stream(self, stream) < 0) return NULL;
    int32_t out[1024];
    int n = fl_get_units(self->sim, stream, out);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) PyList_SET_ITEM(l, i, PyLong_FromLong(out[i]));
    return l;
}

static PyObject *Sim_set_priority(SimObject *self, PyObject *args)
{
    int stream, level;
    if (!PyArg_ParseTuple(args, "ii", &stream, &level) || check_stream(self, stream) < 0) return NULL;
    if (level < 0 || level >= FL_PRIO)
        return PyErr_Format(PyExc_ValueError, "priority level %d: must be 0 (low), 1 (medium) or 2 (high)", level);
    fl_set_priority(self->sim, stream, level);
    Py_RETURN_NONE;
}

static PyObject *Sim_set_slo(SimObject *self, PyObject *args)
{
    int stream;
    double us;
    if (!PyArg_ParseTuple(args, "id", &stream, &us) || check_stream(self, stream) < 0) return NULL;
    if (!(us > 0)) return PyErr_Format(PyExc_ValueError, "slo_us must be > 0 (got %g)", us);
    fl_set_slo(self->sim, stream, us);
    Py_RETURN_NONE;
}

static PyObject *Sim_submit(SimObject *self, PyObject *args)
{
    PyObject *ot, *os, *oo, *oz, *ow;
    if (!PyArg_ParseTuple(args, "OOOOO", &ot, &os, &oo, &oz, &ow) || check_sim(self) < 0) return NULL;
    Py_buffer b[5] = {{0}};  /* time, stream, offset, size, is_write */
    if (get_buf(ot, "d", 8, 0, &b[0], "time_us", -1) < 0) return NULL;
    Py_ssize_t n = b[0].len / 8;
    char err[512];
    int rc = -2;
    if (get_buf(os, "il", 4, 0, &b[1], "stream", n) == 0 && get_buf(oo, "lq", 8, 0, &b[2], "offset", n) == 0
        && get_buf(oz, "lq", 8, 0, &b[3], "size", n) == 0 && get_buf(ow, "?B", 1, 0, &b[4], "is_write", n) == 0)
        rc = fl_submit(self->sim, (size_t)n, b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, err, sizeof err);
    bind_release(b, 5);
    if (rc == -2) return NULL;
    if (rc < 0) return PyErr_Format(PyExc_ValueError, "%s", err);
    Py_RETURN_NONE;
}

static PyObject *Sim_run_until(SimObject *self, PyObject *args)
{
    double t;
    if (!PyArg_ParseTuple(args, "d", &t) || check_sim(self) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    fl_run_until(self->sim, t);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Sim_now_us(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    return PyFloat_FromDouble(fl_now_us(self->sim));
}

#define N_SFIELDS 14

/* counters(out): fills out (n_streams x 14 float64) with the per-stream cumulative counters in the
 * order of STREAM_FIELDS (ssd.py); returns (host_page_writes, flash_programs, gc_runs, erases). */
static PyObject *Sim_counters(SimObject *self, PyObject *args)
{
    PyObject *o, *oc, *oub, *ouv, *ouf, *oug, *oua;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &o, &oc, &oub, &ouv, &ouf, &oug, &oua) || check_sim(self) < 0) return NULL;
    Py_buffer b[7] = {{0}};  /* stream counters, channel busy, unit busy / valid / free / gc ops / gc active */
    int S = self->n_streams, U = self->n_units;
    if (get_buf(o, "d", 8, 1, &b[0], "stream counters", (Py_ssize_t)S * N_SFIELDS) < 0
        || get_buf(oc, "d", 8, 1, &b[1], "channel busy", self->n_channels) < 0
        || get_buf(oub, "d", 8, 1, &b[2], "unit busy", U) < 0 || get_buf(ouv, "lq", 8, 1, &b[3], "unit valid", U) < 0
        || get_buf(ouf, "lq", 8, 1, &b[4], "unit free", U) < 0 || get_buf(oug, "lq", 8, 1, &b[5], "unit gc ops", U) < 0
        || get_buf(oua, "?B", 1, 1, &b[6], "unit gc active", U) < 0) {
        bind_release(b, 7);
        return NULL;
    }
    fl_stream_stats st[FL_MAX_STREAMS];
    fl_stream_counters(self->sim, st);
    double *out = b[0].buf;
    for (int i = 0; i < S; i++) {
        double *r = out + (size_t)i * N_SFIELDS;
        r[0] = (double)st[i].completed; r[1] = (double)st[i].reads; r[2] = (double)st[i].writes;
        r[3] = (double)st[i].read_bytes; r[4] = (double)st[i].write_bytes; r[5] = (double)st[i].read_tx;
        r[6] = (double)st[i].write_tx; r[7] = st[i].lat_sum_us; r[8] = (double)st[i].slo_viol;
        r[9] = st[i].qdelay_sum_us; r[10] = (double)st[i].issued; r[11] = (double)st[i].conflicts;
        r[12] = (double)st[i].gc_runs; r[13] = (double)st[i].gc_moved;
    }
    fl_channel_busy(self->sim, b[1].buf);
    fl_unit_counters(self->sim, b[2].buf, b[3].buf, b[4].buf, b[5].buf, b[6].buf);
    int64_t hw, fp, gr, er;
    fl_global_counters(self->sim, &hw, &fp, &gr, &er);
    PyObject *backlog = PyList_New(S);
    for (int i = 0; backlog && i < S; i++) PyList_SET_ITEM(backlog, i, PyLong_FromLongLong(st[i].backlog));
    bind_release(b, 7);
    if (!backlog) return NULL;
    return Py_BuildValue("(LLLLN)", (long long)hw, (long long)fp, (long long)gr, (long long)er, backlog);
}

static PyObject *Sim_latency_count(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    return PyLong_FromSize_t(fl_latency_count(self->sim));
}

/* latencies(start, out_f8, out_u2, device=False): copy the log entries [start, start + len(out)):
 * end-to-end latencies (from arrival), or device latencies (from admission) */
static PyObject *Sim_latencies(SimObject *self, PyObject *args)
{
    Py_ssize_t start;
    PyObject *ol, *os;
    int device = 0;
    if (!PyArg_ParseTuple(args, "nOO|p", &start, &ol, &os, &device) || check_sim(self) < 0) return NULL;
    Py_buffer b[2] = {{0}};  /* latencies, streams */
    if (get_buf(ol, "d", 8, 1, &b[0], "latencies", -1) < 0) return NULL;
    Py_ssize_t n = b[0].len / 8;
    if (get_buf(os, "H", 2, 1, &b[1], "streams", n) < 0) { bind_release(b, 2); return NULL; }
    size_t total = fl_latency_count(self->sim);
    int ok = start >= 0 && (size_t)(start + n) <= total;
    if (ok && n) {
        memcpy(b[0].buf, (device ? fl_device_latency_values(self->sim) : fl_latency_values(self->sim)) + start, (size_t)n * 8);
        memcpy(b[1].buf, fl_latency_streams(self->sim) + start, (size_t)n * 2);
    }
    bind_release(b, 2);
    if (!ok)
        return PyErr_Format(PyExc_IndexError, "latency log range [%zd, %zd) past its %zu entries", start, start + n, total);
    Py_RETURN_NONE;
}

static PyObject *Sim_mapping_bytes(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    return PyLong_FromSize_t(fl_mapping_bytes(self->sim));
}

static PyObject *Sim_logical_pages(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(fl_logical_pages(self->sim));
}

static PyObject *Sim_check(SimObject *self, PyObject *Py_UNUSED(a))
{
    char err[512];
    if (check_sim(self) < 0) return NULL;
    if (fl_check(self->sim, err, sizeof err) < 0) return PyErr_Format(PyExc_AssertionError, "%s", err);
    Py_RETURN_NONE;
}

static PyObject *Sim_suspends(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    int64_t ps, es;
    fl_suspend_counters(self->sim, &ps, &es);
    return Py_BuildValue("LL", (long long)ps, (long long)es);
}

static PyObject *Sim_cache_counters(SimObject *self, PyObject *Py_UNUSED(a))
{
    if (check_sim(self) < 0) return NULL;
    fl_cache_stats c;
    fl_cache_counters(self->sim, &c);
    return Py_BuildValue("LLLLLL", (long long)c.read_hits, (long long)c.read_partial_hits, (long long)c.write_pages,
                         (long long)c.writebacks, (long long)c.evictions, (long long)c.waits);
}

static PyMethodDef Sim_methods[] = {
    {"cache_counters", (PyCFunction)Sim_cache_counters, METH_NOARGS,
     "cache_counters() -> (read hits, partial read hits, write pages, write-backs, evictions, waits)"},
    {"suspends", (PyCFunction)Sim_suspends, METH_NOARGS, "suspends() -> (program suspensions, erase suspensions)"},
    {"check", (PyCFunction)Sim_check, METH_NOARGS, "Verify the FTL state's consistency (raises AssertionError)."},
    {"close", (PyCFunction)Sim_close, METH_NOARGS, "Free the simulator."},
    {"precondition", (PyCFunction)Sim_precondition, METH_VARARGS, "precondition(valid, page_bitmap_or_None, layout, lo_pages, hi_pages, streams)"},
    {"set_units", (PyCFunction)Sim_set_units, METH_VARARGS, "set_units(stream, int32 array)"},
    {"units", (PyCFunction)Sim_units, METH_VARARGS, "units(stream) -> list of unit ids (CWDP order)"},
    {"set_priority", (PyCFunction)Sim_set_priority, METH_VARARGS, "set_priority(stream, level 0..2)"},
    {"set_slo", (PyCFunction)Sim_set_slo, METH_VARARGS, "set_slo(stream, us)"},
    {"submit", (PyCFunction)Sim_submit, METH_VARARGS, "submit(time_us f8, stream i4, offset i8, size i8, is_write u1)"},
    {"run_until", (PyCFunction)Sim_run_until, METH_VARARGS, "run_until(t_us)"},
    {"now_us", (PyCFunction)Sim_now_us, METH_NOARGS, "current simulated time (us)"},
    {"counters", (PyCFunction)Sim_counters, METH_VARARGS, "fill cumulative counters; returns globals"},
    {"latency_count", (PyCFunction)Sim_latency_count, METH_NOARGS, "entries in the latency log"},
    {"latencies", (PyCFunction)Sim_latencies, METH_VARARGS, "latencies(start, out_f8, out_u2)"},
    {"mapping_bytes", (PyCFunction)Sim_mapping_bytes, METH_NOARGS, "bytes of mapping state"},
    {"logical_pages", (PyCFunction)Sim_logical_pages, METH_NOARGS, "user-visible pages"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SimType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._flash.Sim",
    .tp_basicsize = sizeof(SimObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The flash SSD model's C core (see backends/flash/flash.h).",
    .tp_methods = Sim_methods,
    .tp_init = (initproc)Sim_init,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Sim_dealloc,
};

static struct PyModuleDef flash_module = {PyModuleDef_HEAD_INIT, "_flash", "The flash SSD model's C core.", -1, NULL,
                                          NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__flash(void)
{
    PyObject *m = bind_module(&flash_module, (PyTypeObject *const[]){&SimType, NULL});
    if (m && PyModule_AddIntConstant(m, "N_STREAM_FIELDS", N_SFIELDS) < 0)
        Py_CLEAR(m);
    return m;
}
