/* CPython bindings of the native core (module hss_gym.backends._core).
 *
 *   SimDevices(params, seed)  the simulated devices (backends/simdev.c), one dict of timing
 *                             parameters per device; built by hss_gym.backends.sim.SimBackend.
 *   HSS(devices, capacities, queue_size, min_interval, scan_window)
 *                             the HSS core (hss.c) over a SimDevices object. Python wrappers in
 *                             hss_gym/hss.py; this file only converts arguments and errors.
 */
#include "binding.h"

#include <math.h>
#include <string.h>

#include "hss.h"
#include "simdev.h"

/* ------------------------------------------------------------------ helpers */

static int raise_rc(int rc)
{
    switch (rc) {
    case HSS_ENOMEM: PyErr_NoMemory(); break;
    case HSS_EINVAL: PyErr_SetString(PyExc_ValueError, "invalid argument to the HSS core"); break;
    case HSS_EFULL: PyErr_SetString(PyExc_RuntimeError, "no device can take the page"); break;
    case HSS_ESTEPS: PyErr_SetString(PyExc_OverflowError, "more than 2**32 - 2 requests in one episode"); break;
    default: PyErr_Format(PyExc_RuntimeError, "HSS core error %d", rc);
    }
    return -1;
}

/* Get a C-contiguous 1-D buffer of the given struct format character ('d', 'B', 'q'). */
static int get_buf(PyObject *o, char fmt, int writable, Py_buffer *b, const char *name)
{
    if (bind_get_buffer(o, b, writable) < 0)
        return -1;
    const char *f = bind_format(b);
    int ok = b->ndim == 1 && (f[0] == fmt || (fmt == 'q' && f[0] == 'l' && b->itemsize == 8))
             && f[1] == '\0';
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-D contiguous array of format '%c' (got '%s')", name, fmt, f);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static double dict_num(PyObject *d, const char *key, double dflt, int required)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v) {
        if (required)
            PyErr_Format(PyExc_KeyError, "device parameter %s is missing", key);
        return dflt;
    }
    return PyFloat_AsDouble(v);
}

/* ------------------------------------------------------------------ SimDevices */

typedef struct {
    PyObject_HEAD
    int n;
    simdev dev[HSS_MAX_DEV];
} SimDevicesObject;

static int SimDevices_init(SimDevicesObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"params", "seed", NULL};
    PyObject *params;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|K", kwlist, &params, &seed))
        return -1;
    PyObject *seq = PySequence_Fast(params, "params must be a sequence of dicts");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > HSS_MAX_DEV) {
        Py_DECREF(seq);
        return bind_raise(PyExc_ValueError, "between 1 and %d devices are supported, got %zd", HSS_MAX_DEV, n);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyDict_Check(d)) {
            Py_DECREF(seq);
            return bind_raise(PyExc_TypeError, "each device's params must be a dict");
        }
        simdev_params p;
        memset(&p, 0, sizeof p);
        p.kind = (int)dict_num(d, "kind", 0, 1);
        p.servers = (int)dict_num(d, "servers", 1, 1);
        p.read_us = dict_num(d, "read_us", 0, 1);
        p.write_us = dict_num(d, "write_us", 0, 1);
        p.read_bw = dict_num(d, "read_bw", 0, 1);
        p.write_bw = dict_num(d, "write_bw", 0, 1);
        p.capacity_pages = (uint64_t)dict_num(d, "capacity_pages", 0, 1);
        p.gc_thr = dict_num(d, "gc_thr", 0, 0);
        p.gc_max = dict_num(d, "gc_max", 1, 0);
        p.slc_bytes = dict_num(d, "slc_bytes", 0, 0);
        p.slc_refill_bw = dict_num(d, "slc_refill_bw", 0, 0);
        p.cliff_bw = dict_num(d, "cliff_bw", 0, 0);
        p.seek_min_us = dict_num(d, "seek_min_us", 0, 0);
        p.seek_max_us = dict_num(d, "seek_max_us", 0, 0);
        p.rotation_us = dict_num(d, "rotation_us", 0, 0);
        p.noise_p = dict_num(d, "noise_p", 0, 0);
        p.noise_sigma = dict_num(d, "noise_sigma", 0, 0);
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        const char *err = simdev_check(&p);
        if (err) {
            Py_DECREF(seq);
            return bind_raise(PyExc_ValueError, "device %zd: %s", i, err);
        }
        simdev_init(&self->dev[i], &p, seed + (uint64_t)i);
    }
    self->n = (int)n;
    Py_DECREF(seq);
    return 0;
}

static int check_dev(SimDevicesObject *self, int d)
{
    if (d < 0 || d >= self->n)
        return bind_raise(PyExc_IndexError, "device %d out of range 0..%d", d, self->n - 1);
    return 0;
}

static PyObject *SimDevices_io(SimDevicesObject *self, PyObject *args)
{
    int d, op, bg = 0;
    unsigned long long slot;
    unsigned int npages;
    double t;
    if (!PyArg_ParseTuple(args, "iiKId|p", &d, &op, &slot, &npages, &t, &bg) || check_dev(self, d) < 0)
        return NULL;
    if ((op != SIMDEV_READ && op != SIMDEV_WRITE) || npages == 0)
        return PyErr_Format(PyExc_ValueError, "op must be 0 (read) or 1 (write) and npages > 0");
    return PyFloat_FromDouble(simdev_io(&self->dev[d], op, slot, npages, t, bg));
}

static PyObject *SimDevices_free_at(SimDevicesObject *self, PyObject *args)
{
    int d;
    if (!PyArg_ParseTuple(args, "i", &d) || check_dev(self, d) < 0)
        return NULL;
    return PyFloat_FromDouble(simdev_free_at(&self->dev[d]));
}

static PyObject *SimDevices_reset(SimDevicesObject *self, PyObject *args)
{
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "|K", &seed))
        return NULL;
    for (int i = 0; i < self->n; i++)
        simdev_reset(&self->dev[i], seed + (uint64_t)i);
    Py_RETURN_NONE;
}

static PyObject *SimDevices_stats(SimDevicesObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(self->n);
    if (!out)
        return NULL;
    for (int i = 0; i < self->n; i++) {
        const simdev *d = &self->dev[i];
        const simdev_stats *s = &d->st;
        PyObject *o = Py_BuildValue(
            "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:K,s:d}",
            "reads", s->reads, "writes", s->writes, "bytes_read", s->bytes_read,
            "bytes_written", s->bytes_written, "bg_reads", s->bg_reads, "bg_writes", s->bg_writes,
            "bg_bytes_read", s->bg_bytes_read, "bg_bytes_written", s->bg_bytes_written,
            "seq_ios", s->seq_ios, "busy_us", s->busy_us, "used_pages", d->used_pages,
            "slc_free_bytes", d->slc_free);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, o);
    }
    return out;
}

BIND_GETTER(SimDevices_len, SimDevicesObject, PyLong_FromLong(self->n))

static PyMethodDef SimDevices_methods[] = {
    {"io", (PyCFunction)SimDevices_io, METH_VARARGS,
     "io(device, op, slot, npages, t, background=False) -> completion time (us)"},
    {"free_at", (PyCFunction)SimDevices_free_at, METH_VARARGS, "free_at(device) -> time a server is free"},
    {"reset", (PyCFunction)SimDevices_reset, METH_VARARGS, "reset(seed=0): idle, empty devices"},
    {"stats", (PyCFunction)SimDevices_stats, METH_NOARGS, "per-device counters"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SimDevices_getset[] = {
    {"n", (getter)SimDevices_len, NULL, "number of devices", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SimDevicesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._core.SimDevices",
    .tp_basicsize = sizeof(SimDevicesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Simulated block devices (timing model of backends/simdev.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SimDevices_init,
    .tp_methods = SimDevices_methods,
    .tp_getset = SimDevices_getset,
};

/* ------------------------------------------------------------------ HSS */

typedef struct {
    PyObject_HEAD
    hss h;
    int ready;
    SimDevicesObject *devices; /* strong reference: h.dev points into it */
    long long cand;            /* env: current migration candidate, -1 if none */
    int cand_dev;              /* env: its device when it was offered (the agent's "stay") */
    uint64_t moved_seen;       /* env: executed + stale moves already reported */
    uint64_t evict_seen;       /* env: evictions already reported */
    double delay_seen;         /* env: migration delay (us) already reported */
    long long *pend_step;      /* env: FIFO of queued moves, (decision step, penalty term) */
    double *pend_pen;
    size_t pend_head, pend_len, pend_cap;
    Py_buffer lat;             /* env: the episode's latencies (float64), written per step */
    int lat_held;
} HSSObject;

static void HSS_dealloc(HSSObject *self)
{
    if (self->lat_held)
        PyBuffer_Release(&self->lat);
    PyMem_Free(self->pend_step);
    PyMem_Free(self->pend_pen);
    if (self->ready)
        hss_free(&self->h);
    Py_XDECREF(self->devices);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int HSS_init(HSSObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"devices", "capacities", "queue_size", "min_interval", "scan_window",
                             "queue_depth", "preloaded", NULL};
    PyObject *devs, *caps;
    int qs = 10;
    unsigned int min_interval = 16, window = 32;
    int qd = 32, preloaded = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|iIIip", kwlist, &SimDevicesType, &devs, &caps,
                                     &qs, &min_interval, &window, &qd, &preloaded))
        return -1;
    SimDevicesObject *sd = (SimDevicesObject *)devs;
    PyObject *seq = PySequence_Fast(caps, "capacities must be a sequence of page counts");
    if (!seq)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != sd->n) {
        Py_DECREF(seq);
        return bind_raise(PyExc_ValueError, "%d devices but %zd capacities", sd->n, PySequence_Fast_GET_SIZE(seq));
    }
    uint64_t cap[HSS_MAX_DEV];
    for (int i = 0; i < sd->n; i++) {
        cap[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    if (qs < 0 || window < 1 || qd < 1)
        return bind_raise(PyExc_ValueError, "queue_size must be >= 0, scan_window >= 1 and queue_depth >= 1");
    if (self->ready) {
        hss_free(&self->h);
        self->ready = 0;
    }
    int rc = hss_init(&self->h, sd->n, sd->dev, cap, qs, min_interval, window, qd);
    self->h.preloaded = preloaded;
    if (rc != HSS_OK) {
        hss_free(&self->h);
        return raise_rc(rc);
    }
    self->ready = 1;
    Py_INCREF(devs);
    Py_XSETREF(self->devices, sd);
    return 0;
}

static PyObject *HSS_reset(HSSObject *self, PyObject *args)
{
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "|K", &seed))
        return NULL;
    int rc = hss_reset(&self->h, seed);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    Py_RETURN_NONE;
}

/* replay(time_us, op, offset, size, place, latency_out, start=0, stop=len)
 * Whole-trace fast path for fixed placement on device `place` (LRU eviction when it is full):
 * Fast-Only, Slow-Only and "fast until full, then LRU" are this with different capacities. */
static PyObject *HSS_replay(HSSObject *self, PyObject *args)
{
    PyObject *ot, *oo, *ooff, *osz, *olat;
    int place;
    Py_ssize_t start = 0, stop = -1;
    if (!PyArg_ParseTuple(args, "OOOOiO|nn", &ot, &oo, &ooff, &osz, &place, &olat, &start, &stop))
        return NULL;
    if (place < 0 || place >= self->h.ndev)
        return PyErr_Format(PyExc_ValueError, "place must be a device in 0..%d", self->h.ndev - 1);
    Py_buffer b[5] = {{0}};  /* time_us, op, offset, size, latency_out */
    PyObject *ret = NULL;
    if (get_buf(ot, 'd', 0, &b[0], "time_us") < 0 || get_buf(oo, 'B', 0, &b[1], "op") < 0
        || get_buf(ooff, 'q', 0, &b[2], "offset") < 0 || get_buf(osz, 'q', 0, &b[3], "size") < 0
        || get_buf(olat, 'd', 1, &b[4], "latency_out") < 0)
        goto out;
    Py_ssize_t n = b[0].shape[0];
    if (stop < 0)
        stop = n;
    if (b[1].shape[0] != n || b[2].shape[0] != n || b[3].shape[0] != n || b[4].shape[0] < n
        || start < 0 || stop > n || start > stop) {
        PyErr_SetString(PyExc_ValueError, "columns must have equal lengths and 0 <= start <= stop <= len");
        goto out;
    }
    const double *t = b[0].buf;
    const uint8_t *op = b[1].buf;
    const int64_t *off = b[2].buf, *sz = b[3].buf;
    double *lat = b[4].buf;
    int rc = HSS_OK;
    Py_ssize_t i;
    Py_BEGIN_ALLOW_THREADS
    for (i = start; i < stop; i++) {
        if (off[i] < 0 || sz[i] <= 0) {
            rc = HSS_EINVAL;
            break;
        }
        rc = hss_begin(&self->h, t[i], op[i], (uint64_t)off[i], (uint64_t)sz[i]);
        if (rc == HSS_OK)
            rc = hss_finish(&self->h, place, &lat[i]);
        if (rc != HSS_OK)
            break;
    }
    Py_END_ALLOW_THREADS
    if (rc == HSS_EINVAL)
        PyErr_Format(PyExc_ValueError, "request %zd: op must be 0/1, offset >= 0, size > 0 and offset + size < 4 PiB",
                     i);
    else if (rc != HSS_OK)
        raise_rc(rc);
    else
        ret = Py_NewRef(Py_None);
out:
    bind_release(b, 5);
    return ret;
}

/* A request time that is NaN or infinite: it would poison every later time (a clear error). */
static PyObject *bad_time(double t)
{
    return PyErr_Format(PyExc_ValueError, "invalid request time %s: a request's time must be a finite "
                        "number of microseconds", isnan(t) ? "nan" : t > 0 ? "inf" : "-inf");
}

static PyObject *HSS_begin(HSSObject *self, PyObject *args)
{
    double t;
    int op;
    long long off, size;
    if (!PyArg_ParseTuple(args, "diLL", &t, &op, &off, &size))
        return NULL;
    if (off < 0 || size <= 0 || (op != 0 && op != 1))
        return PyErr_Format(PyExc_ValueError, "invalid request: op=%d offset=%lld size=%lld "
                            "(op must be 0/1, offset >= 0, size > 0, offset + size < 4 PiB)", op, off, size);
    if (!isfinite(t))
        return bad_time(t);
    int rc = hss_begin(&self->h, t, op, (uint64_t)off, (uint64_t)size);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    return PyBool_FromLong(self->h.cur.needs_placement);
}

static PyObject *HSS_finish(HSSObject *self, PyObject *args)
{
    int place = 0;
    if (!PyArg_ParseTuple(args, "|i", &place))
        return NULL;
    if (!self->h.cur.active)
        return PyErr_Format(PyExc_RuntimeError, "finish() called without a pending request (call begin() first)");
    if (self->h.cur.needs_placement && (place < 0 || place >= self->h.ndev))
        return PyErr_Format(PyExc_ValueError, "placement must be a device in 0..%d, got %d", self->h.ndev - 1, place);
    double lat;
    int rc = hss_finish(&self->h, place, &lat);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    return PyFloat_FromDouble(lat);
}

static PyObject *HSS_candidate(HSSObject *self, PyObject *Py_UNUSED(ignored))
{
    uint64_t page;
    if (!hss_candidate(&self->h, &page))
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(page);
}

static PyObject *HSS_clean(HSSObject *self, PyObject *args)
{
    int d, force = 0;
    long long k;
    if (!PyArg_ParseTuple(args, "iL|p", &d, &k, &force))
        return NULL;
    if (d < 0 || d >= self->h.home || k < 1 || k > UINT32_MAX)
        return PyErr_Format(PyExc_ValueError, "clean: need 0 <= device < %d (not the home device) and 1 <= k < 2**32, "
                            "got %d, %lld", self->h.home, d, k);
    int rc = hss_clean(&self->h, d, (uint32_t)k, force);
    if (rc < 0)
        return raise_rc(rc), NULL;
    return PyBool_FromLong(rc);
}

static PyObject *HSS_enqueue(HSSObject *self, PyObject *args)
{
    unsigned long long page;
    int target;
    if (!PyArg_ParseTuple(args, "Ki", &page, &target))
        return NULL;
    int rc = hss_enqueue(&self->h, page, target);
    if (rc < 0)
        return raise_rc(rc), NULL;
    return PyBool_FromLong(rc);
}

static PyObject *HSS_move(HSSObject *self, PyObject *args)
{
    unsigned long long page;
    int target;
    double t;
    if (!PyArg_ParseTuple(args, "Kid", &page, &target, &t))
        return NULL;
    double done;
    int rc = hss_move(&self->h, page, target, t, &done);
    if (rc == HSS_EINVAL)
        return PyErr_Format(PyExc_ValueError, "cannot move page %llu to device %d (not placed, or no such device)",
                            page, target);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    return PyFloat_FromDouble(done);
}

static PyObject *HSS_remap(HSSObject *self, PyObject *args)
{
    unsigned long long page;
    int target;
    if (!PyArg_ParseTuple(args, "Ki", &page, &target))
        return NULL;
    int rc = hss_remap(&self->h, page, target);
    if (rc == HSS_EINVAL)
        return PyErr_Format(PyExc_ValueError, "cannot remap page %llu to device %d (not placed, or no such device)",
                            page, target);
    if (rc == HSS_EFULL)
        return PyErr_Format(PyExc_ValueError, "cannot remap page %llu: device %d is full", page, target);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    Py_RETURN_NONE;
}

BIND_GETTER(HSS_get_evictions, HSSObject, PyLong_FromUnsignedLongLong(self->h.c.evictions))
BIND_GETTER(HSS_get_issue, HSSObject, PyFloat_FromDouble(self->h.cur.t))

static PyObject *HSS_get_used(HSSObject *self, void *Py_UNUSED(closure))
{
    PyObject *l = PyList_New(self->h.ndev);
    if (!l)
        return NULL;
    for (int d = 0; d < self->h.ndev; d++)
        PyList_SET_ITEM(l, d, PyLong_FromUnsignedLongLong(hss_used(&self->h, d)));
    return l;
}

BIND_GETTER(HSS_get_mig_delay, HSSObject, PyFloat_FromDouble(self->h.c.mig_delay_us))
BIND_GETTER(HSS_get_clean_pending, HSSObject, PyBool_FromLong(self->h.clean_k != 0))
BIND_GETTER(HSS_get_queue_length, HSSObject, PyLong_FromLong((long)self->h.mq_len))
BIND_GETTER(HSS_get_host_wait, HSSObject, PyFloat_FromDouble(self->h.c.host_wait_us))

static PyGetSetDef HSS_getset[] = {
    {"evictions", (getter)HSS_get_evictions, NULL, "pages evicted so far (cheap; counters() has all)", NULL},
    {"migration_delay_us", (getter)HSS_get_mig_delay, NULL,
     "queued moves' device time past the next host arrival, summed (cheap; counters() has all)", NULL},
    {"queue_length", (getter)HSS_get_queue_length, NULL, "moves in the migration queue (cheap; counters() has all)",
     NULL},
    {"used_pages", (getter)HSS_get_used, NULL, "pages held by each device", NULL},
    {"clean_pending", (getter)HSS_get_clean_pending, NULL, "whether a cleaning (clean) waits for idle time", NULL},
    {"host_wait_us", (getter)HSS_get_host_wait, NULL,
     "time requests waited for a host slot, summed (cheap; counters() has all)", NULL},
    {"issue_us", (getter)HSS_get_issue, NULL, "issue time of the current request (after begin)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *HSS_page(HSSObject *self, PyObject *args)
{
    unsigned long long page;
    if (!PyArg_ParseTuple(args, "K", &page))
        return NULL;
    hss_page *pg = hss_lookup(&self->h, page);
    if (!pg || !pg->dev)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:i,s:I,s:I,s:I,s:O}", "device", hss_dev_of(pg), "count", (unsigned)pg->count,
                         "last_access", pg->last_access, "last_move", pg->last_move,
                         "queued", (pg->flags & HSS_F_QUEUED) ? Py_True : Py_False);
}

/* devices(pages, out): the device of each page of the int64 array `pages` into the int64 array
 * `out` (-1 for a page not placed): page()'s "device" for many pages in one call. */
static PyObject *HSS_devices(HSSObject *self, PyObject *args)
{
    PyObject *opages, *oout;
    if (!PyArg_ParseTuple(args, "OO", &opages, &oout))
        return NULL;
    Py_buffer b[2] = {{0}};  /* pages, out */
    PyObject *ret = Py_None;
    if (get_buf(opages, 'q', 0, &b[0], "pages") < 0 || get_buf(oout, 'q', 1, &b[1], "out") < 0)
        ret = NULL;
    else if (b[1].shape[0] != b[0].shape[0]) {
        PyErr_Format(PyExc_ValueError, "out has %zd entries for %zd pages", b[1].shape[0], b[0].shape[0]);
        ret = NULL;
    } else {
        const int64_t *pages = b[0].buf;
        int64_t *out = b[1].buf;
        for (Py_ssize_t i = 0; i < b[0].shape[0]; i++) {
            if (pages[i] < 0) {
                PyErr_Format(PyExc_ValueError, "pages[%zd] = %lld is negative", i, (long long)pages[i]);
                ret = NULL;
                break;
            }
            hss_page *pg = hss_lookup(&self->h, (uint64_t)pages[i]);
            out[i] = (!pg || !pg->dev) ? -1 : hss_dev_of(pg);
        }
    }
    bind_release(b, 2);
    Py_XINCREF(ret);
    return ret;
}

static PyObject *HSS_counters(HSSObject *self, PyObject *Py_UNUSED(ignored))
{
    const hss_counters *c = &self->h.c;
    PyObject *in = PyList_New(self->h.ndev), *out = PyList_New(self->h.ndev), *used = PyList_New(self->h.ndev);
    if (!in || !out || !used) {
        Py_XDECREF(in);
        Py_XDECREF(out);
        Py_XDECREF(used);
        return NULL;
    }
    for (int d = 0; d < self->h.ndev; d++) {
        PyList_SET_ITEM(in, d, PyLong_FromUnsignedLongLong(c->mig_pages_in[d]));
        PyList_SET_ITEM(out, d, PyLong_FromUnsignedLongLong(c->mig_pages_out[d]));
        PyList_SET_ITEM(used, d, PyLong_FromUnsignedLongLong(self->h.dev[d].used_pages));
    }
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:d,s:d,s:d,s:d,s:d,s:K,s:I,s:i}",
        "requests", c->requests, "reads", c->reads, "writes", c->writes,
        "host_bytes_read", c->host_bytes_read, "host_bytes_written", c->host_bytes_written,
        "pages_accessed", c->pages_accessed, "fast_pages", c->fast_pages,
        "placements", c->placements, "evictions", c->evictions, "migrations", c->migrations,
        "migrations_busy", c->migrations_busy, "migrations_stale", c->migrations_stale,
        "migration_bytes_written", c->mig_bytes_written, "fill_pages", c->fill_pages,
        "cleaned_pages", c->cleaned, "clean_misses", c->clean_misses, "migrated_pages_in", in,
        "migrated_pages_out", out, "used_pages", used, "first_arrival_us", c->first_arrival,
        "last_completion_us", c->last_completion, "latency_sum_us", c->latency_sum,
        "host_wait_us", c->host_wait_us, "migration_delay_us", c->mig_delay_us,
        "touched_pages", self->h.pt.touched, "step", self->h.now, "queue_length", self->h.mq_len);
}

/* Table-1 bins (Harmonia) of a page in the context of a request. See hss_gym/envs/features.py. */
static int log_bin(double x, double per_octave)
{
    int b = (int)(per_octave * log2(1.0 + x));
    return b > 63 ? 63 : b;
}

/* features(page, op, npages, out, sibyl=False): write the observation of `page` (-1: a page never
 * seen) for a request of type `op` and `npages` pages into `out`: float32 scaled to [0, 1], or
 * int64 bin indices. Layout: harmonia = req_type, req_size, acc_intr, acc_freq, fast_cap, curr_dev,
 * migr_intr, then free space of devices 1..N-2; sibyl = req_size, req_type, acc_intr, acc_freq,
 * fast_cap, curr_dev. */
#define FEAT_SIBYL 1 /* the `sibyl` flags argument: Sibyl's six features (else Harmonia's) */
#define FEAT_FITS 2  /* free-space bins of the env's room_feature="fits" (else "fraction") */
#define FEAT_BINARY 4 /* with FEAT_FITS: room_feature="binary", bins 0 (does not fit) or 7 (fits) */

/* room_feature="fits": bin 0 when the request's `npages` pages do not fit in device d's free space
 * (placing it there evicts on the critical path), else 1 + the free fraction in sevenths;
 * room_feature="binary" (`binary`): 0 or 7, whether it fits alone. */
static int room_bin(hss *h, int d, unsigned long long npages, int binary)
{
    uint64_t used = h->dev[d].used_pages, need = npages ? npages : 1;
    if (used + need > h->cap[d])
        return 0;
    if (binary)
        return 7;
    int b = 1 + (int)(7.0 * (1.0 - (double)used / (double)h->cap[d]));
    return b > 7 ? 7 : b;
}

/* Observation of `page` (-1 or unplaced: a page never seen) for a request of type `op` and
 * `npages` pages; writes bins and their sizes, returns the number of features. */
static int compute_features(hss *h, long long page, int op, unsigned long long npages, int sibyl,
                            int *bins, int *nbins)
{
    hss_page *pg = page >= 0 ? hss_lookup(h, (uint64_t)page) : NULL;
    if (pg && !pg->dev)
        pg = NULL;
    int k = 0;
    int size_bin = npages <= 1 ? 0 : (int)log2((double)npages);
    if (size_bin > 7)
        size_bin = 7;
    int fit = sibyl & FEAT_FITS;  /* free-space bins: 0 = the request does not fit, else sevenths */
    int binary = sibyl & FEAT_BINARY;
    sibyl &= FEAT_SIBYL;
    double free0 = 1.0 - (double)h->dev[0].used_pages / (double)h->cap[0];
    int fast_bin = fit ? room_bin(h, 0, npages, binary) : free0 <= 0 ? 0 : (int)(free0 * 8.0);
    if (fast_bin > 7)
        fast_bin = 7;
    int acc = pg ? log_bin((double)(h->now - pg->last_access), 2.0) : 63;
    int freq = pg ? log_bin((double)pg->count, 4.0) : 0;
    int migr = pg ? log_bin((double)(h->now - pg->last_move), 2.0) : 63;
    int dev = pg ? hss_dev_of(pg) : h->home;
    if (sibyl) {
        nbins[k] = 8; bins[k++] = size_bin;
        nbins[k] = 2; bins[k++] = op;
        nbins[k] = 64; bins[k++] = acc;
        nbins[k] = 64; bins[k++] = freq;
        nbins[k] = 8; bins[k++] = fast_bin;
        nbins[k] = h->ndev; bins[k++] = dev;
        return k;
    }
    nbins[k] = 2; bins[k++] = op;
    nbins[k] = 8; bins[k++] = size_bin;
    nbins[k] = 64; bins[k++] = acc;
    nbins[k] = 64; bins[k++] = freq;
    nbins[k] = 8; bins[k++] = fast_bin;
    nbins[k] = h->ndev; bins[k++] = dev;
    nbins[k] = 64; bins[k++] = migr;
    for (int d = 1; d < h->ndev - 1; d++) {
        double fr = 1.0 - (double)h->dev[d].used_pages / (double)h->cap[d];
        int b = fit ? room_bin(h, d, npages, binary) : fr <= 0 ? 0 : (int)(fr * 8.0);
        nbins[k] = 8; bins[k++] = b > 7 ? 7 : b;
    }
    return k;
}

/* Write the features of `page` into a float32 (scaled to [0, 1]) or int64 (bins) buffer. */
static int write_features(hss *h, long long page, int op, unsigned long long npages, int sibyl, PyObject *out)
{
    int bins[HSS_MAX_DEV + 8], nbins[HSS_MAX_DEV + 8];
    int k = compute_features(h, page, op, npages, sibyl, bins, nbins);
    Py_buffer b;
    if (bind_get_buffer(out, &b, 1) < 0)
        return -1;
    const char *f = bind_format(&b);
    int is_f32 = f[0] == 'f' && b.itemsize == 4, is_i64 = (f[0] == 'q' || f[0] == 'l') && b.itemsize == 8;
    if (b.ndim != 1 || b.shape[0] != k || (!is_f32 && !is_i64)) {
        PyBuffer_Release(&b);
        return bind_raise(PyExc_ValueError, "out must be a float32 or int64 array of length %d", k);
    }
    for (int i = 0; i < k; i++) {
        if (is_f32)
            ((float *)b.buf)[i] = nbins[i] > 1 ? (float)bins[i] / (float)(nbins[i] - 1) : 0.0f;
        else
            ((int64_t *)b.buf)[i] = bins[i];
    }
    PyBuffer_Release(&b);
    return 0;
}

/* features(page, op, npages, out, sibyl=False): the observation of a page (see
 * hss_gym/envs/features.py for the layout) into `out`. */
static PyObject *HSS_features(HSSObject *self, PyObject *args)
{
    long long page;
    int op, sibyl = 0;
    unsigned long long npages;
    PyObject *out;
    if (!PyArg_ParseTuple(args, "LiKO|i", &page, &op, &npages, &out, &sibyl))
        return NULL;
    if (write_features(&self->h, page, op, npages, sibyl, out) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Queue a move's (decision step, penalty term) at the FIFO's tail; -1 when out of memory. */
static int pend_push(HSSObject *self, long long step, double pen)
{
    if (self->pend_len == self->pend_cap) {
        size_t cap = self->pend_cap ? 2 * self->pend_cap : 64;
        long long *st = PyMem_Malloc(cap * sizeof *st);
        double *pe = PyMem_Malloc(cap * sizeof *pe);
        if (!st || !pe) {
            PyMem_Free(st);
            PyMem_Free(pe);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t k = 0; k < self->pend_len; k++) {  /* unwrap the ring */
            size_t j = (self->pend_head + k) % (self->pend_cap ? self->pend_cap : 1);
            st[k] = self->pend_step[j];
            pe[k] = self->pend_pen[j];
        }
        PyMem_Free(self->pend_step);
        PyMem_Free(self->pend_pen);
        self->pend_step = st, self->pend_pen = pe, self->pend_cap = cap, self->pend_head = 0;
    }
    size_t j = (self->pend_head + self->pend_len) % self->pend_cap;
    self->pend_step[j] = step;
    self->pend_pen[j] = pen;
    self->pend_len++;
    return 0;
}

/* The device of `page` as its curr_dev feature gives it (the home device if never placed). */
static int page_device(hss *h, long long page)
{
    hss_page *pg = hss_lookup(h, (uint64_t)page);
    return pg && pg->dev ? hss_dev_of(pg) : h->home;
}

/* env_step(place, move, next, obs_p, obs_m, sibyl, scan, step) — one environment step in one call:
 *   finish the pending request on `place` (ignored unless it needs a placement); if there is a
 *   candidate and `move` >= 0 is not the device it was offered on (the agent's "stay": the
 *   request just finished may have placed the page elsewhere since), queue its move to `move`;
 *   then, if `next` = (t, op, offset, size)
 *   is not None, begin it, pick the next candidate (when `scan`) and write both observations.
 *   The latency goes into the episode's latencies (env_begin) at `step`; a queued move joins the
 *   FIFO as (step, penalty term), penalty term = 1/acc_intr + 1/migr_intr of its page.
 * Returns (latency, evicted, ran, ran_steps, move_delay_us, needs_placement, candidate, device):
 * pages evicted by this step; the FIFO entries of the moves executed or dropped as stale since the
 * last call, oldest first, as (step, penalty term) pairs (None if none) and as a fresh list of
 * steps; the migration delay they added; for the next request whether it needs a placement, the
 * candidate page (-1: none) and its device (-1: none). */
static PyObject *HSS_env_step(HSSObject *self, PyObject *args)
{
    int place, move, sibyl, scan;
    long long step;
    PyObject *next, *po, *mo;
    if (!PyArg_ParseTuple(args, "iiOOOipL", &place, &move, &next, &po, &mo, &sibyl, &scan, &step))
        return NULL;
    hss *h = &self->h;
    if (!h->cur.active)
        return PyErr_Format(PyExc_RuntimeError, "env_step() without a pending request");
    if (!h->cur.needs_placement)
        place = 0;
    else if (place < 0 || place >= h->ndev)
        return PyErr_Format(PyExc_ValueError, "placement must be a device in 0..%d, got %d", h->ndev - 1, place);
    double lat;
    int rc = hss_finish(h, place, &lat);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    int queued = 0;
    double pen = 0.0;
    if (move >= 0 && self->cand >= 0 && move != self->cand_dev) {
        hss_page *pg = hss_lookup(h, (uint64_t)self->cand);
        if (pg && pg->dev) {
            double acc = (double)(h->now - pg->last_access), mig = (double)(h->now - pg->last_move);
            pen = 1.0 / (acc < 1 ? 1 : acc) + 1.0 / (mig < 1 ? 1 : mig);
        }
        rc = hss_enqueue(h, (uint64_t)self->cand, move);
        if (rc < 0)
            return raise_rc(rc), NULL;
        queued = rc;
    }
    int needs = 0;
    self->cand = -1;
    if (next != Py_None) {
        double t;
        int op;
        long long off, size;
        if (!PyArg_ParseTuple(next, "diLL", &t, &op, &off, &size))
            return NULL;
        if (off < 0 || size <= 0 || (op != 0 && op != 1))
            return PyErr_Format(PyExc_ValueError, "invalid request: op=%d offset=%lld size=%lld", op, off, size);
        rc = hss_begin(h, t, op, (uint64_t)off, (uint64_t)size);
        if (rc != HSS_OK)
            return raise_rc(rc), NULL;
        needs = h->cur.needs_placement;
        uint64_t page;
        if (scan && hss_candidate(h, &page))
            self->cand = (long long)page;
        unsigned long long npages = h->cur.p1 - h->cur.p0 + 1;
        if (write_features(h, (long long)h->cur.p0, op, npages, sibyl, po) < 0
            || write_features(h, self->cand, op, npages, sibyl, mo) < 0)
            return NULL;
    }
    if (self->lat_held && step >= 0 && step < (long long)(self->lat.len / (Py_ssize_t)sizeof(double)))
        ((double *)self->lat.buf)[step] = lat;
    long long evicted = (long long)(h->c.evictions - self->evict_seen);
    self->evict_seen = h->c.evictions;
    if (queued && pend_push(self, step, pen) < 0)
        return NULL;
    uint64_t moved = h->c.migrations + h->c.migrations_stale;
    size_t executed = (size_t)(moved - self->moved_seen), n = executed < self->pend_len ? executed : self->pend_len;
    self->moved_seen = moved;
    PyObject *ran = Py_None, *steps = PyList_New((Py_ssize_t)n);
    double delay = 0.0;
    if (!steps)
        return NULL;
    Py_INCREF(Py_None);
    if (executed) {  /* queued moves run (or are dropped as stale) in FIFO order */
        delay = h->c.mig_delay_us - self->delay_seen;
        self->delay_seen = h->c.mig_delay_us;
        Py_DECREF(Py_None);
        if (!(ran = PyList_New((Py_ssize_t)n))) {
            Py_DECREF(steps);
            return NULL;
        }
        for (size_t k = 0; k < n; k++) {
            size_t j = self->pend_head;
            self->pend_head = (j + 1) % self->pend_cap;
            self->pend_len--;
            PyObject *pair = Py_BuildValue("(Ld)", self->pend_step[j], self->pend_pen[j]);
            PyObject *s = PyLong_FromLongLong(self->pend_step[j]);
            if (!pair || !s) {
                Py_XDECREF(pair);
                Py_XDECREF(s);
                Py_DECREF(ran);
                Py_DECREF(steps);
                return NULL;
            }
            PyList_SET_ITEM(ran, (Py_ssize_t)k, pair);
            PyList_SET_ITEM(steps, (Py_ssize_t)k, s);
        }
    }
    int dev = self->cand >= 0 ? page_device(h, self->cand) : -1;
    self->cand_dev = dev;
    return Py_BuildValue("(dLNNdiLi)", lat, evicted, ran, steps, delay, needs, self->cand, dev);
}

/* env_begin(t, op, offset, size, obs_p, obs_m, sibyl, scan[, latencies]) -> (needs_placement,
 * candidate): the first request of an episode (after reset); env_step writes each step's latency
 * into `latencies` (a float64 array, held until the next env_begin) and starts its counts anew. */
static PyObject *HSS_env_begin(HSSObject *self, PyObject *args)
{
    double t;
    int op, sibyl, scan;
    long long off, size;
    PyObject *po, *mo, *lat = Py_None;
    if (!PyArg_ParseTuple(args, "diLLOOip|O", &t, &op, &off, &size, &po, &mo, &sibyl, &scan, &lat))
        return NULL;
    if (self->lat_held) {
        PyBuffer_Release(&self->lat);
        self->lat_held = 0;
    }
    if (lat != Py_None) {
        if (bind_get_buffer(lat, &self->lat, 1) < 0)
            return NULL;
        self->lat_held = 1;
        if (self->lat.itemsize != 8 || !self->lat.format || strcmp(self->lat.format, "d") != 0)
            return PyErr_Format(PyExc_ValueError, "env_begin: latencies must be a contiguous float64 array");
    }
    self->evict_seen = 0;
    self->delay_seen = 0.0;
    self->pend_len = self->pend_head = 0;
    if (off < 0 || size <= 0 || (op != 0 && op != 1))
        return PyErr_Format(PyExc_ValueError, "invalid request: op=%d offset=%lld size=%lld", op, off, size);
    if (!isfinite(t))
        return bad_time(t);
    hss *h = &self->h;
    int rc = hss_begin(h, t, op, (uint64_t)off, (uint64_t)size);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    uint64_t page;
    self->cand = scan && hss_candidate(h, &page) ? (long long)page : -1;
    self->cand_dev = self->cand >= 0 ? page_device(h, self->cand) : -1;
    self->moved_seen = h->c.migrations + h->c.migrations_stale;
    unsigned long long npages = h->cur.p1 - h->cur.p0 + 1;
    if (write_features(h, (long long)h->cur.p0, op, npages, sibyl, po) < 0
        || write_features(h, self->cand, op, npages, sibyl, mo) < 0)
        return NULL;
    return Py_BuildValue("(iL)", h->cur.needs_placement, self->cand);
}

/* I/O log for the real-device backend (hss.h HSS_LOG_*): set_log(on), take_log() -> bytes of
 * hss_log_ent records (drained), where(page) -> (device, slot) or None. */
static PyObject *HSS_set_log(HSSObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on))
        return NULL;
    hss_log_enable(&self->h, on);
    Py_RETURN_NONE;
}

static PyObject *HSS_take_log(HSSObject *self, PyObject *Py_UNUSED(ignored))
{
    hss_log *l = &self->h.log;
    PyObject *b = PyBytes_FromStringAndSize((const char *)l->buf, (Py_ssize_t)(l->len * sizeof(hss_log_ent)));
    if (b)
        l->len = 0;
    return b;
}

static PyObject *HSS_where(HSSObject *self, PyObject *args)
{
    unsigned long long page;
    if (!PyArg_ParseTuple(args, "K", &page))
        return NULL;
    hss_page *pg = hss_lookup(&self->h, page);
    if (!pg || !pg->dev)
        Py_RETURN_NONE;
    return Py_BuildValue("(iK)", hss_dev_of(pg), (unsigned long long)hss_slot_of(&self->h, page, pg));
}

static PyObject *HSS_memory_bytes(HSSObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSize_t(hss_memory_bytes(&self->h));
}

static PyMethodDef HSS_methods[] = {
    {"reset", (PyCFunction)HSS_reset, METH_VARARGS, "reset(seed=0): empty HSS, idle devices"},
    {"replay", (PyCFunction)HSS_replay, METH_VARARGS,
     "replay(time_us, op, offset, size, place, latency_out, start=0, stop=-1): fixed placement"},
    {"begin", (PyCFunction)HSS_begin, METH_VARARGS,
     "begin(t, op, offset, size) -> needs_placement: phase 1 of a request"},
    {"finish", (PyCFunction)HSS_finish, METH_VARARGS, "finish(place=0) -> latency_us: phase 2"},
    {"candidate", (PyCFunction)HSS_candidate, METH_NOARGS, "next migration candidate page, or None"},
    {"enqueue", (PyCFunction)HSS_enqueue, METH_VARARGS, "enqueue(page, target) -> queued?"},
    {"clean", (PyCFunction)HSS_clean, METH_VARARGS,
     "clean(device, k, force=False) -> asked? move the device's k LRU pages down as one batch in the next "
     "idle time; with one pending: False, or with force run that one now"},
    {"move", (PyCFunction)HSS_move, METH_VARARGS, "move(page, target, t) -> completion: migrate now"},
    {"remap", (PyCFunction)HSS_remap, METH_VARARGS, "remap(page, target): move instantly, no device time"},
    {"page", (PyCFunction)HSS_page, METH_VARARGS, "page(page) -> metadata dict or None"},
    {"devices", (PyCFunction)HSS_devices, METH_VARARGS,
     "devices(pages, out): device of each page (int64 arrays; -1 if not placed)"},
    {"counters", (PyCFunction)HSS_counters, METH_NOARGS, "run counters"},
    {"env_step", (PyCFunction)HSS_env_step, METH_VARARGS,
     "env_step(place, move, next, obs_p, obs_m, sibyl, scan, step): one environment step (see source)"},
    {"env_begin", (PyCFunction)HSS_env_begin, METH_VARARGS,
     "env_begin(t, op, offset, size, obs_p, obs_m, sibyl, scan[, latencies]): first request of an episode"},
    {"features", (PyCFunction)HSS_features, METH_VARARGS,
     "features(page, op, npages, out, sibyl=False): observation bins of a page into out"},
    {"memory_bytes", (PyCFunction)HSS_memory_bytes, METH_NOARGS, "bytes held by the page table, LRU and allocators"},
    {"set_log", (PyCFunction)HSS_set_log, METH_VARARGS, "set_log(on): record device I/O for a real backend"},
    {"take_log", (PyCFunction)HSS_take_log, METH_NOARGS, "take_log() -> bytes of logged I/O records (drained)"},
    {"where", (PyCFunction)HSS_where, METH_VARARGS, "where(page) -> (device, slot) or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HSSType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._core.HSS",
    .tp_basicsize = sizeof(HSSObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The native HSS core (backends/core/hss.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)HSS_init,
    .tp_dealloc = (destructor)HSS_dealloc,
    .tp_methods = HSS_methods,
    .tp_getset = HSS_getset,
};

static struct PyModuleDef coremodule = {
    PyModuleDef_HEAD_INIT, "_core", "Native HSS core and simulated device model.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = bind_module(&coremodule, (PyTypeObject *[]){&SimDevicesType, &HSSType, NULL});
    if (m && (PyModule_AddIntConstant(m, "PAGE_BYTES", 4096) < 0
              || PyModule_AddIntConstant(m, "PAGE_META_BYTES", (long)sizeof(hss_page)) < 0
              || PyModule_AddIntConstant(m, "MAX_DEVICES", HSS_MAX_DEV) < 0
              || PyModule_AddIntConstant(m, "LOG_ENTRY_BYTES", (long)sizeof(hss_log_ent)) < 0))
        Py_CLEAR(m);
    return m;
}
