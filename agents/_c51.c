/* Inference network of the C51 agents (Harmonia, Sibyl, SAPM), in C.
 *
 * The agents train in PyTorch and copy the weights here every `sync_every` requests (the paper's
 * separate inference network). One decision is a forward pass of a small MLP with swish hidden
 * layers, a softmax over the atoms of each action, the expected value Q(a) = sum_i p_i z_i and an
 * argmax: ~1,000 multiply-adds for Harmonia's 7-10-(2x51) network, far below a microsecond, where
 * a PyTorch forward call costs tens of microseconds of framework overhead.
 *
 *   net = C51Net(sizes=(7, 10), n_actions=2, n_atoms=51, v_min=0.0, v_max=10.0)
 *   net.set_weights([(W0, b0), (W1, b1)])   # float32, W as (out, in) like torch.nn.Linear
 *   a = net.act(obs)                         # obs: float32 buffer of sizes[0] values
 *   q = net.q(obs)                           # tuple of n_actions expected values
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <string.h>

#define C51_MAX_LAYERS 8
#define C51_MAX_WIDTH 1024

typedef struct {
    PyObject_HEAD
    int nlayers;                   /* linear layers: hidden layers + the output layer */
    int in[C51_MAX_LAYERS + 1];    /* in[l] inputs of layer l; in[nlayers] = outputs */
    int n_actions, n_atoms;
    float *w[C51_MAX_LAYERS];      /* row-major (out, in) */
    float *b[C51_MAX_LAYERS];
    float *z;                      /* atom support */
    int ready;
} C51Net;

static void C51Net_dealloc(C51Net *self)
{
    for (int l = 0; l < self->nlayers; l++) {
        PyMem_Free(self->w[l]);
        PyMem_Free(self->b[l]);
    }
    PyMem_Free(self->z);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int C51Net_init(C51Net *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sizes", "n_actions", "n_atoms", "v_min", "v_max", NULL};
    PyObject *sizes;
    int n_actions, n_atoms;
    double v_min, v_max;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oiidd", kwlist, &sizes, &n_actions, &n_atoms, &v_min, &v_max))
        return -1;
    PyObject *seq = PySequence_Fast(sizes, "sizes must be a sequence of layer widths");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > C51_MAX_LAYERS - 1) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "sizes needs 1 to %d entries (input and hidden widths)", C51_MAX_LAYERS - 1);
        return -1;
    }
    if (n_actions < 1 || n_atoms < 2 || (long)n_actions * n_atoms > C51_MAX_WIDTH || !(v_max > v_min)) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "need n_actions >= 1, n_atoms >= 2, n_actions * n_atoms <= %d "
                     "and v_max > v_min", C51_MAX_WIDTH);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v < 1 || v > C51_MAX_WIDTH) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "layer width %ld out of range 1..%d", v, C51_MAX_WIDTH);
            return -1;
        }
        self->in[i] = (int)v;
    }
    Py_DECREF(seq);
    self->nlayers = (int)n;
    self->in[n] = n_actions * n_atoms;
    self->n_actions = n_actions;
    self->n_atoms = n_atoms;
    for (int l = 0; l < self->nlayers; l++) {
        self->w[l] = PyMem_Calloc((size_t)self->in[l] * self->in[l + 1], sizeof(float));
        self->b[l] = PyMem_Calloc((size_t)self->in[l + 1], sizeof(float));
        if (!self->w[l] || !self->b[l]) {
            PyErr_NoMemory();
            return -1;
        }
    }
    self->z = PyMem_Calloc((size_t)n_atoms, sizeof(float));
    if (!self->z) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n_atoms; i++)
        self->z[i] = (float)(v_min + (v_max - v_min) * i / (n_atoms - 1));
    self->ready = 1;
    return 0;
}

/* Copy `count` float32 values from a buffer object, checking its size. */
static int copy_floats(PyObject *obj, float *dst, Py_ssize_t count, const char *what, int layer)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    int ok = view.itemsize == 4 && view.format && strcmp(view.format, "f") == 0 && view.len == count * 4;
    if (ok)
        memcpy(dst, view.buf, (size_t)view.len);
    else
        PyErr_Format(PyExc_ValueError, "layer %d %s: expected %zd contiguous float32 values, got %zd bytes "
                     "of format '%s'", layer, what, count, view.len, view.format ? view.format : "?");
    PyBuffer_Release(&view);
    return ok ? 0 : -1;
}

static PyObject *C51Net_set_weights(C51Net *self, PyObject *layers)
{
    PyObject *seq = PySequence_Fast(layers, "set_weights needs a sequence of (weight, bias) pairs");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != self->nlayers) {
        PyErr_Format(PyExc_ValueError, "set_weights: expected %d (weight, bias) pairs, got %zd",
                     self->nlayers, PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    for (int l = 0; l < self->nlayers; l++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, l);
        PyObject *w, *b;
        if (!PyArg_ParseTuple(pair, "OO", &w, &b)
            || copy_floats(w, self->w[l], (Py_ssize_t)self->in[l] * self->in[l + 1], "weight", l) < 0
            || copy_floats(b, self->b[l], self->in[l + 1], "bias", l) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* Forward pass; q gets n_actions expected values. */
static int forward(const C51Net *self, PyObject *obs, float *q)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obs, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view.itemsize != 4 || !view.format || strcmp(view.format, "f") != 0 || view.len != self->in[0] * 4) {
        PyErr_Format(PyExc_ValueError, "observation: expected %d float32 values, got %zd bytes of format '%s'",
                     self->in[0], view.len, view.format ? view.format : "?");
        PyBuffer_Release(&view);
        return -1;
    }
    float a[C51_MAX_WIDTH], h[C51_MAX_WIDTH];
    memcpy(a, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    for (int l = 0; l < self->nlayers; l++) {
        int ni = self->in[l], no = self->in[l + 1];
        const float *w = self->w[l];
        for (int o = 0; o < no; o++) {
            float s = self->b[l][o];
            const float *row = w + (size_t)o * ni;
            for (int i = 0; i < ni; i++)
                s += row[i] * a[i];
            h[o] = s;
        }
        if (l + 1 < self->nlayers)
            for (int o = 0; o < no; o++)
                a[o] = h[o] / (1.0f + expf(-h[o]));  /* swish */
    }
    for (int act = 0; act < self->n_actions; act++) {
        const float *lg = h + (size_t)act * self->n_atoms;
        float m = lg[0];
        for (int i = 1; i < self->n_atoms; i++)
            if (lg[i] > m)
                m = lg[i];
        float den = 0.0f, num = 0.0f;
        for (int i = 0; i < self->n_atoms; i++) {
            float e = expf(lg[i] - m);
            den += e;
            num += e * self->z[i];
        }
        q[act] = num / den;
    }
    return 0;
}

static PyObject *C51Net_act(C51Net *self, PyObject *obs)
{
    float q[C51_MAX_WIDTH];
    if (forward(self, obs, q) < 0)
        return NULL;
    int best = 0;
    for (int a = 1; a < self->n_actions; a++)
        if (q[a] > q[best])
            best = a;
    return PyLong_FromLong(best);
}

static PyObject *C51Net_q(C51Net *self, PyObject *obs)
{
    float q[C51_MAX_WIDTH];
    if (forward(self, obs, q) < 0)
        return NULL;
    PyObject *t = PyTuple_New(self->n_actions);
    if (!t)
        return NULL;
    for (int a = 0; a < self->n_actions; a++)
        PyTuple_SET_ITEM(t, a, PyFloat_FromDouble(q[a]));
    return t;
}

static PyMethodDef C51Net_methods[] = {
    {"set_weights", (PyCFunction)C51Net_set_weights, METH_O,
     "set_weights([(W, b), ...]): float32 weights (out, in) and biases of every linear layer"},
    {"act", (PyCFunction)C51Net_act, METH_O, "act(obs) -> the action with the highest expected value"},
    {"q", (PyCFunction)C51Net_q, METH_O, "q(obs) -> expected value of each action"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject C51NetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.agents._c51.C51Net",
    .tp_basicsize = sizeof(C51Net),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "C51 inference network: swish MLP, softmax over atoms, argmax of expected values.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)C51Net_init,
    .tp_dealloc = (destructor)C51Net_dealloc,
    .tp_methods = C51Net_methods,
};

static struct PyModuleDef c51module = {
    PyModuleDef_HEAD_INIT, "_c51", "C51 inference network of the reference agents.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__c51(void)
{
    if (PyType_Ready(&C51NetType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&c51module);
    if (!m)
        return NULL;
    Py_INCREF(&C51NetType);
    if (PyModule_AddObject(m, "C51Net", (PyObject *)&C51NetType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
