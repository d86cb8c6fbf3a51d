/*
 * hss_gym.workloads._fastparse -- optional C accelerator for the delimited trace readers.
 *
 * tokenize() splits a block of text lines into fields and converts the requested fields to
 * integers; count_lines() sizes its outputs. tokenize() implements exactly the rules of the
 * pure-NumPy tokenizer in hss_gym/workloads/readers/_tokenize.py (which documents them; the test
 * suite checks that both give identical results). It only exists because a vectorised NumPy
 * tokenizer is several times slower than pandas' C CSV parser, and trace files are large.
 *
 * Plain C99 against the CPython API and the buffer protocol; no NumPy C API. Outputs are written
 * into caller-allocated writable buffers (NumPy arrays), and the GIL is released while parsing.
 */
#include "binding.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ERR_OK ((int8_t)-1)      /* the line parsed */
#define ERR_BLANK ((int8_t)-2)   /* the line is empty or only white space */
#define ERR_NFIELDS ((int8_t)-3) /* the line has too few or too many fields */

#define KEY_MISSING ((int8_t)-128) /* a key field whose token is not in the table */

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
    Py_ssize_t i, dot = -1;

    if (n <= MAX_SIG_DIGITS + 1) {
        /* Fast path: at most 19 digits, so no limit below applies and the mantissa is simply
         * all the digits. Falls through to the general loop when there are 20 digits. */
        for (i = 0; i < n; i++) {
            unsigned d = (unsigned)s[i] - '0';
            if (d <= 9)
                acc = acc * 10 + d;
            else if (s[i] == '.' && dot < 0)
                dot = i;
            else
                return -1;
        }
        if (n - (dot >= 0) == 0)
            return -1;
        if (n - (dot >= 0) <= MAX_SIG_DIGITS) {
            *mant = acc;
            *frac = (int8_t)(dot < 0 ? 0 : n - 1 - dot);
            return 0;
        }
        acc = 0;
    }
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

/* The value mapped to a token (at most 8 bytes, packed little-endian into a uint64, optionally
 * lower-cased) by a key table, or KEY_MISSING when it is longer than 8 bytes or not in it. */
static int8_t lookup_key(const unsigned char *s, Py_ssize_t n, int fold, const uint64_t *keys,
                         const int8_t *values, Py_ssize_t nkeys)
{
    uint64_t key = 0;
    Py_ssize_t i;
    if (n > 8)
        return KEY_MISSING;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (fold && c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        key |= (uint64_t)c << (8 * i);
    }
    for (i = 0; i < nkeys; i++)
        if (keys[i] == key)
            return values[i];
    return KEY_MISSING;
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
    int8_t *codes[MAX_COLS];
    const uint64_t *keys[MAX_COLS];
    const int8_t *values[MAX_COLS];
    Py_ssize_t nkeys[MAX_COLS];
    unsigned char stop[256]; /* bytes that end a field: '\n' and the delimiter (or space) */
} job_t;

/* Convert the field starting at `start` (kind `kind`, field index c) into row `row`; returns the
 * index of the byte that ends it (the delimiter, white space or '\n'); *failed is set when the
 * field is not valid. Plain numbers are converted while scanning; anything else (surrounding
 * spaces, too many digits, bad bytes) takes the general path: find the end, strip, convert. */
static Py_ssize_t convert_field(job_t *job, char kind, Py_ssize_t c, Py_ssize_t row,
                                Py_ssize_t start, int *failed)
{
    const unsigned char *p = job->data;
    const unsigned char *stop = job->stop;
    Py_ssize_t i = start, end;
    unsigned d;

    *failed = 0;
    if (kind == 'u') {
        uint64_t acc = 0;
        while ((d = (unsigned)p[i] - '0') <= 9) {
            acc = acc * 10 + d;
            i++;
        }
        if (stop[p[i]] && i > start && i - start <= 18) {
            job->vals[c][row] = (int64_t)acc;
            return i;
        }
    } else if (kind == 'd') {
        uint64_t acc = 0;
        Py_ssize_t dot = -1, ndigits;
        for (;; i++) {
            d = (unsigned)p[i] - '0';
            if (d <= 9)
                acc = acc * 10 + d;
            else if (p[i] == '.' && dot < 0)
                dot = i;
            else
                break;
        }
        ndigits = i - start - (dot >= 0);
        if (stop[p[i]] && ndigits >= 1 && ndigits <= MAX_SIG_DIGITS) {
            job->vals[c][row] = (int64_t)acc;
            job->fracs[c][row] = (int8_t)(dot < 0 ? 0 : i - 1 - dot);
            return i;
        }
    }
    while (!stop[p[i]])
        i++;
    end = i;
    if (kind == 'x')
        return i;
    while (start < end && is_space(p[start]))
        start++;
    while (end > start && is_space(p[end - 1]))
        end--;
    switch (kind) {
    case 'u':
        *failed = parse_uint(p + start, end - start, &job->vals[c][row]) != 0;
        break;
    case 'd':
        *failed = parse_decimal(p + start, end - start, (uint64_t *)&job->vals[c][row],
                                &job->fracs[c][row]) != 0;
        break;
    default: /* k, K */
        job->codes[c][row] = lookup_key(p + start, end - start, kind == 'K', job->keys[c],
                                        job->values[c], job->nkeys[c]);
        break;
    }
    return i;
}

/* Parse the line starting at `ls` into row `row`; returns the index of its '\n'. The line must
 * end with '\n' inside the buffer (the scans rely on it instead of bounds checks). */
static Py_ssize_t parse_line(job_t *job, Py_ssize_t row, Py_ssize_t ls)
{
    const unsigned char *p = job->data;
    const int white = job->delim < 0;
    Py_ssize_t nf = 0, i = ls, fail = -1;

    while (is_space(p[i]))
        i++;
    if (p[i] == '\n') {
        job->err[row] = ERR_BLANK;
        return i;
    }
    if (!white)
        i = ls; /* a delimited field keeps its leading spaces until it is stripped */
    for (;;) {
        char kind = nf < job->nkinds && fail < 0 ? job->kinds[nf] : 'x';
        int failed;
        if (white) {
            while (is_space(p[i]))
                i++;
            if (p[i] == '\n')
                break;
        }
        i = convert_field(job, kind, nf, row, i, &failed);
        if (failed)
            fail = nf;
        nf++;
        if (!white) {
            if (p[i] == '\n')
                break;
            i++; /* skip the delimiter */
        }
    }
    if (nf < job->min_fields || nf > job->max_fields)
        job->err[row] = ERR_NFIELDS;
    else
        job->err[row] = fail < 0 ? ERR_OK : (int8_t)fail;
    return i;
}

static Py_ssize_t count_newlines(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t count = 0;
    const unsigned char *q = p, *end = p + n;
    while (q < end) {
        const unsigned char *nl = memchr(q, '\n', (size_t)(end - q));
        if (nl == NULL)
            break;
        count++;
        q = nl + 1;
    }
    return count;
}

/* Lines in a block: newlines, plus one for a final line without a newline. */
static Py_ssize_t count_lines(const unsigned char *p, Py_ssize_t n)
{
    return count_newlines(p, n) + (n > 0 && p[n - 1] != '\n');
}

PyDoc_STRVAR(count_lines_doc, "count_lines(data) -> int\n\n"
                              "Lines in `data`: newlines, plus one if the last line has none.");

static PyObject *py_count_lines(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    n = count_lines((const unsigned char *)data.buf, data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(n);
}

/* A writable contiguous output buffer; *capacity is lowered to the items it can hold. */
static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t *capacity)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len / itemsize < *capacity)
        *capacity = view->len / itemsize;
    return 0;
}

PyDoc_STRVAR(tokenize_doc,
             "tokenize(data, delim, min_fields, max_fields, kinds, err, vals, fracs, keys,\n"
             "         values) -> int\n\n"
             "Parse every line of `data` into one row (rules: hss_gym/workloads/readers/\n"
             "_tokenize.py). `delim` is a byte value or -1 for runs of white space; `kinds` has\n"
             "one letter per field index: x skip, u unsigned integer, d decimal, k key, K\n"
             "case-folded key. `err` (int8 per row) receives -1 for a parsed row, -2 for a blank\n"
             "line, -3 for a wrong field count, or the index of the first field that failed.\n"
             "Per field index: `vals[i]` receives int64 values (u), uint64 mantissas (d) or, for\n"
             "k/K, the int8 `values[i][j]` of the key `keys[i][j]` (native uint64) equal to the\n"
             "field, -128 when none is; `fracs[i]` receives int8 fraction-digit counts (d).\n"
             "Unused entries are None. Returns the number of rows; ValueError if a buffer is too\n"
             "small.");

static PyObject *tokenize(PyObject *self, PyObject *args)
{
    Py_buffer data, errv, views[4 * MAX_COLS];
    int delim, nviews = 0, ok = 0;
    Py_ssize_t min_fields, max_fields, nkinds, capacity = PY_SSIZE_T_MAX, row = 0, c;
    const char *kinds;
    PyObject *err_obj, *vals_obj, *fracs_obj, *keys_obj, *values_obj;
    job_t job;
    (void)self;

    if (!PyArg_ParseTuple(args, "y*innsOOOOO", &data, &delim, &min_fields, &max_fields, &kinds,
                          &err_obj, &vals_obj, &fracs_obj, &keys_obj, &values_obj))
        return NULL;
    memset(&job, 0, sizeof(job));
    memset(&errv, 0, sizeof(errv));
    nkinds = (Py_ssize_t)strlen(kinds);
    if (nkinds > MAX_COLS || nkinds > min_fields || delim < -1 || delim > 255 ||
        delim == '\n' || max_fields < min_fields || !PyTuple_Check(vals_obj) ||
        !PyTuple_Check(fracs_obj) || !PyTuple_Check(keys_obj) || !PyTuple_Check(values_obj) ||
        PyTuple_GET_SIZE(vals_obj) != nkinds || PyTuple_GET_SIZE(fracs_obj) != nkinds ||
        PyTuple_GET_SIZE(keys_obj) != nkinds || PyTuple_GET_SIZE(values_obj) != nkinds) {
        PyErr_SetString(PyExc_ValueError, "tokenize: inconsistent arguments");
        goto done;
    }
    if (get_out(err_obj, &errv, 1, &capacity) < 0)
        goto done;
    for (c = 0; c < nkinds; c++) {
        char k = kinds[c];
        if (k == 'x')
            continue;
        if (k == 'u' || k == 'd') {
            if (get_out(PyTuple_GET_ITEM(vals_obj, c), &views[nviews], 8, &capacity) < 0)
                goto done;
            job.vals[c] = (int64_t *)views[nviews++].buf;
        }
        if (k == 'd') {
            if (get_out(PyTuple_GET_ITEM(fracs_obj, c), &views[nviews], 1, &capacity) < 0)
                goto done;
            job.fracs[c] = (int8_t *)views[nviews++].buf;
        } else if (k == 'k' || k == 'K') {
            if (get_out(PyTuple_GET_ITEM(vals_obj, c), &views[nviews], 1, &capacity) < 0)
                goto done;
            job.codes[c] = (int8_t *)views[nviews++].buf;
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(keys_obj, c), &views[nviews],
                                   PyBUF_C_CONTIGUOUS) < 0)
                goto done;
            job.keys[c] = (const uint64_t *)views[nviews].buf;
            job.nkeys[c] = views[nviews++].len / 8;
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(values_obj, c), &views[nviews],
                                   PyBUF_C_CONTIGUOUS) < 0)
                goto done;
            job.values[c] = (const int8_t *)views[nviews].buf;
            if (views[nviews++].len != job.nkeys[c] || views[nviews - 2].len % 8 != 0) {
                PyErr_SetString(PyExc_ValueError, "tokenize: keys and values do not match");
                goto done;
            }
        } else if (k != 'u') {
            PyErr_Format(PyExc_ValueError, "tokenize: unknown kind %c", k);
            goto done;
        }
    }
    job.data = (const unsigned char *)data.buf;
    job.size = data.len;
    memset(job.stop, 0, sizeof(job.stop));
    job.delim = delim;
    job.min_fields = min_fields;
    job.max_fields = max_fields;
    job.kinds = kinds;
    job.nkinds = nkinds;
    job.err = (int8_t *)errv.buf;

    job.stop['\n'] = 1;
    if (delim < 0)
        job.stop[' '] = job.stop['\t'] = job.stop['\r'] = 1;
    else
        job.stop[delim] = 1;

    Py_BEGIN_ALLOW_THREADS
    {
        /* Whole lines in place; a last line without '\n' is parsed from a terminated copy. */
        Py_ssize_t ls = 0, tail = job.size;
        const unsigned char *data_buf = job.data;
        while (tail > 0 && data_buf[tail - 1] != '\n')
            tail--;
        while (ls < tail && row < capacity)
            ls = parse_line(&job, row++, ls) + 1;
        if (ls >= tail && tail < job.size && row < capacity) {
            unsigned char *copy = malloc((size_t)(job.size - tail) + 1);
            if (copy != NULL) {
                memcpy(copy, data_buf + tail, (size_t)(job.size - tail));
                copy[job.size - tail] = '\n';
                job.data = copy;
                parse_line(&job, row++, 0);
                job.data = data_buf;
                free(copy);
                ls = job.size;
            }
        }
        ok = ls >= job.size ? 1 : (row < capacity ? -1 : 0);
    }
    Py_END_ALLOW_THREADS
    if (ok == -1) {
        ok = 0;
        PyErr_NoMemory();
    }
    if (!ok)
        PyErr_SetString(PyExc_ValueError, "tokenize: output buffers hold fewer rows than lines");

done:
    bind_release(views, nviews);
    bind_release(&errv, 1);
    PyBuffer_Release(&data);
    return ok ? PyLong_FromSsize_t(row) : NULL;
}

static PyMethodDef methods[] = {
    {"tokenize", tokenize, METH_VARARGS, tokenize_doc},
    {"count_lines", py_count_lines, METH_VARARGS, count_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastparse",
    "Optional C tokenizer for hss_gym's delimited trace readers (see readers/_tokenize.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastparse(void) { return PyModule_Create(&module); }
