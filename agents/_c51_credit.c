/* The _c51 extension's PageCredit type: the Python face of page_credit.c (see agents/credit.py). */
#include "_c51.h"

#include <string.h>

/* PageCredit: the per-page credit of agents/credit.py (its Python class derives from this type)
 * on the table of page_credit.c; an ended transition goes straight into the trainer's replay
 * buffer, and every `train_every` transitions (once the buffer holds a batch) `queue_step()` is
 * called, as C51Agent.remember does.
 *
 *   pc = PageCredit(trainer, gamma, horizon, idle_horizon, train_every, batch_size, queue_step, expire_every)
 *   pc.decision(page, obs, action, reward, step[, discount, tag]); pc.access(page, reward)
 *   pc.end(page); pc.expire(step); pc.charge(page, step, cost); pc.touch(first, last, reward, baselines)
 *
 * Its object (PageCreditObject) is in _c51.h: MigrationCredit (_c51_migration.c) extends it.
 */

/* The table's emit callback: store an ended transition, and queue a gradient step when due. */
static int credit_emit(void *ctx, const float *obs, int action, double ret, const float *next, double disc)
{
    PageCreditObject *self = ctx;
    C51Trainer *tr = self->trainer;
    if (c51_check_discount(tr, disc) < 0)
        return -1;
    long long n = c51_trainer_store(tr, obs, action, ret, next, disc);
    if (n % self->train_every == 0 && tr->size >= self->batch) {
        PyObject *r = PyObject_CallNoArgs(self->queue_step);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static void PageCredit_dealloc(PageCreditObject *self)
{
    if (self->ready)
        pc_free(&self->c);
    Py_XDECREF(self->trainer);
    Py_XDECREF(self->queue_step);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int PageCredit_init(PageCreditObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"trainer", "gamma", "horizon", "idle_horizon", "train_every", "batch_size",
                             "queue_step", "expire_every", NULL};
    PyObject *trainer, *queue_step;
    double gamma;
    long long horizon, idle, every;
    int train_every, batch;
    if (self->ready)
        return bind_raise(PyExc_RuntimeError, "PageCredit is already initialised");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!dLLiiOL", kwlist, &C51TrainerType, &trainer, &gamma, &horizon,
                                     &idle, &train_every, &batch, &queue_step, &every))
        return -1;
    C51Trainer *tr = (C51Trainer *)trainer;
    if (!tr->ready || horizon < 1 || idle > horizon || train_every < 1 || batch < 1 || every < 1
        || !PyCallable_Check(queue_step))
        return bind_raise(PyExc_ValueError, "PageCredit: need an initialised trainer, horizon >= 1, idle_horizon "
                          "<= horizon (< 0: none), train_every, batch_size and expire_every >= 1, "
                          "a callable queue_step");
    if (pc_init(&self->c, tr->t.shape.in[0], gamma, horizon, idle < 0 ? -1 : idle, every, credit_emit, self) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->ready = 1;
    Py_INCREF(trainer);
    self->trainer = tr;
    Py_INCREF(queue_step);
    self->queue_step = queue_step;
    self->train_every = train_every;
    self->batch = batch;
    return 0;
}

int credit_ready(PageCreditObject *self)
{
    return self->ready ? 0 : bind_raise(PyExc_RuntimeError, "PageCredit is not initialised");
}

static PyObject *PageCredit_decision(PageCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 5, 7, "decision(page, obs, action, reward, step[, discount, tag])") < 0
        || credit_ready(self) < 0)
        return NULL;
    int64_t page = c51_as_page(args[0]);
    long a = PyLong_AsLong(args[2]);
    double r = PyFloat_AsDouble(args[3]);
    long long step = PyLong_AsLongLong(args[4]);
    double disc = nargs > 5 ? PyFloat_AsDouble(args[5]) : self->c.gamma;
    long tag = nargs > 6 ? PyLong_AsLong(args[6]) : -1;
    if (PyErr_Occurred())
        return NULL;
    if (a < 0 || a >= self->trainer->t.shape.n_actions)
        return PyErr_Format(PyExc_ValueError, "decision: action %ld out of range 0..%d", a,
                            self->trainer->t.shape.n_actions - 1);
    float obs[C51_MAX_WIDTH];
    if (c51_read_floats(args[1], obs, self->c.nin, "obs") < 0)
        return NULL;
    if (pc_decision(&self->c, page, obs, (int)a, r, step, disc, (int)tag) < 0)
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *PageCredit_access(PageCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 2, 2, "access(page, reward)") < 0 || credit_ready(self) < 0)
        return NULL;
    int64_t page = c51_as_page(args[0]);
    double r = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred())
        return NULL;
    pc_access(&self->c, page, r);
    Py_RETURN_NONE;
}

static PyObject *PageCredit_end(PageCreditObject *self, PyObject *arg)
{
    if (credit_ready(self) < 0)
        return NULL;
    int64_t page = c51_as_page(arg);
    if (PyErr_Occurred() || pc_end(&self->c, page) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *PageCredit_expire(PageCreditObject *self, PyObject *arg)
{
    if (credit_ready(self) < 0)
        return NULL;
    long long step = PyLong_AsLongLong(arg);
    if (PyErr_Occurred() || pc_expire(&self->c, step) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *PageCredit_charge(PageCreditObject *self, PyObject *args)
{
    long long page, step;
    double cost;
    if (credit_ready(self) < 0 || !PyArg_ParseTuple(args, "LLd", &page, &step, &cost))
        return NULL;
    int k = pc_find(&self->c, page);
    if (k >= 0 && self->c.e[k].step == step)
        self->c.e[k].ret -= cost;
    Py_RETURN_NONE;
}

int credit_touch(PageCreditObject *self, int64_t first, int64_t last, int has_reward, double r,
                 const double *baselines, Py_ssize_t nb)
{
    for (int64_t p = first; p <= last && self->c.count; p++) {
        int k = pc_find(&self->c, p);
        if (k < 0)
            continue;
        if (!has_reward) {
            if (pc_end(&self->c, p) < 0)
                return -1;
            continue;
        }
        int tag = self->c.e[k].tag;
        if (tag < 0 || tag >= nb)
            return bind_raise(PyExc_IndexError, "touch: page %lld has tag %d, outside the %zd baselines", (long long)p,
                              tag, nb);
        double b = baselines[tag];
        if (0.0 > b)  /* max(b, 0.0) */
            b = 0.0;
        pc_access(&self->c, p, r - b);
    }
    return 0;
}

static PyObject *PageCredit_touch(PageCreditObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (bind_nargs(nargs, 4, 4, "touch(first_page, last_page, reward, baselines)") < 0 || credit_ready(self) < 0)
        return NULL;
    int64_t first = c51_as_page(args[0]), last = c51_as_page(args[1]);
    double r = args[2] == Py_None ? 0.0 : PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyList_Check(args[3]) || PyList_GET_SIZE(args[3]) > PC_MAX_TAGS)
        return PyErr_Format(PyExc_TypeError, "touch: baselines must be a list of at most %d floats", PC_MAX_TAGS);
    double b[PC_MAX_TAGS];
    Py_ssize_t nb = PyList_GET_SIZE(args[3]);
    for (Py_ssize_t i = 0; i < nb; i++)
        if ((b[i] = PyFloat_AsDouble(PyList_GET_ITEM(args[3], i))) == -1.0 && PyErr_Occurred())
            return NULL;
    if (credit_touch(self, first, last, args[2] != Py_None, r, b, nb) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *PageCredit_get(PageCreditObject *self, PyObject *arg)
{
    if (credit_ready(self) < 0)
        return NULL;
    int64_t page = c51_as_page(arg);
    if (PyErr_Occurred())
        return NULL;
    int k = pc_find(&self->c, page);
    if (k < 0)
        Py_RETURN_NONE;
    const pc_entry *t = &self->c.e[k];
    return Py_BuildValue("(iddLi)", t->action, t->ret, t->disc, (long long)t->step, t->tag);
}

static PyObject *page_list(PageCreditObject *self, int idle)
{
    if (credit_ready(self) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    const pc_entry *e = self->c.e;
    for (int k = idle ? self->c.ihead : self->c.head; out && k >= 0; k = idle ? e[k].inext : e[k].next) {
        PyObject *v = PyLong_FromLongLong(e[k].page);
        if (!v || PyList_Append(out, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(v);
    }
    return out;
}

static PyObject *PageCredit_pages(PageCreditObject *self, PyObject *unused)
{
    (void)unused;
    return page_list(self, 0);
}

static PyObject *PageCredit_idle_pages(PageCreditObject *self, PyObject *unused)
{
    (void)unused;
    return page_list(self, 1);
}

static Py_ssize_t PageCredit_len(PageCreditObject *self)
{
    return self->ready ? self->c.count : 0;
}

static int PageCredit_contains(PageCreditObject *self, PyObject *arg)
{
    int64_t page = c51_as_page(arg);
    if (PyErr_Occurred())
        return -1;
    return self->ready && self->c.count && pc_find(&self->c, page) >= 0;
}

static PySequenceMethods PageCredit_seq = {
    .sq_length = (lenfunc)PageCredit_len,
    .sq_contains = (objobjproc)PageCredit_contains,
};

BIND_GETTER(PageCredit_next_expiry, PageCreditObject, PyLong_FromLongLong(self->ready ? self->c.next_expiry : 0))
BIND_GETTER(PageCredit_nbytes, PageCreditObject, PyLong_FromSize_t(self->ready ? pc_bytes(&self->c) : 0))

static PyGetSetDef PageCredit_getset[] = {
    {"next_expiry", (getter)PageCredit_next_expiry, NULL, "expire() has nothing to do before this step", NULL},
    {"nbytes", (getter)PageCredit_nbytes, NULL, "bytes the table holds (it grows with the open transitions)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef PageCredit_methods[] = {
    {"decision", (PyCFunction)(void (*)(void))PageCredit_decision, METH_FASTCALL,
     "decision(page, obs, action, reward, step[, discount, tag]): a decision on page (see agents/credit.py)"},
    {"access", (PyCFunction)(void (*)(void))PageCredit_access, METH_FASTCALL,
     "access(page, reward): an access of page that no decision handled"},
    {"end", (PyCFunction)PageCredit_end, METH_O, "end(page): end page's open transition, terminal"},
    {"expire", (PyCFunction)PageCredit_expire, METH_O, "expire(step): end the transitions past their horizons"},
    {"charge", (PyCFunction)PageCredit_charge, METH_VARARGS,
     "charge(page, step, cost): subtract cost from page's open return if it was decided at step"},
    {"touch", (PyCFunction)(void (*)(void))PageCredit_touch, METH_FASTCALL,
     "touch(first_page, last_page, reward, baselines): each open page of the range gets reward - "
     "max(baselines[tag], 0) as an access (reward None: ends it)"},
    {"get", (PyCFunction)PageCredit_get, METH_O,
     "get(page) -> (action, return, discount, step, tag) of page's open transition, or None"},
    {"pages", (PyCFunction)PageCredit_pages, METH_NOARGS, "pages() -> open pages, oldest decision first"},
    {"idle_pages", (PyCFunction)PageCredit_idle_pages, METH_NOARGS,
     "idle_pages() -> open pages not accessed since their decision, oldest first"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject PageCreditType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hss_gym.agents._c51.PageCredit",
    .tp_basicsize = sizeof(PageCreditObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Open per-page transitions of a C51 agent (agents/credit.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PageCredit_init,
    .tp_dealloc = (destructor)PageCredit_dealloc,
    .tp_as_sequence = &PageCredit_seq,
    .tp_getset = PageCredit_getset,
    .tp_methods = PageCredit_methods,
};

