/*
 * hss_gym.workloads._fastparse -- optional C accelerator for the delimited trace readers.
 *
 * One function, tokenize(), splits a block of text lines into fields and converts the requested
 * fields to integers. It implements exactly the rules of the pure-NumPy tokenizer in
 * hss_gym/workloads/readers/_tokenize.py (which documents them and is the reference; the test
 * suite checks that both give identical results). It only exists because a vectorised NumPy
 * tokenizer is several times slower than pandas' C CSV parser, and trace files are large.
 *
 * Plain C99 against the CPython API and the buffer protocol; no NumPy C API. Outputs are written
 * into caller-allocated writable buffers (NumPy arrays), and the GIL is released while parsing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define ERR_OK ((int8_t)-1)      /* the line parsed */
#define ERR_BLANK ((int8_t)-2)   /* the line is empty or only white space */
#define ERR_NFIELDS ((int8_t)-3) /* the line has too few or too many fields */

#define MAX_COLS 64         /* highest field index a format may read, plus one */
#define MAX_SIG_DIGITS 19   /* significant digits kept in a decimal mantissa (fits uint64) */
#define MAX_FRAC_DIGITS 24  /* fraction digits beyond this are ignored */

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Unsigned decimal integer, 1-19 digits, <= INT64_MAX. Returns 0 on success. */
static int parse_uint(const unsigned char *s, Py_ssize_t n, int64_t *out)
{
    uint64_t acc = 0;
    Py_ssize_t i;
    if (n < 1 || n > 19)
        return -1;
    for (i = 0; i < n; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9)
            return -1;
        acc = acc * 10 + d;
    }
    if (acc > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)acc;
    return 0;
}

/* Decimal number "digits[.digits]": mantissa and number of fraction digits kept. */
static int parse_decimal(const unsigned char *s, Py_ssize_t n, uint64_t *mant, int8_t *frac)
{
    uint64_t acc = 0;
    int in_frac = 0, seen_digit = 0, sig = 0, fr = 0;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        unsigned d;
        if (c == '.') {
            if (in_frac)
                return -1;
            in_frac = 1;
            continue;
        }
        d = (unsigned)c - '0';
        if (d > 9)
            return -1;
        seen_digit = 1;
        if (in_frac && fr >= MAX_FRAC_DIGITS)
            continue;
        if (acc == 0 && d == 0) {
            if (in_frac)
                fr++;
            continue;
        }
        if (sig == MAX_SIG_DIGITS) {
            if (!in_frac)
                return -1;
            continue;
        }
        acc = acc * 10 + d;
        sig++;
        if (in_frac)
            fr++;
    }
    if (!seen_digit)
        return -1;
    *mant = acc;
    *frac = (int8_t)fr;
    return 0;
}

/* Token of at most 8 bytes packed little-endian into a uint64 (optionally lower-cased). */
static int parse_key(const unsigned char *s, Py_ssize_t n, int fold, uint64_t *out)
{
    uint64_t key = 0;
    Py_ssize_t i;
    if (n > 8)
        return -1;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (fold && c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        key |= (uint64_t)c << (8 * i);
    }
    *out = key;
    return 0;
}

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    int delim;          /* a byte, or -1 for runs of white space */
    Py_ssize_t min_fields, max_fields;
    const char *kinds;  /* one letter per field index: x skip, u uint, d decimal, k/K key */
    Py_ssize_t nkinds;
    int8_t *err;
    int64_t *vals[MAX_COLS];
    int8_t *fracs[MAX_COLS];
} job_t;

static void parse_line(job_t *job, Py_ssize_t row, Py_ssize_t ls, Py_ssize_t le)
{
    const unsigned char *p = job->data;
    Py_ssize_t fs[MAX_COLS], fl[MAX_COLS];
    Py_ssize_t nf = 0, i, c;
    int blank = 1;

    if (le > ls && p[le - 1] == '\r')
        le--;
    for (i = ls; i < le; i++) {
        if (!is_space(p[i])) {
            blank = 0;
            break;
        }
    }
    if (blank) {
        job->err[row] = ERR_BLANK;
        return;
    }
    if (job->delim < 0) {
        i = ls;
        for (;;) {
            Py_ssize_t start;
            while (i < le && is_space(p[i]))
                i++;
            if (i >= le)
                break;
            start = i;
            while (i < le && !is_space(p[i]))
                i++;
            if (nf < job->nkinds) {
                fs[nf] = start;
                fl[nf] = i - start;
            }
            nf++;
        }
    } else {
        i = ls;
        for (;;) {
            Py_ssize_t start = i, end;
            while (i < le && p[i] != (unsigned char)job->delim)
                i++;
            end = i;
            if (nf < job->nkinds) {
                while (start < end && is_space(p[start]))
                    start++;
                while (end > start && is_space(p[end - 1]))
                    end--;
                fs[nf] = start;
                fl[nf] = end - start;
            }
            nf++;
            if (i >= le)
                break;
            i++; /* skip the delimiter */
        }
    }
    if (nf < job->min_fields || nf > job->max_fields) {
        job->err[row] = ERR_NFIELDS;
        return;
    }
    for (c = 0; c < job->nkinds && c < nf; c++) {
        const unsigned char *s = p + fs[c];
        int rc = 0;
        switch (job->kinds[c]) {
        case 'u':
            rc = parse_uint(s, fl[c], &job->vals[c][row]);
            break;
        case 'd':
            rc = parse_decimal(s, fl[c], (uint64_t *)&job->vals[c][row], &job->fracs[c][row]);
            break;
        case 'k':
        case 'K':
            rc = parse_key(s, fl[c], job->kinds[c] == 'K', (uint64_t *)&job->vals[c][row]);
            break;
        default:
            break;
        }
        if (rc != 0) {
            job->err[row] = (int8_t)c;
            return;
        }
    }
    job->err[row] = ERR_OK;
}

static Py_ssize_t count_lines(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t lines = 0;
    const unsigned char *q = p, *end = p + n;
    while (q < end) {
        const unsigned char *nl = memchr(q, '\n', (size_t)(end - q));
        lines++;
        if (nl == NULL)
            break;
        q = nl + 1;
    }
    return lines;
}

static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t need, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len < need) {
        PyErr_Format(PyExc_ValueError, "%s buffer holds %zd bytes, %zd needed", what, view->len,
                     need);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(tokenize_doc,
             "tokenize(data, delim, min_fields, max_fields, kinds, err, vals, fracs) -> int\n\n"
             "Parse every line of `data` (one row per line). `delim` is a byte value or -1 for\n"
             "runs of white space; `kinds` has one letter per field index (x skip, u unsigned\n"
             "integer, d decimal, k key, K case-folded key). `err` (int8 per line) receives -1 for a\n"
             "parsed line, -2 for a blank line, -3 for a wrong field count, or the index of the\n"
             "first field that failed. `vals[i]` (int64 per line, or None for x) and `fracs[i]`\n"
             "(int8 per line for d, else None) receive the values. Returns the number of lines.");

static PyObject *tokenize(PyObject *self, PyObject *args)
{
    Py_buffer data, errv, views[2 * MAX_COLS];
    int delim, nviews = 0, ok = 0;
    Py_ssize_t min_fields, max_fields, nkinds, nlines = 0, c;
    const char *kinds;
    PyObject *err_obj, *vals_obj, *fracs_obj;
    job_t job;
    (void)self;

    if (!PyArg_ParseTuple(args, "y*innsOOO", &data, &delim, &min_fields, &max_fields, &kinds,
                          &err_obj, &vals_obj, &fracs_obj))
        return NULL;
    memset(&job, 0, sizeof(job));
    memset(&errv, 0, sizeof(errv));
    nkinds = (Py_ssize_t)strlen(kinds);
    if (nkinds > MAX_COLS || delim < -1 || delim > 255 || delim == '\n' || min_fields < 0 ||
        max_fields < min_fields || !PyTuple_Check(vals_obj) || !PyTuple_Check(fracs_obj) ||
        PyTuple_GET_SIZE(vals_obj) != nkinds || PyTuple_GET_SIZE(fracs_obj) != nkinds) {
        PyErr_SetString(PyExc_ValueError, "tokenize: inconsistent arguments");
        goto done;
    }
    nlines = count_lines((const unsigned char *)data.buf, data.len);
    if (get_out(err_obj, &errv, nlines, "err") < 0)
        goto done;
    for (c = 0; c < nkinds; c++) {
        char k = kinds[c];
        if (k == 'x')
            continue;
        if (k != 'u' && k != 'd' && k != 'k' && k != 'K') {
            PyErr_Format(PyExc_ValueError, "tokenize: unknown kind %c", k);
            goto done;
        }
        if (get_out(PyTuple_GET_ITEM(vals_obj, c), &views[nviews], nlines * 8, "vals") < 0)
            goto done;
        job.vals[c] = (int64_t *)views[nviews++].buf;
        if (k == 'd') {
            if (get_out(PyTuple_GET_ITEM(fracs_obj, c), &views[nviews], nlines, "fracs") < 0)
                goto done;
            job.fracs[c] = (int8_t *)views[nviews++].buf;
        }
    }
    job.data = (const unsigned char *)data.buf;
    job.size = data.len;
    job.delim = delim;
    job.min_fields = min_fields;
    job.max_fields = max_fields;
    job.kinds = kinds;
    job.nkinds = nkinds;
    job.err = (int8_t *)errv.buf;

    Py_BEGIN_ALLOW_THREADS
    {
        Py_ssize_t row = 0, ls = 0;
        while (ls < job.size) {
            const unsigned char *nl =
                memchr(job.data + ls, '\n', (size_t)(job.size - ls));
            Py_ssize_t le = nl ? (Py_ssize_t)(nl - job.data) : job.size;
            parse_line(&job, row++, ls, le);
            ls = le + 1;
        }
    }
    Py_END_ALLOW_THREADS
    ok = 1;

done:
    for (c = 0; c < nviews; c++)
        PyBuffer_Release(&views[c]);
    if (errv.obj != NULL)
        PyBuffer_Release(&errv);
    PyBuffer_Release(&data);
    return ok ? PyLong_FromSsize_t(nlines) : NULL;
}

static PyMethodDef methods[] = {
    {"tokenize", tokenize, METH_VARARGS, tokenize_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastparse",
    "Optional C tokenizer for hss_gym's delimited trace readers (see readers/_tokenize.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastparse(void) { return PyModule_Create(&module); }
