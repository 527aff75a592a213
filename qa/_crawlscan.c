/*
 * qa._crawlscan: one pass over a piece of a Heritrix crawl.log, aggregated in C.
 *
 * Why: the daily QA's cost is per-line field splitting; polars' string kernels spend 3-4 x what
 * mawk spends. This scanner walks each line once, byte by byte, and sums lines and bytes per
 * ("authority MIME", status*8 + dup*4 + seed*2 + quota) -- the packed key of qa.crawllog --
 * in an open-addressing hash table, with the GIL released (so threads can scan ranges of one
 * mmap in parallel).
 *
 * It only accepts lines it is certain to read exactly as qa.crawllog's polars fast path does:
 * pure printable ASCII (no byte >= 0x80, no NUL, CR or 0x1f), Heritrix's fixed layout (status
 * right-aligned at 25..29, size at 31..40), plain integers, and nine single-space separated
 * fields after them. Any other line (blank ones too) is returned untouched ("odd") with its line
 * number, and Python parses the odd lines with the reference polars/slow path. So the result
 * never depends on this file's idea of an edge case.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    uint64_t hash;
    int64_t code;
    int64_t lines;
    int64_t bytes;
    size_t key_off; /* into the arena */
    size_t key_len;
    int used;
} Entry;

typedef struct {
    Entry *slots;
    size_t cap; /* power of two */
    size_t count;
    char *arena;
    size_t arena_len, arena_cap;
} Table;

typedef struct {
    int64_t lineno;
    size_t off, len;
} Odd;

typedef struct {
    Odd *items;
    size_t n, cap;
} OddList;

/* byte classes: 0 ordinary, 1 space, 2 refuse (non-ASCII, NUL, CR, 0x1f) */
static unsigned char cls[256];

static void init_classes(void) {
    for (int c = 0; c < 256; c++) cls[c] = (c >= 0x80 || c == 0 || c == '\r' || c == 0x1f) ? 2 : 0;
    cls[(unsigned char)' '] = 1;
}

static uint64_t hash_key(const char *p, size_t n, int64_t code) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    h ^= (uint64_t)code * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    return h;
}

static int table_init(Table *t) {
    t->cap = 1 << 14;
    t->count = 0;
    t->slots = calloc(t->cap, sizeof(Entry));
    t->arena_cap = 1 << 20;
    t->arena_len = 0;
    t->arena = malloc(t->arena_cap);
    return t->slots && t->arena ? 0 : -1;
}

static void table_free(Table *t) {
    free(t->slots);
    free(t->arena);
}

static int table_grow(Table *t) {
    size_t ncap = t->cap * 2;
    Entry *ns = calloc(ncap, sizeof(Entry));
    if (!ns) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].used) continue;
        size_t j = t->slots[i].hash & (ncap - 1);
        while (ns[j].used) j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

/* key = a + ' ' + b, given as two pieces so nothing is copied for a hit */
static int table_add(Table *t, const char *a, size_t an, const char *b, size_t bn, int64_t code,
                     int64_t size, char **scratch, size_t *scratch_cap) {
    size_t kn = an + 1 + bn;
    if (kn > *scratch_cap) {
        size_t nc = kn * 2;
        char *ns = realloc(*scratch, nc);
        if (!ns) return -1;
        *scratch = ns;
        *scratch_cap = nc;
    }
    char *k = *scratch;
    memcpy(k, a, an);
    k[an] = ' ';
    memcpy(k + an + 1, b, bn);
    uint64_t h = hash_key(k, kn, code);
    size_t j = h & (t->cap - 1);
    while (t->slots[j].used) {
        Entry *e = &t->slots[j];
        if (e->hash == h && e->code == code && e->key_len == kn &&
            memcmp(t->arena + e->key_off, k, kn) == 0) {
            e->lines += 1;
            e->bytes += size;
            return 0;
        }
        j = (j + 1) & (t->cap - 1);
    }
    if (t->arena_len + kn > t->arena_cap) {
        size_t nc = (t->arena_len + kn) * 2;
        char *na = realloc(t->arena, nc);
        if (!na) return -1;
        t->arena = na;
        t->arena_cap = nc;
    }
    memcpy(t->arena + t->arena_len, k, kn);
    Entry *e = &t->slots[j];
    e->used = 1;
    e->hash = h;
    e->code = code;
    e->lines = 1;
    e->bytes = size;
    e->key_off = t->arena_len;
    e->key_len = kn;
    t->arena_len += kn;
    t->count++;
    if (t->count * 2 > t->cap) return table_grow(t);
    return 0;
}

static int odd_add(OddList *o, int64_t lineno, size_t off, size_t len) {
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 1024;
        Odd *ni = realloc(o->items, nc * sizeof(Odd));
        if (!ni) return -1;
        o->items = ni;
        o->cap = nc;
    }
    o->items[o->n].lineno = lineno;
    o->items[o->n].off = off;
    o->items[o->n].len = len;
    o->n++;
    return 0;
}

/* 1 when [p, p+n) has no byte >= 0x80, NUL, CR or 0x1f (16 bytes at a time where SSE2 is). */
static int line_clean(const char *p, size_t n) {
    size_t i = 0;
#ifdef __SSE2__
    const __m128i cr = _mm_set1_epi8('\r'), us = _mm_set1_epi8(0x1f), z = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, us)),
                                   _mm_cmpeq_epi8(v, z));
        if (_mm_movemask_epi8(_mm_or_si128(bad, v))) return 0; /* v's high bit: non-ASCII */
    }
#endif
    for (; i < n; i++)
        if (cls[(unsigned char)p[i]] == 2) return 0;
    return 1;
}

/* [p, e) holds a right-aligned integer: spaces, then "-" alone (nosize) or -?digits.
 * Returns 1 and sets *out, or 0 when polars might read it differently (odd line). */
static int parse_int_field(const char *p, const char *e, int allow_dash, int64_t *out) {
    while (p < e && *p == ' ') p++;
    if (p == e) return 0;
    int neg = 0;
    if (*p == '-') {
        if (p + 1 == e) {
            if (!allow_dash) return 0;
            *out = 0;
            return 1;
        }
        neg = 1;
        p++;
    }
    int64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        v = v * 10 + (*p - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

/* Parse one line; 1 = aggregated, 0 = odd, -1 = out of memory. */
static int scan_line(const char *l, size_t n, Table *t, const char **ts_min, const char **ts_max,
                     char **scratch, size_t *scratch_cap) {
    if (n < 44 || !line_clean(l, n)) return 0;
    if (l[24] != ' ' || l[30] != ' ' || l[41] != ' ' || l[42] == ' ' || l[4] != '-' ||
        l[10] != 'T')
        return 0;
    int64_t status, size;
    if (!parse_int_field(l + 25, l + 30, 0, &status)) return 0;
    if (!parse_int_field(l + 31, l + 41, 1, &size)) return 0;
    /* fields after column 42: uri hop via mime thread dur digest source ann(+rest) */
    const char *fs[9];
    const char *fe[9];
    const char *end = l + n;
    fs[0] = l + 42;
    for (int f = 0; f < 8; f++) {
        const char *sp = memchr(fs[f], ' ', end - fs[f]);
        if (!sp) return 0;
        fe[f] = sp;
        fs[f + 1] = sp + 1;
    }
    fe[8] = end;
    if (fe[8] == fs[8]) return 0; /* empty annotations: not in the layout */
    /* authority: third "/"-separated piece of the URI, else the whole URI */
    const char *ua = fs[0], *ue = fe[0];
    const char *s1 = memchr(ua, '/', ue - ua);
    const char *as = ua, *ae = ue;
    if (s1) {
        const char *s2 = memchr(s1 + 1, '/', ue - s1 - 1);
        if (s2) {
            const char *s3 = memchr(s2 + 1, '/', ue - s2 - 1);
            as = s2 + 1;
            ae = s3 ? s3 : ue;
        }
    }
    size_t annl = fe[8] - fs[8];
    int dup = memmem(fs[8], annl, "duplicate:", 10) != NULL;
    int quota = memmem(fs[8], annl, "Q:", 2) != NULL;
    int seed = (fe[1] - fs[1] == 1 && fs[1][0] == '-');
    int64_t code = status * 8 + dup * 4 + seed * 2 + quota;
    if (*ts_min == NULL || memcmp(l, *ts_min, 24) < 0) *ts_min = l;
    if (*ts_max == NULL || memcmp(l, *ts_max, 24) > 0) *ts_max = l;
    if (table_add(t, as, ae - as, fs[3], fe[3] - fs[3], code, size, scratch, scratch_cap) < 0)
        return -1;
    return 1;
}

/* A Scanner keeps one hash table across pieces of a byte range, so the (large) grouped result
 * crosses into Python once per range, as four flat buffers rather than millions of tuples. */
typedef struct {
    PyObject_HEAD Table t;
    char *scratch;
    size_t scratch_cap;
    char ts_min[24], ts_max[24];
    int has_ts;
} Scanner;

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kw) {
    table_free(&self->t);
    memset(&self->t, 0, sizeof(Table));
    if (table_init(&self->t) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->has_ts = 0;
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    table_free(&self->t);
    free(self->scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(feed_doc,
             "feed(buf) -> (lines, odd)\n\n"
             "Aggregate the lines of buf; odd = [(line number from 1 in buf, line bytes)] for\n"
             "every line not aggregated here (blank ones included).");

static PyObject *Scanner_feed(Scanner *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    if (!self->t.slots) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "Scanner not initialised");
        return NULL;
    }
    const char *buf = view.buf;
    size_t len = (size_t)view.len;
    OddList odd = {NULL, 0, 0};
    const char *ts_min = NULL, *ts_max = NULL;
    int64_t lines = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS;
    size_t pos = 0;
    while (pos < len) {
        const char *l = buf + pos;
        const char *nl = memchr(l, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - l) : len - pos;
        lines++;
        int r = scan_line(l, n, &self->t, &ts_min, &ts_max, &self->scratch, &self->scratch_cap);
        if (r == 0) r = odd_add(&odd, lines, pos, n) < 0 ? -1 : 0;
        if (r < 0) {
            failed = 1;
            break;
        }
        pos += n + (nl ? 1 : 0);
    }
    if (ts_min) {
        if (!self->has_ts || memcmp(ts_min, self->ts_min, 24) < 0) memcpy(self->ts_min, ts_min, 24);
        if (!self->has_ts || memcmp(ts_max, self->ts_max, 24) > 0) memcpy(self->ts_max, ts_max, 24);
        self->has_ts = 1;
    }
    Py_END_ALLOW_THREADS;
    PyObject *result = NULL, *odds = NULL;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    odds = PyList_New(0);
    if (!odds) goto done;
    for (size_t i = 0; i < odd.n; i++) {
        PyObject *item = Py_BuildValue("(Ly#)", (long long)odd.items[i].lineno,
                                       buf + odd.items[i].off, (Py_ssize_t)odd.items[i].len);
        if (!item || PyList_Append(odds, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    result = Py_BuildValue("(LO)", (long long)lines, odds);
done:
    Py_XDECREF(odds);
    free(odd.items);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(result_doc,
             "result() -> (keys, codes, lines, bytes, first_ts, last_ts)\n\n"
             "keys: b'authority MIME' of every group joined by newlines; codes, lines, bytes:\n"
             "native int64 arrays (as bytes) in the same order; timestamps None if no line.");

static PyObject *Scanner_result(Scanner *self, PyObject *unused) {
    Table *t = &self->t;
    size_t n = t->count, klen = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].used) klen += t->slots[i].key_len + 1;
    PyObject *keys = PyBytes_FromStringAndSize(NULL, klen ? (Py_ssize_t)klen - 1 : 0);
    PyObject *codes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    PyObject *sums = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    PyObject *result = NULL;
    if (!keys || !codes || !counts || !sums) goto done;
    char *kp = PyBytes_AS_STRING(keys);
    int64_t *cp = (int64_t *)PyBytes_AS_STRING(codes);
    int64_t *lp = (int64_t *)PyBytes_AS_STRING(counts);
    int64_t *bp = (int64_t *)PyBytes_AS_STRING(sums);
    size_t j = 0;
    for (size_t i = 0; i < t->cap; i++) {
        Entry *e = &t->slots[i];
        if (!e->used) continue;
        if (j) *kp++ = '\n';
        memcpy(kp, t->arena + e->key_off, e->key_len);
        kp += e->key_len;
        cp[j] = e->code;
        lp[j] = e->lines;
        bp[j] = e->bytes;
        j++;
    }
    if (self->has_ts)
        result = Py_BuildValue("(OOOOs#s#)", keys, codes, counts, sums, self->ts_min,
                               (Py_ssize_t)24, self->ts_max, (Py_ssize_t)24);
    else
        result = Py_BuildValue("(OOOOOO)", keys, codes, counts, sums, Py_None, Py_None);
done:
    Py_XDECREF(keys);
    Py_XDECREF(codes);
    Py_XDECREF(counts);
    Py_XDECREF(sums);
    return result;
}

static PyTypeObject ScannerType;

PyDoc_STRVAR(absorb_doc, "absorb(other): add another Scanner's groups and timestamps to this one.");

static PyObject *Scanner_absorb(Scanner *self, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &ScannerType) || arg == (PyObject *)self) {
        PyErr_SetString(PyExc_TypeError, "absorb() takes another Scanner");
        return NULL;
    }
    Scanner *o = (Scanner *)arg;
    if (!self->t.slots || !o->t.slots) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner not initialised");
        return NULL;
    }
    for (size_t i = 0; i < o->t.cap; i++) {
        Entry *e = &o->t.slots[i];
        if (!e->used) continue;
        const char *k = o->t.arena + e->key_off;
        const char *sp = memchr(k, ' ', e->key_len); /* authority has no space: first one */
        size_t an = sp ? (size_t)(sp - k) : e->key_len;
        size_t bn = sp ? e->key_len - an - 1 : 0;
        if (table_add(&self->t, k, an, k + an + 1, bn, e->code, e->bytes, &self->scratch,
                      &self->scratch_cap) < 0)
            return PyErr_NoMemory();
        /* table_add counted one line: correct to the other table's count */
        uint64_t h = hash_key(k, e->key_len, e->code);
        size_t j = h & (self->t.cap - 1);
        while (!(self->t.slots[j].hash == h && self->t.slots[j].code == e->code &&
                 self->t.slots[j].key_len == e->key_len &&
                 memcmp(self->t.arena + self->t.slots[j].key_off, k, e->key_len) == 0))
            j = (j + 1) & (self->t.cap - 1);
        self->t.slots[j].lines += e->lines - 1;
    }
    if (o->has_ts) {
        if (!self->has_ts || memcmp(o->ts_min, self->ts_min, 24) < 0)
            memcpy(self->ts_min, o->ts_min, 24);
        if (!self->has_ts || memcmp(o->ts_max, self->ts_max, 24) > 0)
            memcpy(self->ts_max, o->ts_max, 24);
        self->has_ts = 1;
    }
    Py_RETURN_NONE;
}

static PyMethodDef Scanner_methods[] = {
    {"absorb", (PyCFunction)Scanner_absorb, METH_O, absorb_doc},
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS, feed_doc},
    {"result", (PyCFunction)Scanner_result, METH_NOARGS, result_doc},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "qa._crawlscan.Scanner",
    .tp_doc = "Aggregates crawl.log pieces of one byte range (not thread-safe: one per thread).",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crawlscan",
                                    "C scanner for Heritrix crawl.log lines (see qa.crawlscan).",
                                    -1, NULL};

PyMODINIT_FUNC PyInit__crawlscan(void) {
    init_classes();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
