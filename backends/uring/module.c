/* CPython bindings of the real-device I/O engine (module hss_gym.backends._uring).
 *
 *   Engine(paths, sizes, engines, flags, queue_depth, verify, timed)   see engine.h
 *   probe() -> None if io_uring is usable here, else the reason (str)
 *   stamp_page(buf, page, version), check_page(buf, page, version) -> 0 ok, 1 lost, 2 corrupt
 * The Python wrapper (hss_gym/backends/uring/__init__.py) applies the safety policy, sizes the
 * devices from the HSS and feeds the core's I/O log; this file converts arguments and errors.
 * The GIL is released while I/O runs; one engine must not be used by two threads at once.
 */
#include "binding.h"

#include <errno.h>
#include <string.h>

#include "engine.h"

typedef struct {
    PyObject_HEAD
    ur_engine e;
    int open, busy;
    Py_buffer out;             /* latency output, held between set_output() calls */
    int have_out;
} EngineObject;

/* EINVAL (a bad argument) becomes ValueError, anything else OSError(errno, message). */
static PyObject *raise_engine(EngineObject *self)
{
    if (self->e.err_no == EINVAL) {
        PyErr_SetString(PyExc_ValueError, self->e.err);
        return NULL;
    }
    PyObject *args = Py_BuildValue("(is)", self->e.err_no ? self->e.err_no : 5, self->e.err);
    if (args) {
        PyErr_SetObject(PyExc_OSError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int check_open(EngineObject *self)
{
    if (!self->open)
        return bind_raise(PyExc_ValueError, "I/O on a closed engine");
    if (self->busy)
        return bind_raise(PyExc_RuntimeError, "engine in use by another thread");
    return 0;
}

static void release_out(EngineObject *self)
{
    if (self->have_out) {
        PyBuffer_Release(&self->out);
        self->have_out = 0;
    }
    if (self->open)
        ur_set_output(&self->e, NULL, 0);
}

static void do_close(EngineObject *self, int remove)
{
    release_out(self);
    if (self->open) {
        Py_BEGIN_ALLOW_THREADS
        ur_close(&self->e, remove);
        Py_END_ALLOW_THREADS
        self->open = 0;
    }
}

static void Engine_dealloc(EngineObject *self)
{
    do_close(self, 1);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Engine_init(EngineObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"paths", "sizes", "engines", "flags", "queue_depth", "verify", "timed", NULL};
    PyObject *opaths, *osizes, *oeng;
    int flags = 0, qd = 32, verify = 0, timed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|iipp", kwlist, &opaths, &osizes, &oeng, &flags, &qd,
                                     &verify, &timed))
        return -1;
    do_close(self, 1);
    PyObject *sp = PySequence_Fast(opaths, "paths must be a sequence of str");
    PyObject *ss = sp ? PySequence_Fast(osizes, "sizes must be a sequence of int") : NULL;
    PyObject *se = ss ? PySequence_Fast(oeng, "engines must be a sequence of int") : NULL;
    PyObject *bytes[UR_MAX_DEV] = {NULL};
    int rc = -1;
    if (!se)
        goto out;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sp);
    if (n < 1 || n > UR_MAX_DEV || PySequence_Fast_GET_SIZE(ss) != n || PySequence_Fast_GET_SIZE(se) != n) {
        PyErr_Format(PyExc_ValueError, "need 1 to %d devices with one size and engine each", UR_MAX_DEV);
        goto out;
    }
    const char *paths[UR_MAX_DEV];
    uint64_t sizes[UR_MAX_DEV];
    int engines[UR_MAX_DEV];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(sp, i), &bytes[i]))
            goto out;
        paths[i] = PyBytes_AS_STRING(bytes[i]);
        sizes[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(ss, i));
        engines[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(se, i));
        if (PyErr_Occurred())
            goto out;
    }
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = ur_open(&self->e, (int)n, paths, sizes, engines, flags, qd, verify, timed);
    Py_END_ALLOW_THREADS
    if (r < 0) {
        raise_engine(self);
        goto out;
    }
    self->open = 1;
    rc = 0;
out:
    for (int i = 0; i < UR_MAX_DEV; i++)
        Py_XDECREF(bytes[i]);
    Py_XDECREF(sp);
    Py_XDECREF(ss);
    Py_XDECREF(se);
    return rc;
}

static PyObject *Engine_close(EngineObject *self, PyObject *args)
{
    int remove = 1;
    if (!PyArg_ParseTuple(args, "|p", &remove))
        return NULL;
    if (self->busy)
        return check_open(self), NULL;
    do_close(self, remove);
    Py_RETURN_NONE;
}

static PyObject *Engine_unlink_created(EngineObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    return PyLong_FromLong(ur_unlink_created(&self->e));
}

static PyObject *Engine_set_output(EngineObject *self, PyObject *arg)
{
    if (check_open(self) < 0)
        return NULL;
    release_out(self);
    if (arg == Py_None)
        Py_RETURN_NONE;
    if (bind_get_buffer(arg, &self->out, 1) < 0)
        return NULL;
    if (strcmp(bind_format(&self->out), "d") != 0 || self->out.ndim != 1) {
        PyBuffer_Release(&self->out);
        return PyErr_Format(PyExc_TypeError, "output must be a 1-D float64 array");
    }
    self->have_out = 1;
    ur_set_output(&self->e, self->out.buf, (size_t)self->out.shape[0]);
    Py_RETURN_NONE;
}

/* execute(log, arrivals, wait=True) -> (requests_done_total, verify_errors_total) */
static PyObject *Engine_execute(EngineObject *self, PyObject *args)
{
    Py_buffer lb, ab;
    int wait = 1;
    if (check_open(self) < 0 || !PyArg_ParseTuple(args, "y*y*|p", &lb, &ab, &wait))
        return NULL;
    if (lb.len % (Py_ssize_t)sizeof(hss_log_ent) || ab.len % (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&lb);
        PyBuffer_Release(&ab);
        return PyErr_Format(PyExc_ValueError, "log must hold whole records and arrivals float64 values");
    }
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = ur_exec(&self->e, lb.buf, (size_t)lb.len / sizeof(hss_log_ent), ab.buf,
                (size_t)ab.len / sizeof(double), wait);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&lb);
    PyBuffer_Release(&ab);
    if (r < 0)
        return raise_engine(self);
    return Py_BuildValue("(KK)", (unsigned long long)self->e.next_req,
                         (unsigned long long)self->e.st.verify_errors);
}

static PyObject *Engine_flush(EngineObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = ur_flush(&self->e);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (r < 0)
        return raise_engine(self);
    Py_RETURN_NONE;
}

static PyObject *Engine_reset(EngineObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    release_out(self);
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = ur_reset(&self->e);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (r < 0)
        return raise_engine(self);
    Py_RETURN_NONE;
}

/* bench(device, write, bs, qd, n, seq=False, seed=0, latencies=None) -> elapsed_ns */
static PyObject *Engine_bench(EngineObject *self, PyObject *args)
{
    int d, write, qd, seq = 0;
    unsigned int bs;
    unsigned long long n, seed = 0;
    PyObject *olat = Py_None;
    if (check_open(self) < 0 || !PyArg_ParseTuple(args, "ipIiK|pKO", &d, &write, &bs, &qd, &n, &seq, &seed, &olat))
        return NULL;
    Py_buffer lb;
    int64_t *lat = NULL;
    if (olat != Py_None) {
        if (PyObject_GetBuffer(olat, &lb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
            return NULL;
        if (lb.itemsize != 8 || (unsigned long long)lb.len < n * 8) {
            PyBuffer_Release(&lb);
            return PyErr_Format(PyExc_ValueError, "latencies must be an int64 array of at least n entries");
        }
        lat = lb.buf;
    }
    int64_t elapsed = 0;
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = ur_bench(&self->e, d, write, bs, qd, n, seq, seed, &elapsed, lat);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (lat)
        PyBuffer_Release(&lb);
    if (r < 0)
        return raise_engine(self);
    return PyLong_FromLongLong(elapsed);
}

/* verify(pages uint64, devs uint8, slots uint64) -> (lost, corrupt) */
static PyObject *Engine_verify(EngineObject *self, PyObject *args)
{
    Py_buffer pb, db, sb;
    if (check_open(self) < 0 || !PyArg_ParseTuple(args, "y*y*y*", &pb, &db, &sb))
        return NULL;
    size_t n = (size_t)pb.len / 8;
    PyObject *res = NULL;
    if (pb.len % 8 || (size_t)db.len != n || (size_t)sb.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "pages (uint64), devs (uint8) and slots (uint64) must have equal lengths");
        goto out;
    }
    uint64_t lost = 0, corrupt = 0;
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = ur_verify(&self->e, n, pb.buf, db.buf, sb.buf, &lost, &corrupt);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (r < 0)
        raise_engine(self);
    else
        res = Py_BuildValue("(KK)", (unsigned long long)lost, (unsigned long long)corrupt);
out:
    PyBuffer_Release(&pb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&sb);
    return res;
}

static PyObject *Engine_written_pages(EngineObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    size_t n = ur_written_pages(&self->e, NULL, 0);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (b)
        ur_written_pages(&self->e, (uint64_t *)(void *)PyBytes_AS_STRING(b), n);
    return b;
}

static PyObject *Engine_version(EngineObject *self, PyObject *args)
{
    unsigned long long page;
    if (check_open(self) < 0 || !PyArg_ParseTuple(args, "K", &page))
        return NULL;
    return PyLong_FromUnsignedLong(ur_version(&self->e, page));
}

static PyObject *Engine_stats(EngineObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    ur_engine *e = &self->e;
    PyObject *devs = PyList_New(e->ndev);
    if (!devs)
        return NULL;
    for (int i = 0; i < e->ndev; i++) {
        const ur_dev *d = &e->dev[i];
        PyObject *o = Py_BuildValue(
            "{s:s,s:O,s:O,s:K,s:s,s:O,s:O,s:I,s:I,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
            "path", d->path, "created", d->created ? Py_True : Py_False,
            "unlinked", d->unlinked ? Py_True : Py_False, "size", (unsigned long long)d->size,
            "engine", d->engine == UR_ENGINE_PSYNC ? "psync" : "uring", "direct", d->direct ? Py_True : Py_False,
            "block_device", d->is_blk ? Py_True : Py_False, "dio_mem_align", d->mem_align,
            "dio_offset_align", d->off_align, "note", d->note,
            "reads", (unsigned long long)d->reads, "writes", (unsigned long long)d->writes,
            "bytes_read", (unsigned long long)d->bytes_read, "bytes_written", (unsigned long long)d->bytes_written,
            "copy_reads", (unsigned long long)d->copy_reads, "copy_writes", (unsigned long long)d->copy_writes,
            "retries", (unsigned long long)d->retries, "short_ios", (unsigned long long)d->short_ios);
        if (!o) {
            Py_DECREF(devs);
            return NULL;
        }
        PyList_SET_ITEM(devs, i, o);
    }
    const ur_stats *s = &e->st;
    return Py_BuildValue(
        "{s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d,s:K,s:K,s:K,s:K,s:O,s:O,s:s,s:I,s:i}",
        "devices", devs, "requests", (unsigned long long)s->requests, "host_ios", (unsigned long long)s->host_ops,
        "copies_background", (unsigned long long)s->copies_bg, "copies_forced", (unsigned long long)s->copies_forced,
        "migrated_pages", (unsigned long long)s->copy_pages, "pending_copies_max", (unsigned long long)s->pend_max,
        "host_wait_us", (double)s->host_wait_ns / 1000.0, "dependency_wait_us", (double)s->conflict_wait_ns / 1000.0,
        "verify_checked", (unsigned long long)s->verify_checked, "verify_errors", (unsigned long long)s->verify_errors,
        "pending_copies", (unsigned long long)e->pend_len, "io_uring_enter_calls", (unsigned long long)s->enter_calls,
        "registered_buffers", e->ring.fixed_bufs ? Py_True : Py_False,
        "registered_files", e->ring.fixed_files ? Py_True : Py_False, "verify_message", e->verify_msg,
        "io_slots", e->nops, "queue_depth", e->qd);
}

BIND_GETTER(Engine_closed, EngineObject, PyBool_FromLong(!self->open))

static PyMethodDef Engine_methods[] = {
    {"close", (PyCFunction)Engine_close, METH_VARARGS, "close(remove_created=True): flush, close files"},
    {"unlink_created", (PyCFunction)Engine_unlink_created, METH_NOARGS,
     "unlink_created() -> files still linked: unlink the created files, kept open (see engine.h)"},
    {"set_output", (PyCFunction)Engine_set_output, METH_O, "set_output(float64 array or None): request latencies (us)"},
    {"execute", (PyCFunction)Engine_execute, METH_VARARGS,
     "execute(log, arrivals, wait=True) -> (requests issued, verify errors): replay HSS log records"},
    {"flush", (PyCFunction)Engine_flush, METH_NOARGS, "wait for all requests and run every pending copy"},
    {"reset", (PyCFunction)Engine_reset, METH_NOARGS, "flush, then forget versions, copies and counters"},
    {"bench", (PyCFunction)Engine_bench, METH_VARARGS,
     "bench(device, write, bs, qd, n, seq=False, seed=0, latencies=None) -> elapsed_ns"},
    {"verify", (PyCFunction)Engine_verify, METH_VARARGS, "verify(pages, devs, slots) -> (lost, corrupt)"},
    {"written_pages", (PyCFunction)Engine_written_pages, METH_NOARGS, "bytes of uint64 pages written in verify mode"},
    {"version", (PyCFunction)Engine_version, METH_VARARGS, "version(page) -> latest version (0: never written)"},
    {"stats", (PyCFunction)Engine_stats, METH_NOARGS, "engine and per-device counters"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Engine_getset[] = {
    {"closed", (getter)Engine_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.backends._uring.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Real-device I/O engine (io_uring or psync) replaying the HSS core's I/O log.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
    .tp_getset = Engine_getset,
};

static PyObject *mod_probe(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    char msg[512];
    if (ur_probe(msg, sizeof msg) == 0)
        Py_RETURN_NONE;
    return PyUnicode_FromString(msg);
}

static int page_arg(PyObject *args, Py_buffer *b, unsigned long long *page, unsigned int *ver, int writable)
{
    if (!PyArg_ParseTuple(args, writable ? "w*KI" : "y*KI", b, page, ver))
        return -1;
    if (b->len < (Py_ssize_t)UR_PAGE) {
        PyBuffer_Release(b);
        return bind_raise(PyExc_ValueError, "buffer must hold 4096 bytes");
    }
    return 0;
}

static PyObject *mod_stamp_page(PyObject *Py_UNUSED(m), PyObject *args)
{
    Py_buffer b;
    unsigned long long page;
    unsigned int ver;
    if (page_arg(args, &b, &page, &ver, 1) < 0)
        return NULL;
    char tmp[UR_PAGE] __attribute__((aligned(8)));
    ur_stamp_page(tmp, page, ver);
    memcpy(b.buf, tmp, UR_PAGE);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyObject *mod_check_page(PyObject *Py_UNUSED(m), PyObject *args)
{
    Py_buffer b;
    unsigned long long page;
    unsigned int ver, found;
    if (page_arg(args, &b, &page, &ver, 0) < 0)
        return NULL;
    char tmp[UR_PAGE] __attribute__((aligned(8)));
    memcpy(tmp, b.buf, UR_PAGE);
    PyBuffer_Release(&b);
    return PyLong_FromLong(ur_check_page(tmp, page, ver, &found));
}

static PyMethodDef mod_methods[] = {
    {"probe", mod_probe, METH_NOARGS, "probe() -> None if io_uring works here, else why not"},
    {"stamp_page", mod_stamp_page, METH_VARARGS, "stamp_page(buf, page, version): write a verify stamp"},
    {"check_page", mod_check_page, METH_VARARGS, "check_page(buf, page, version) -> 0 ok, 1 lost, 2 corrupt"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef uringmodule = {
    PyModuleDef_HEAD_INIT, "_uring", "Real-device I/O engine of hss-gym (io_uring, raw syscalls).", -1,
    mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__uring(void)
{
    PyObject *m = bind_module(&uringmodule, (PyTypeObject *[]){&EngineType, NULL});
    if (m && (PyModule_AddIntConstant(m, "O_CREATE", UR_O_CREATE) < 0
              || PyModule_AddIntConstant(m, "O_OVERWRITE", UR_O_OVERWRITE) < 0
              || PyModule_AddIntConstant(m, "O_ALLOW_BLOCK", UR_O_ALLOW_BLOCK) < 0
              || PyModule_AddIntConstant(m, "O_NO_DIRECT", UR_O_NO_DIRECT) < 0
              || PyModule_AddIntConstant(m, "O_REQUIRE_DIRECT", UR_O_REQUIRE_DIRECT) < 0
              || PyModule_AddIntConstant(m, "ENGINE_URING", UR_ENGINE_URING) < 0
              || PyModule_AddIntConstant(m, "ENGINE_PSYNC", UR_ENGINE_PSYNC) < 0
              || PyModule_AddIntConstant(m, "LOG_ENTRY_BYTES", (long)sizeof(hss_log_ent)) < 0
              || PyModule_AddIntConstant(m, "MAX_QUEUE_DEPTH", UR_MAX_QD) < 0))
        Py_CLEAR(m);
    return m;
}
