/* The glue hss-gym's hand-written CPython bindings share (backends/core, backends/lqoco, backends/flash,
 * backends/uring, agents/_c51*, hss_gym/workloads/_fastparse): module creation, raising an error
 * from a function that returns int, argument counts of METH_FASTCALL methods, getters, buffers
 * and lists of floats. Header-only (static inline), plain C99 against the CPython API; include it
 * in place of <Python.h>, before any other header. What a binding raises stays in the binding:
 * these helpers take its messages as they are. */
#ifndef HSS_BINDING_H
#define HSS_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The module of `def` with each type of `types` (NULL-terminated) readied and added under the last
 * part of its tp_name; NULL with an exception set on failure. */
static inline PyObject *bind_module(PyModuleDef *def, PyTypeObject *const *types)
{
    PyObject *m = PyModule_Create(def);
    for (; m && *types; types++)
        if (PyModule_AddType(m, *types) < 0)
            Py_CLEAR(m);
    return m;
}

/* Raise exc with PyErr_Format's message and return -1: the error exit of a function returning int
 * in one statement (one returning an object returns PyErr_Format's NULL itself). */
static inline int bind_raise(PyObject *exc, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    PyErr_FormatV(exc, format, ap);
    va_end(ap);
    return -1;
}

/* 0 if a METH_FASTCALL method got lo to hi arguments, else -1 with TypeError(usage). */
static inline int bind_nargs(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char *usage)
{
    if (nargs >= lo && nargs <= hi)
        return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

/* A read-only attribute's getter `name` (for PyGetSetDef) of a `type` object: `value`, an
 * expression of `self` that makes the new reference returned. */
#define BIND_GETTER(name, type, value)                                 \
    static PyObject *name(type *self, void *Py_UNUSED(closure))        \
    {                                                                  \
        return value;                                                  \
    }

/* PyObject_GetBuffer of a C-contiguous buffer with its struct format, writable if asked: 0 or -1. */
static inline int bind_get_buffer(PyObject *o, Py_buffer *b, int writable)
{
    return PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0));
}

/* A buffer's struct format without its byte-order prefix ('<', '=' or '@'); "B" if it has none. */
static inline const char *bind_format(const Py_buffer *b)
{
    const char *f = b->format ? b->format : "B";
    return (*f == '<' || *f == '=' || *f == '@') ? f + 1 : f;
}

/* Release those of the n buffers at b that hold an object: the one exit of a function holding
 * several. A Py_buffer zeroed beforehand holds none until PyObject_GetBuffer succeeds (an exporter
 * sets obj only then), and none again once released. */
static inline void bind_release(Py_buffer *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
}

/* A new list of the n doubles at v; NULL with an exception set on failure. */
static inline PyObject *bind_float_list(const double *v, Py_ssize_t n)
{
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *x = PyFloat_FromDouble(v[i]);
        if (!x)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, x);
    }
    return out;
}

#endif
