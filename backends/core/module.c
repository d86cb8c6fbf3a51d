/* CPython bindings of the native core (module hss_gym.backends._core).
 *
 *   SimDevices(params, seed)  the simulated devices (backends/simdev.c), one dict of timing
 *                             parameters per device; built by hss_gym.backends.sim.SimBackend.
 *   HSS(devices, capacities, queue_size, min_interval, scan_window)
 *                             the HSS core (hss.c, hss_*.c) over a SimDevices object, with one env's step
 *                             and features (env.c). Python wrappers in hss_gym/hss.py.
 *   VecEnv(n, mode, nfeat, arrays)  a batch of envs stepped in one call (vec.c).
 *   Episode(core, ...)        one env's episode stepped in C (vec.c's slot step), behind
 *                             HSSParallelEnv.step and fast_step.
 *   feature_layout(n_devices, flags)  the features' names and bins (env.c's table).
 * This file only converts arguments and errors.
 */
#include "binding.h"

#include <math.h>
#include <string.h>

#include "env.h"
#include "hss.h"
#include "simdev.h"
#include "vec.h"

/* ------------------------------------------------------------------ helpers */

static int raise_rc(int rc)
{
    switch (rc) {
    case HSS_ENOMEM: PyErr_NoMemory(); break;
    case HSS_EINVAL: PyErr_SetString(PyExc_ValueError, "invalid argument to the HSS core"); break;
    case HSS_EFULL: PyErr_SetString(PyExc_RuntimeError, "no device can take the page"); break;
    case HSS_ESTEPS: PyErr_SetString(PyExc_OverflowError, "more than 2**32 - 2 requests in one episode"); break;
    case HSS_EBIG:
        PyErr_Format(PyExc_ValueError, "a request touching more than %llu pages (%llu bytes), the most one "
                     "request may touch", (unsigned long long)HSS_MAX_REQ_PAGES,
                     (unsigned long long)(HSS_MAX_REQ_PAGES << 12));
        break;
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
            "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d,s:K,s:d}",
            "reads", s->reads, "writes", s->writes, "bytes_read", s->bytes_read,
            "bytes_written", s->bytes_written, "bg_reads", s->bg_reads, "bg_writes", s->bg_writes,
            "bg_bytes_read", s->bg_bytes_read, "bg_bytes_written", s->bg_bytes_written,
            "seq_ios", s->seq_ios, "busy_us", s->busy_us, "active_us", s->active_us, "used_pages", d->used_pages,
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
    hss_env e;                 /* env: the migration candidate and the FIFO of queued moves (env.h) */
    Py_buffer lat;             /* env: the episode's latencies (float64), e.lat while held */
    int lat_held;
} HSSObject;

static void HSS_dealloc(HSSObject *self)
{
    if (self->lat_held)
        PyBuffer_Release(&self->lat);
    hss_env_free(&self->e);
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
    int rc;
    size_t i;
    Py_BEGIN_ALLOW_THREADS
    rc = hss_replay(&self->h, b[0].buf, b[1].buf, b[2].buf, b[3].buf, place, b[4].buf, (size_t)start, (size_t)stop,
                    &i);
    Py_END_ALLOW_THREADS
    if (rc == HSS_EINVAL)
        PyErr_Format(PyExc_ValueError, "request %zu: op must be 0/1, offset >= 0, size > 0 and offset + size < 4 PiB",
                     i);
    else if (rc == HSS_EBIG)
        PyErr_Format(PyExc_ValueError, "request %zu touches more than %llu pages (%llu bytes), the most one "
                     "request may touch", i, (unsigned long long)HSS_MAX_REQ_PAGES,
                     (unsigned long long)(HSS_MAX_REQ_PAGES << 12));
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
    long long k, chunk = 0, first = 0;
    if (!PyArg_ParseTuple(args, "iL|pLL", &d, &k, &force, &chunk, &first))
        return NULL;
    if (d < 0 || d >= self->h.home || k < 1 || k > UINT32_MAX || chunk < 0 || chunk > UINT32_MAX || first < 0
        || first > UINT32_MAX)
        return PyErr_Format(PyExc_ValueError, "clean: need 0 <= device < %d (not the home device), 1 <= k < 2**32 "
                            "and 0 <= chunk, first < 2**32, got %d, %lld, %lld, %lld", self->h.home, d, k, chunk,
                            first);
    int rc = hss_clean(&self->h, d, (uint32_t)k, force, (uint32_t)chunk, (uint32_t)first);
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

static PyObject *HSS_get_active(HSSObject *self, void *Py_UNUSED(closure))
{
    PyObject *l = PyList_New(self->h.ndev);
    if (!l)
        return NULL;
    for (int d = 0; d < self->h.ndev; d++) {
        const simdev *dv = &self->h.dev[d];
        PyList_SET_ITEM(l, d, PyFloat_FromDouble(dv->st.active_us));
    }
    return l;
}

BIND_GETTER(HSS_get_mig_delay, HSSObject, PyFloat_FromDouble(self->h.c.mig_delay_us))
BIND_GETTER(HSS_get_clean_pending, HSSObject, PyBool_FromLong(self->h.clean_k != 0))
BIND_GETTER(HSS_get_reuse_victims, HSSObject, PyBool_FromLong(self->h.reuse_victims))

static int HSS_set_reuse_victims(HSSObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    int on = value ? PyObject_IsTrue(value) : -1;
    if (on < 0) {
        if (!value)
            PyErr_SetString(PyExc_AttributeError, "reuse_victims cannot be deleted");
        return -1;
    }
    hss_set_reuse_victims(&self->h, on);
    return 0;
}
BIND_GETTER(HSS_get_readahead, HSSObject, PyLong_FromUnsignedLong(self->h.readahead))

static int HSS_set_readahead(HSSObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "readahead cannot be deleted");
        return -1;
    }
    long long pages = PyLong_AsLongLong(value);
    if (pages == -1 && PyErr_Occurred())
        return -1;
    if (pages < 0 || pages > (long long)HSS_MAX_REQ_PAGES) {
        PyErr_Format(PyExc_ValueError, "readahead: need 0 <= pages <= %llu, got %lld",
                     (unsigned long long)HSS_MAX_REQ_PAGES, pages);
        return -1;
    }
    hss_set_readahead(&self->h, (uint32_t)pages);
    return 0;
}
BIND_GETTER(HSS_get_clean_depth, HSSObject, PyLong_FromUnsignedLong(self->h.clean_depth))

static int HSS_set_clean_depth(HSSObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "clean_depth cannot be deleted");
        return -1;
    }
    long long depth = PyLong_AsLongLong(value);
    if (depth == -1 && PyErr_Occurred())
        return -1;
    if (depth < 0 || depth > HSS_CLEAN_DEPTH_MAX) {
        PyErr_Format(PyExc_ValueError, "clean_depth: need 0 <= chunks <= %d, got %lld", HSS_CLEAN_DEPTH_MAX, depth);
        return -1;
    }
    hss_set_clean_depth(&self->h, (uint32_t)depth);
    return 0;
}
BIND_GETTER(HSS_get_queue_length, HSSObject, PyLong_FromLong((long)self->h.mq_len))
BIND_GETTER(HSS_get_host_wait, HSSObject, PyFloat_FromDouble(self->h.c.host_wait_us))

static PyGetSetDef HSS_getset[] = {
    {"evictions", (getter)HSS_get_evictions, NULL, "pages evicted so far (cheap; counters() has all)", NULL},
    {"migration_delay_us", (getter)HSS_get_mig_delay, NULL,
     "queued moves' device time past the next host arrival, summed (cheap; counters() has all)", NULL},
    {"queue_length", (getter)HSS_get_queue_length, NULL, "moves in the migration queue (cheap; counters() has all)",
     NULL},
    {"used_pages", (getter)HSS_get_used, NULL, "pages held by each device", NULL},
    {"active_us", (getter)HSS_get_active, NULL, "each device's time with an I/O in service so far, us (cheap)", NULL},
    {"clean_pending", (getter)HSS_get_clean_pending, NULL, "whether a cleaning (clean) waits for idle time", NULL},
    {"reuse_victims", (getter)HSS_get_reuse_victims, (setter)HSS_set_reuse_victims,
     "cleanings take first the pages predicted never read again, by their region's written pages (off after reset)",
     NULL},
    {"clean_depth", (getter)HSS_get_clean_depth, (setter)HSS_set_clean_depth,
     "most chunks of a cleaning into the home device in flight at once (0: no limit; 0 after reset)", NULL},
    {"readahead", (getter)HSS_get_readahead, (setter)HSS_set_readahead,
     "most pages a sequential read stream prefetches to the fastest device in idle time (0: off; off after reset)",
     NULL},
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
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:d,s:d,s:d,s:d,s:d,s:K,s:I,s:i}",
        "requests", c->requests, "reads", c->reads, "writes", c->writes,
        "host_bytes_read", c->host_bytes_read, "host_bytes_written", c->host_bytes_written,
        "pages_accessed", c->pages_accessed, "fast_pages", c->fast_pages,
        "placements", c->placements, "evictions", c->evictions, "migrations", c->migrations,
        "migrations_busy", c->migrations_busy, "migrations_stale", c->migrations_stale,
        "migration_bytes_written", c->mig_bytes_written, "fill_pages", c->fill_pages,
        "cleaned_pages", c->cleaned, "clean_misses", c->clean_misses, "prefetched_pages", c->prefetched,
        "prefetch_hits", c->prefetch_hits, "migrated_pages_in", in,
        "migrated_pages_out", out, "used_pages", used, "first_arrival_us", c->first_arrival,
        "last_completion_us", c->last_completion, "latency_sum_us", c->latency_sum,
        "host_wait_us", c->host_wait_us, "migration_delay_us", c->mig_delay_us,
        "touched_pages", self->h.pt.touched, "step", self->h.now, "queue_length", self->h.mq_len);
}

/* An observation buffer of `k` features (1-D, writable): float32 (*raw = 0) or int64 bins (1). */
static int get_obs(PyObject *o, int k, Py_buffer *b, int *raw, const char *name)
{
    if (bind_get_buffer(o, b, 1) < 0)
        return -1;
    const char *f = bind_format(b);
    int is_f32 = f[0] == 'f' && b->itemsize == 4, is_i64 = (f[0] == 'q' || f[0] == 'l') && b->itemsize == 8;
    if (b->ndim != 1 || b->shape[0] != k || (!is_f32 && !is_i64)) {
        PyBuffer_Release(b);
        return bind_raise(PyExc_ValueError, "%s must be a float32 or int64 array of length %d", name, k);
    }
    *raw = is_i64;
    return 0;
}

/* Both agents' observation buffers (the same type): 0, or -1 with none held. */
static int get_obs_pair(HSSObject *self, PyObject *po, PyObject *mo, int flags, Py_buffer *b, int *raw)
{
    int k = hss_feature_count(self->h.ndev, flags), raw_m;
    if (get_obs(po, k, &b[0], raw, "obs_p") < 0)
        return -1;
    if (get_obs(mo, k, &b[1], &raw_m, "obs_m") < 0) {
        PyBuffer_Release(&b[0]);
        return -1;
    }
    if (raw_m != *raw) {
        bind_release(b, 2);
        return bind_raise(PyExc_ValueError, "obs_p and obs_m must have the same type");
    }
    return 0;
}

/* features(page, op, npages, out, sibyl=False): the observation of a page (env.c) into `out`,
 * float32 scaled to [0, 1] or int64 bins; `sibyl` holds the feature flags (env.h HSS_FEAT_*). */
static PyObject *HSS_features(HSSObject *self, PyObject *args)
{
    long long page;
    int op, sibyl = 0, raw;
    unsigned long long npages;
    PyObject *out;
    if (!PyArg_ParseTuple(args, "LiKO|i", &page, &op, &npages, &out, &sibyl))
        return NULL;
    Py_buffer b;
    if (get_obs(out, hss_feature_count(self->h.ndev, sibyl), &b, &raw, "out") < 0)
        return NULL;
    hss_features_row(&self->h, page, op, npages, sibyl, raw, b.buf);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* env_step(place, move, next, obs_p, obs_m, sibyl, scan, step) — one environment step in one call
 * (env.h hss_env_step): finish the pending request on `place` (ignored unless it needs a
 * placement); if there is a candidate and `move` >= 0 is not the device it was offered on (the
 * agent's "stay": the request just finished may have placed the page elsewhere since), queue its
 * move to `move`; then, if `next` = (t, op, offset, size) is not None, begin it, pick the next
 * candidate (when `scan`) and write both observations.
 *   The latency goes into the episode's latencies (env_begin) at `step`; a queued move joins the
 *   FIFO as (step, penalty term), penalty term = 1/acc_intr + 1/migr_intr of its page.
 * Returns (latency, evicted, ran, ran_steps, move_delay_us, needs_placement, candidate, device):
 * pages evicted by this step; the FIFO entries of the moves executed or dropped as stale since the
 * last call, oldest first, as (step, penalty term) pairs (None if none) and as a fresh list of
 * steps; the migration delay they added; for the next request whether it needs a placement, the
 * candidate page (-1: none) and its device (-1: none). */
static PyObject *HSS_env_step(HSSObject *self, PyObject *args)
{
    int place, move, sibyl, scan, raw = 0;
    long long step;
    PyObject *next, *po, *mo;
    if (!PyArg_ParseTuple(args, "iiOOOipL", &place, &move, &next, &po, &mo, &sibyl, &scan, &step))
        return NULL;
    hss *h = &self->h;
    if (!h->cur.active)
        return PyErr_Format(PyExc_RuntimeError, "env_step() without a pending request");
    if (h->cur.needs_placement && (place < 0 || place >= h->ndev))
        return PyErr_Format(PyExc_ValueError, "placement must be a device in 0..%d, got %d", h->ndev - 1, place);
    double t = 0.0;
    int op = 0;
    long long off = 0, size = 1;
    Py_buffer b[2] = {{0}};
    if (next != Py_None) {
        if (!PyArg_ParseTuple(next, "diLL", &t, &op, &off, &size))
            return NULL;
        if (off < 0 || size <= 0 || (op != 0 && op != 1))
            return PyErr_Format(PyExc_ValueError, "invalid request: op=%d offset=%lld size=%lld", op, off, size);
        if (get_obs_pair(self, po, mo, sibyl, b, &raw) < 0)
            return NULL;
    }
    hss_env_out o;
    int rc = hss_env_step(h, &self->e, place, move, next != Py_None, t, op, (uint64_t)off, (uint64_t)size, scan,
                          sibyl, raw, step, b[0].buf, b[1].buf, &o);
    bind_release(b, 2);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    PyObject *ran = Py_None, *steps = PyList_New((Py_ssize_t)o.ran);
    if (!steps)
        return NULL;
    Py_INCREF(Py_None);
    if (o.executed) {
        Py_DECREF(Py_None);
        if (!(ran = PyList_New((Py_ssize_t)o.ran))) {
            Py_DECREF(steps);
            return NULL;
        }
        for (size_t k = 0; k < o.ran; k++) {
            hss_pend p = hss_env_pop(&self->e);
            PyObject *pair = Py_BuildValue("(Ld)", p.step, p.pen), *s = PyLong_FromLongLong(p.step);
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
    return Py_BuildValue("(dLNNdiLi)", o.latency, o.evicted, ran, steps, o.delay, o.needs, self->e.cand,
                         self->e.cand_dev);
}

/* env_begin(t, op, offset, size, obs_p, obs_m, sibyl, scan[, latencies]) -> (needs_placement,
 * candidate): the first request of an episode (after reset); env_step writes each step's latency
 * into `latencies` (a float64 array, held until the next env_begin) and starts its counts anew. */
static PyObject *HSS_env_begin(HSSObject *self, PyObject *args)
{
    double t;
    int op, sibyl, scan, raw;
    long long off, size;
    PyObject *po, *mo, *lat = Py_None;
    if (!PyArg_ParseTuple(args, "diLLOOip|O", &t, &op, &off, &size, &po, &mo, &sibyl, &scan, &lat))
        return NULL;
    if (self->lat_held) {
        PyBuffer_Release(&self->lat);
        self->lat_held = 0;
    }
    self->e.lat = NULL, self->e.nlat = 0;
    if (lat != Py_None) {
        if (bind_get_buffer(lat, &self->lat, 1) < 0)
            return NULL;
        self->lat_held = 1;
        if (self->lat.itemsize != 8 || !self->lat.format || strcmp(self->lat.format, "d") != 0)
            return PyErr_Format(PyExc_ValueError, "env_begin: latencies must be a contiguous float64 array");
        self->e.lat = self->lat.buf, self->e.nlat = (long long)(self->lat.len / (Py_ssize_t)sizeof(double));
    }
    if (off < 0 || size <= 0 || (op != 0 && op != 1))
        return PyErr_Format(PyExc_ValueError, "invalid request: op=%d offset=%lld size=%lld", op, off, size);
    if (!isfinite(t))
        return bad_time(t);
    Py_buffer b[2] = {{0}};
    if (get_obs_pair(self, po, mo, sibyl, b, &raw) < 0)
        return NULL;
    hss *h = &self->h;
    int rc = hss_env_begin(h, &self->e, t, op, (uint64_t)off, (uint64_t)size, scan, sibyl, raw, b[0].buf, b[1].buf);
    bind_release(b, 2);
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    return Py_BuildValue("(iL)", h->cur.needs_placement, self->e.cand);
}
/* I/O log for the real-device backend (hss_types.h HSS_LOG_*): set_log(on), take_log() -> bytes of
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
     "clean(device, k, force=False, chunk=0, first=0) -> asked? move the device's k LRU pages down in idle time, "
     "as one batch or in chunks of `chunk` pages (with `first`, each idle period's chunks start at `first` pages "
     "and double); with one pending: False, or with force run its next chunk now"},
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

/* ------------------------------------------------------------------ VecEnv */

/* VecEnv(n, mode, nfeat, arrays, threads=1): a batch of n HSS envs stepped in one call (vec.h),
 * for hss_gym/envs/hss/vector.py; mode 0 both agents, 1 placement learns, 2 migration learns.
 * `arrays`: a dict of the shared NumPy arrays the steps read and write (held until the object
 * goes): act_p, act_m (int64 [n]), skip (bool [n]), obs_p, obs_m (float32 or int64 [n, nfeat]),
 * rew_p, rew_m (float64 [n]), trunc, acting_p, acting_m (bool [n]); those a mode does not use
 * may be missing. load(k, ...) gives slot k an episode after its env was reset in Python; step()
 * steps every slot not skipped, without the GIL. */
#define VEC_NARR 10
static const char *const vec_arrays[VEC_NARR] = {"act_p", "act_m", "skip", "obs_p", "obs_m", "rew_p", "rew_m",
                                                 "trunc", "acting_p", "acting_m"};
/* which arrays each mode needs (bit i: vec_arrays[i]) */
static const unsigned vec_needs[3] = {0x3FF, 0x0AD, 0x0D6};

typedef struct {
    PyObject_HEAD
    hss_vec v;
    int ready, busy, loaded;   /* loaded: slots given an episode */
    Py_buffer arr[VEC_NARR];
    PyObject **core;           /* per slot: its HSS (strong; the slot borrows h and e) */
    Py_buffer *req;            /* per slot: time_us, op, offset, size */
} VecEnvObject;

static void VecEnv_dealloc(VecEnvObject *self)
{
    if (self->ready)
        hss_vec_free(&self->v);
    bind_release(self->arr, VEC_NARR);
    if (self->core)
        for (int k = 0; k < self->v.n; k++)
            Py_XDECREF(self->core[k]);
    if (self->req)
        bind_release(self->req, 4 * self->v.n);
    PyMem_Free(self->core);
    PyMem_Free(self->req);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Array i of `arrays` as a C-contiguous buffer of the expected format and shape; 0, or -1. */
static int vec_array(VecEnvObject *self, PyObject *arrays, int i, int n, int nfeat, int raw)
{
    PyObject *o = PyDict_GetItemString(arrays, vec_arrays[i]);
    if (!o)
        return bind_raise(PyExc_ValueError, "VecEnv: array %s is missing", vec_arrays[i]);
    Py_buffer *b = &self->arr[i];
    if (bind_get_buffer(o, b, i != 0 && i != 1 && i != 2) < 0)
        return -1;
    const char *f = bind_format(b);
    int obs = i == 3 || i == 4, ok;
    if (obs)
        ok = b->ndim == 2 && b->shape[0] == n && b->shape[1] == nfeat
             && (raw ? (f[0] == 'q' || f[0] == 'l') && b->itemsize == 8 : f[0] == 'f' && b->itemsize == 4);
    else
        ok = b->ndim == 1 && b->shape[0] == n
             && (i <= 1 ? (f[0] == 'q' || f[0] == 'l') && b->itemsize == 8
                 : i == 5 || i == 6 ? f[0] == 'd' : f[0] == '?' && b->itemsize == 1);
    if (!ok) {
        const char *type = obs ? (raw ? "int64" : "float32") : i <= 1 ? "int64" : i == 5 || i == 6 ? "float64" : "bool";
        PyBuffer_Release(b);
        return bind_raise(PyExc_ValueError, "VecEnv: %s must be a C-contiguous %s array of shape (%d%s)",
                          vec_arrays[i], type, n, obs ? ", nfeat" : ",");
    }
    return 0;
}

static int VecEnv_init(VecEnvObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", "mode", "nfeat", "arrays", "raw", "threads", NULL};
    int n, mode, nfeat, raw = 0, threads = 1;
    PyObject *arrays;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiO!|pi", kwlist, &n, &mode, &nfeat, &PyDict_Type, &arrays, &raw,
                                     &threads))
        return -1;
    if (self->ready)
        return bind_raise(PyExc_RuntimeError, "VecEnv is initialised once");
    if (n < 1 || mode < HSS_VEC_PAIR || mode > HSS_VEC_MIGRATION || nfeat < 1 || nfeat > HSS_FEAT_MAX)
        return bind_raise(PyExc_ValueError, "VecEnv: need n >= 1, mode 0..2 and 1 <= nfeat <= %d", HSS_FEAT_MAX);
    if (threads < 1 || threads > n)
        return bind_raise(PyExc_ValueError, "VecEnv: threads must be in 1..n (%d), got %d", n, threads);
    if (!(self->core = PyMem_Calloc((size_t)n, sizeof *self->core))
        || !(self->req = PyMem_Calloc(4 * (size_t)n, sizeof *self->req))) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = hss_vec_init(&self->v, n, mode, nfeat, raw);
    if (rc != HSS_OK)
        return raise_rc(rc);
    self->ready = 1;
    for (int i = 0; i < VEC_NARR; i++)
        if ((vec_needs[mode] >> i & 1) && vec_array(self, arrays, i, n, nfeat, raw) < 0)
            return -1;
    hss_vec *v = &self->v;
    v->act_p = self->arr[0].buf, v->act_m = self->arr[1].buf, v->skip = self->arr[2].buf;
    v->obs_p = self->arr[3].buf, v->obs_m = self->arr[4].buf, v->rew_p = self->arr[5].buf;
    v->rew_m = self->arr[6].buf, v->trunc = self->arr[7].buf, v->acting_p = self->arr[8].buf;
    v->acting_m = self->arr[9].buf;
    if ((rc = hss_vec_set_threads(v, threads)) != HSS_OK)
        return rc == HSS_EINVAL ? bind_raise(PyExc_ValueError, "VecEnv: threads are not available here") : raise_rc(rc);
    return 0;
}

static int vec_idle(VecEnvObject *self)
{
    if (!self->ready)
        return bind_raise(PyExc_RuntimeError, "VecEnv is not initialised");
    if (self->busy)
        return bind_raise(PyExc_RuntimeError, "VecEnv: step() is running in another thread");
    return 0;
}

/* An episode's request columns (time_us, op, offset, size: float64, uint8, int64, int64) as
 * buffers in b[4], each of at least `end` entries: 0, or -1 with none held. */
static int get_columns(PyObject *const cols[4], long long end, Py_buffer b[4], const char *who)
{
    memset(b, 0, 4 * sizeof *b);
    if (get_buf(cols[0], 'd', 0, &b[0], "time_us") < 0 || get_buf(cols[1], 'B', 0, &b[1], "op") < 0
        || get_buf(cols[2], 'q', 0, &b[2], "offset") < 0 || get_buf(cols[3], 'q', 0, &b[3], "size") < 0) {
        bind_release(b, 4);
        return -1;
    }
    if (b[0].shape[0] < end || b[1].shape[0] < end || b[2].shape[0] < end || b[3].shape[0] < end) {
        bind_release(b, 4);
        return bind_raise(PyExc_ValueError, "%s: the request columns have fewer than end = %lld entries", who, end);
    }
    return 0;
}

/* load(k, core, time_us, op, offset, size, i, end, needs, flags, scan, place_dev, ref_us, penalty,
 *      reward_n, reward_x): slot k steps `core` (an HSS whose env_begin started the episode, its
 * latencies included) from request i of the episode's `end` requests (float64, uint8, int64,
 * int64 columns), the request observed now needing a placement if `needs`; the rest are the
 * env's feature flags, migration switch, fixed placement device (mode 2) and reward parameters. */
static PyObject *VecEnv_load(VecEnvObject *self, PyObject *args)
{
    int k, needs, flags, scan, place_dev, reward_n, reward_x;
    long long i, end;
    double ref_us, penalty;
    PyObject *core, *cols[4];
    if (!PyArg_ParseTuple(args, "iO!OOOOLLpiiiddii", &k, &HSSType, &core, &cols[0], &cols[1], &cols[2], &cols[3],
                          &i, &end, &needs, &flags, &scan, &place_dev, &ref_us, &penalty, &reward_n, &reward_x)
        || vec_idle(self) < 0)
        return NULL;
    hss_vec *v = &self->v;
    if (k < 0 || k >= v->n)
        return PyErr_Format(PyExc_IndexError, "slot %d out of range 0..%d", k, v->n - 1);
    HSSObject *c = (HSSObject *)core;
    if (!c->ready || !c->lat_held || !c->h.cur.active)
        return PyErr_Format(PyExc_ValueError, "slot %d: the HSS has no episode begun (env_begin with latencies)", k);
    if (hss_feature_count(c->h.ndev, flags) != v->nfeat)
        return PyErr_Format(PyExc_ValueError, "slot %d: %d features, the batch has %d", k,
                            hss_feature_count(c->h.ndev, flags), v->nfeat);
    if (place_dev < 0 || place_dev >= c->h.ndev || reward_n < 1 || reward_x < 1)
        return PyErr_Format(PyExc_ValueError, "slot %d: place_dev must be a device, reward_n and reward_x >= 1", k);
    if (i < 0 || i >= end)
        return PyErr_Format(PyExc_ValueError, "slot %d: need 0 <= i < end, got i = %lld, end = %lld", k, i, end);
    Py_buffer b[4];
    if (get_columns(cols, end, b, "VecEnv.load") < 0)
        return NULL;
    bind_release(&self->req[4 * k], 4);
    memcpy(&self->req[4 * k], b, sizeof b);
    if (!self->core[k])
        self->loaded++;
    Py_INCREF(core);
    Py_XSETREF(self->core[k], core);
    hss_vec_slot *s = &v->s[k];
    s->h = &c->h, s->e = &c->e;
    s->t = b[0].buf, s->op = b[1].buf, s->off = b[2].buf, s->size = b[3].buf;
    s->i = i, s->end = end, s->needs = needs;
    s->flags = flags, s->scan = scan, s->place_dev = place_dev;
    s->ref_us = ref_us, s->penalty = penalty, s->reward_n = reward_n, s->reward_x = reward_x;
    hss_vec_slot_clear(s);
    Py_RETURN_NONE;
}

static PyObject *VecEnv_step(VecEnvObject *self, PyObject *Py_UNUSED(ignored))
{
    if (vec_idle(self) < 0)
        return NULL;
    if (self->loaded < self->v.n)
        return PyErr_Format(PyExc_RuntimeError, "VecEnv.step: %d of %d slots have no episode (load them)",
                            self->v.n - self->loaded, self->v.n);
    int rc, bad = -1;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = hss_vec_step(&self->v, &bad);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc == HSS_ENOMEM)
        return PyErr_NoMemory();
    if (rc != HSS_OK)
        return PyErr_Format(PyExc_RuntimeError, "VecEnv.step: env %d failed: %s", bad,
                            rc == HSS_EFULL ? "no device can take the page"
                            : rc == HSS_ESTEPS ? "more than 2**32 - 2 requests in one episode"
                            : rc == HSS_EBIG ? "a request touches more pages than one request may (MAX_REQUEST_PAGES)"
                            : "invalid argument to the HSS core");
    Py_RETURN_NONE;
}

/* position(k) -> (i, needs, candidate): slot k's request index, whether it needs a placement and
 * the migration candidate (-1: none). */
static PyObject *VecEnv_position(VecEnvObject *self, PyObject *args)
{
    int k;
    if (!PyArg_ParseTuple(args, "i", &k) || vec_idle(self) < 0)
        return NULL;
    if (k < 0 || k >= self->v.n || !self->core[k])
        return PyErr_Format(PyExc_IndexError, "slot %d is out of range or not loaded", k);
    const hss_vec_slot *s = &self->v.s[k];
    return Py_BuildValue("(LiL)", s->i, s->needs, s->e->cand);
}

static PyObject *VecEnv_set_threads(VecEnvObject *self, PyObject *args)
{
    int threads;
    if (!PyArg_ParseTuple(args, "i", &threads) || vec_idle(self) < 0)
        return NULL;
    if (threads < 1 || threads > self->v.n)
        return PyErr_Format(PyExc_ValueError, "threads must be in 1..%d, got %d", self->v.n, threads);
    int rc = hss_vec_set_threads(&self->v, threads);
    if (rc == HSS_EINVAL)
        return PyErr_Format(PyExc_ValueError, "threads are not available here");
    if (rc != HSS_OK)
        return raise_rc(rc), NULL;
    Py_RETURN_NONE;
}

BIND_GETTER(VecEnv_get_threads, VecEnvObject, PyLong_FromLong(self->v.nthreads))

static PyMethodDef VecEnv_methods[] = {
    {"load", (PyCFunction)VecEnv_load, METH_VARARGS,
     "load(k, core, time_us, op, offset, size, i, end, needs, flags, scan, place_dev, ref_us, penalty, reward_n, "
     "reward_x): slot k's episode (see source)"},
    {"step", (PyCFunction)VecEnv_step, METH_NOARGS, "step(): step every slot not skipped (GIL released)"},
    {"position", (PyCFunction)VecEnv_position, METH_VARARGS, "position(k) -> (i, needs, candidate)"},
    {"set_threads", (PyCFunction)VecEnv_set_threads, METH_VARARGS, "set_threads(n): step over n threads"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef VecEnv_getset[] = {
    {"threads", (getter)VecEnv_get_threads, NULL, "threads stepping the batch (the caller's included)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject VecEnvType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._core.VecEnv",
    .tp_basicsize = sizeof(VecEnvObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch of HSS envs stepped in one call (backends/core/vec.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)VecEnv_init,
    .tp_dealloc = (destructor)VecEnv_dealloc,
    .tp_methods = VecEnv_methods,
    .tp_getset = VecEnv_getset,
};

/* ------------------------------------------------------------------ Episode */

/* Episode(core, time_us, op, offset, size, end, needs, flags, scan, ref_us, penalty, reward_n,
 *         reward_x, latency_reward, obs, actions, empty, empty_args, agents, complete=None):
 * one episode of hss_gym.envs.hss.env.HSSParallelEnv stepped in C, the env's step without its
 * dicts. `core` is an HSS whose env_begin started the episode (its latencies included); the
 * episode's `end` requests are the columns time_us, op, offset, size (float64, uint8, int64,
 * int64); `needs` whether the first needs a placement; then the env's feature flags, migration
 * switch and reward parameters (vec.h); `obs` the first observations (placement, migration);
 * `actions` an int64 array of 2 * end entries that gets each step's (place, move), what a copy of
 * the env replays; empty(*empty_args) gives a fresh observation array; the list `agents` is
 * emptied when the episode ends (PettingZoo's env.agents); `complete` (None: the
 * simulated devices) is the real backend's complete(core, t) -> the latency measured for the
 * request arriving at t, which replaces the simulated one. */
typedef struct {
    PyObject_HEAD
    hss_vec_slot s;
    int ready, raw;
    PyObject *core, *empty, *empty_args, *agents, *complete;
    PyObject *obs_p, *obs_m;   /* the observations of the request observed now */
    PyObject *executed;        /* decision steps of the moves the last step ran or dropped (a list) */
    double move_delay;         /* the migration delay those moves added */
    Py_buffer req[4], acts;
} EpisodeObject;

static void Episode_dealloc(EpisodeObject *self)
{
    if (self->ready) {
        bind_release(self->req, 4);
        PyBuffer_Release(&self->acts);
    }
    hss_vec_slot_free(&self->s);
    Py_XDECREF(self->core);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->empty_args);
    Py_XDECREF(self->agents);
    Py_XDECREF(self->complete);
    Py_XDECREF(self->obs_p);
    Py_XDECREF(self->obs_m);
    Py_XDECREF(self->executed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Episode_init(EpisodeObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"core", "time_us", "op", "offset", "size", "end", "needs", "flags", "scan", "ref_us",
                             "penalty", "reward_n", "reward_x", "latency_reward", "obs", "actions", "empty",
                             "empty_args", "agents", "complete", NULL};
    PyObject *core, *cols[4], *obs, *acts, *empty, *empty_args, *agents, *complete = Py_None;
    long long end;
    int needs, flags, scan, reward_n, reward_x, latency_reward;
    double ref_us, penalty;
    if (self->ready)
        return bind_raise(PyExc_RuntimeError, "Episode is initialised once");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OOOOLpiiddiipO!OOO!O!|O", kwlist, &HSSType, &core, &cols[0],
                                     &cols[1], &cols[2], &cols[3], &end, &needs, &flags, &scan, &ref_us, &penalty,
                                     &reward_n, &reward_x, &latency_reward, &PyTuple_Type, &obs, &acts, &empty,
                                     &PyTuple_Type, &empty_args, &PyList_Type, &agents, &complete))
        return -1;
    HSSObject *c = (HSSObject *)core;
    if (!c->ready || !c->lat_held || !c->h.cur.active)
        return bind_raise(PyExc_ValueError, "Episode: the HSS has no episode begun (env_begin with latencies)");
    if (end < 1 || reward_n < 1 || reward_x < 1 || PyTuple_GET_SIZE(obs) != 2)
        return bind_raise(PyExc_ValueError, "Episode: need end, reward_n, reward_x >= 1 and obs = (placement, "
                          "migration)");
    Py_buffer b[4], a = {0};
    if (get_columns(cols, end, b, "Episode") < 0)
        return -1;
    if (get_buf(acts, 'q', 1, &a, "actions") < 0 || a.shape[0] < 2 * end) {
        bind_release(b, 4);
        if (a.obj)
            PyBuffer_Release(&a);
        return PyErr_Occurred() ? -1 : bind_raise(PyExc_ValueError, "Episode: actions needs 2 * end entries");
    }
    memcpy(self->req, b, sizeof b);
    self->acts = a;
    self->ready = 1;
    Py_INCREF(core), Py_INCREF(empty), Py_INCREF(empty_args), Py_INCREF(agents), Py_INCREF(complete);
    self->core = core, self->empty = empty, self->empty_args = empty_args, self->agents = agents;
    self->complete = complete;
    self->obs_p = PyTuple_GET_ITEM(obs, 0), self->obs_m = PyTuple_GET_ITEM(obs, 1);
    Py_INCREF(self->obs_p), Py_INCREF(self->obs_m);
    if (!(self->executed = PyList_New(0)))
        return -1;
    hss_vec_slot *s = &self->s;
    s->h = &c->h, s->e = &c->e;
    s->t = b[0].buf, s->op = b[1].buf, s->off = b[2].buf, s->size = b[3].buf;
    s->i = 0, s->end = end, s->needs = needs;
    s->flags = flags, s->scan = scan, s->latency_reward = latency_reward;
    s->ref_us = ref_us, s->penalty = penalty, s->reward_n = reward_n, s->reward_x = reward_x;
    hss_vec_slot_clear(s);
    return 0;
}

static PyObject *steps_list(const long long *steps, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t k = 0; l && k < n; k++) {
        PyObject *v = PyLong_FromLongLong(steps[k]);
        if (!v)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, (Py_ssize_t)k, v);
    }
    return l;
}

/* step(place, move) -> HSSParallelEnv.fast_step's tuple: (obs_p, obs_m, r_place, r_migr, latency,
 * evicted, credit, executed, move_delay_us, done, needs, candidate, device). */
static PyObject *Episode_step(EpisodeObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "step(place, move) takes 2 arguments (%zd given)", nargs);
    long place = PyLong_AsLong(args[0]), move = PyLong_AsLong(args[1]);
    if ((place == -1 || move == -1) && PyErr_Occurred())
        return NULL;
    hss_vec_slot *s = &self->s;
    if (!self->ready || s->i >= s->end)
        return PyErr_Format(PyExc_RuntimeError, "fast_step(): the episode has ended; call reset() for a new one");
    if (s->needs && (place < 0 || place >= s->h->ndev))
        return PyErr_Format(PyExc_ValueError, "placement must be a device in 0..%d, got %ld", s->h->ndev - 1, place);
    long long i = s->i;
    PyObject *po = PyObject_Call(self->empty, self->empty_args, NULL);
    PyObject *mo = po ? PyObject_Call(self->empty, self->empty_args, NULL) : NULL;
    if (!mo) {
        Py_XDECREF(po);
        return NULL;
    }
    Py_buffer b[2] = {{0}};
    int raw, rc;
    if (get_obs_pair((HSSObject *)self->core, po, mo, s->flags, b, &raw) < 0)
        goto fail;
    int64_t *acts = self->acts.buf;
    acts[2 * i] = place, acts[2 * i + 1] = move;
    hss_env_out o;
    rc = hss_slot_advance(s, raw, (int)place, (int)move, b[0].buf, b[1].buf, &o);
    double latency = o.latency, rp, rm;
    if (rc == HSS_OK && self->complete != Py_None) {  /* measured on the real devices */
        PyObject *r = PyObject_CallFunction(self->complete, "Od", self->core, s->t[i]);
        latency = r ? PyFloat_AsDouble(r) : -1.0;
        Py_XDECREF(r);
        if (PyErr_Occurred()) {
            bind_release(b, 2);
            goto fail;
        }
        if (s->e->lat && i < s->e->nlat)
            s->e->lat[i] = latency;
    }
    if (rc == HSS_OK)
        rc = hss_slot_rewards(s, &o, latency, &rp, &rm);
    int done = s->i >= s->end;
    if (rc == HSS_OK && done) {  /* the final observations: zeros */
        memset(b[0].buf, 0, (size_t)b[0].len);
        memset(b[1].buf, 0, (size_t)b[1].len);
    }
    bind_release(b, 2);
    if (rc != HSS_OK) {
        raise_rc(rc);
        goto fail;
    }
    if (done && PyList_SetSlice(self->agents, 0, PyList_GET_SIZE(self->agents), NULL) < 0)
        goto fail;
    PyObject *executed = steps_list(s->ran_step, s->ran_len);
    PyObject *credit = executed ? steps_list(s->credit, s->credited ? s->credit_len : 0) : NULL;
    if (!credit) {
        Py_XDECREF(executed);
        goto fail;
    }
    Py_INCREF(po), Py_INCREF(mo), Py_INCREF(executed);
    Py_SETREF(self->obs_p, po);
    Py_SETREF(self->obs_m, mo);
    Py_SETREF(self->executed, executed);
    self->move_delay = o.delay;
    long long cand = done ? -1 : s->e->cand;
    int dev = done ? -1 : s->e->cand_dev;
    return Py_BuildValue("(NNdddLNNdNNLi)", po, mo, rp, rm, latency, o.evicted, credit, executed, o.delay,
                         PyBool_FromLong(done), PyBool_FromLong(s->needs), cand, dev);
fail:
    Py_DECREF(po);
    Py_DECREF(mo);
    return NULL;
}

/* finish(): the episode was stepped to its end elsewhere (a VecEnv slot took it over). */
static PyObject *Episode_finish(EpisodeObject *self, PyObject *Py_UNUSED(ignored))
{
    self->s.i = self->s.end, self->s.needs = 0;
    Py_RETURN_NONE;
}

static PyObject *Episode_obs(EpisodeObject *self, void *Py_UNUSED(closure))
{
    return PyTuple_Pack(2, self->obs_p, self->obs_m);
}

static PyObject *Episode_executed(EpisodeObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self->executed);
    return self->executed;
}

BIND_GETTER(Episode_get_i, EpisodeObject, PyLong_FromLongLong(self->s.i))
BIND_GETTER(Episode_get_end, EpisodeObject, PyLong_FromLongLong(self->s.end))
BIND_GETTER(Episode_get_needs, EpisodeObject, PyBool_FromLong(self->s.needs))
BIND_GETTER(Episode_get_cand, EpisodeObject, PyLong_FromLongLong(self->s.i < self->s.end ? self->s.e->cand : -1))
BIND_GETTER(Episode_get_cand_dev, EpisodeObject, PyLong_FromLong(self->s.i < self->s.end ? self->s.e->cand_dev : -1))
BIND_GETTER(Episode_get_move_delay, EpisodeObject, PyFloat_FromDouble(self->move_delay))
BIND_GETTER(Episode_get_window_open, EpisodeObject, PyBool_FromLong(self->s.window_left || self->s.exe_len))

static PyMethodDef Episode_methods[] = {
    {"step", (PyCFunction)(void (*)(void))Episode_step, METH_FASTCALL,
     "step(place, move) -> (obs_p, obs_m, r_place, r_migr, latency, evicted, credit, executed, move_delay_us, done, "
     "needs, candidate, device)"},
    {"finish", (PyCFunction)Episode_finish, METH_NOARGS, "finish(): the episode was stepped to its end elsewhere"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Episode_getset[] = {
    {"i", (getter)Episode_get_i, NULL, "index of the request observed now", NULL},
    {"end", (getter)Episode_get_end, NULL, "requests in the episode", NULL},
    {"needs", (getter)Episode_get_needs, NULL, "whether the request observed now needs a placement", NULL},
    {"cand", (getter)Episode_get_cand, NULL, "the migration candidate (-1: none)", NULL},
    {"cand_dev", (getter)Episode_get_cand_dev, NULL, "the candidate's device (-1: none)", NULL},
    {"obs", (getter)Episode_obs, NULL, "the observations of the request observed now (placement, migration)", NULL},
    {"executed", (getter)Episode_executed, NULL, "decision steps of the moves the last step ran or dropped", NULL},
    {"move_delay", (getter)Episode_get_move_delay, NULL, "the migration delay (us) those moves added", NULL},
    {"window_open", (getter)Episode_get_window_open, NULL, "eq. 3 has moves counted or a window open", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EpisodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._core.Episode",
    .tp_basicsize = sizeof(EpisodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One HSSParallelEnv episode stepped in C (see source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Episode_init,
    .tp_dealloc = (destructor)Episode_dealloc,
    .tp_methods = Episode_methods,
    .tp_getset = Episode_getset,
};

/* ------------------------------------------------------------------ module */

/* feature_layout(n_devices, flags=0) -> ((name, bins), ...): the observation's features in order
 * (env.c's table), for `n_devices` devices and the feature flags of HSS.features. */
static PyObject *core_feature_layout(PyObject *Py_UNUSED(module), PyObject *args)
{
    int ndev, flags = 0;
    if (!PyArg_ParseTuple(args, "i|i", &ndev, &flags))
        return NULL;
    if (ndev < 1)
        return PyErr_Format(PyExc_ValueError, "feature_layout: need at least 1 device, got %d", ndev);
    int n = hss_feature_count(ndev, flags);
    hss_feature_desc *f = PyMem_Calloc((size_t)n, sizeof *f);
    if (!f)
        return PyErr_NoMemory();
    hss_feature_layout(ndev, flags, f);
    PyObject *out = PyTuple_New(n);
    for (int k = 0; out && k < n; k++) {
        PyObject *item = Py_BuildValue("(si)", f[k].name, f[k].bins);
        if (!item)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, k, item);
    }
    PyMem_Free(f);
    return out;
}

static PyMethodDef core_methods[] = {
    {"feature_layout", core_feature_layout, METH_VARARGS,
     "feature_layout(n_devices, flags=0) -> ((name, bins), ...): the observation's features in order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef coremodule = {
    PyModuleDef_HEAD_INIT, "_core", "Native HSS core and simulated device model.", -1, core_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = bind_module(&coremodule, (PyTypeObject *[]){&SimDevicesType, &HSSType, &VecEnvType, &EpisodeType, NULL});
    if (m && (PyModule_AddIntConstant(m, "PAGE_BYTES", 4096) < 0
              || PyModule_AddIntConstant(m, "PAGE_META_BYTES", (long)sizeof(hss_page)) < 0
              || PyModule_AddIntConstant(m, "MAX_REQUEST_PAGES", (long)HSS_MAX_REQ_PAGES) < 0
              || PyModule_AddIntConstant(m, "MAX_DEVICES", HSS_MAX_DEV) < 0
              || PyModule_AddIntConstant(m, "LOG_ENTRY_BYTES", (long)sizeof(hss_log_ent)) < 0
              || PyModule_AddIntConstant(m, "FEAT_SIBYL", HSS_FEAT_SIBYL) < 0
              || PyModule_AddIntConstant(m, "FEAT_FITS", HSS_FEAT_FITS) < 0
              || PyModule_AddIntConstant(m, "FEAT_BINARY", HSS_FEAT_BINARY) < 0))
        Py_CLEAR(m);
    return m;
}
