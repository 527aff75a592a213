/*
 * qa._crawlscan: one pass over a piece of a Heritrix crawl.log, aggregated in C.
 *
 * Why: the daily QA's cost is per-line field splitting; polars' string kernels spend 3-4 x what
 * mawk spends. This scanner walks each line once and sums lines and bytes per (authority, MIME,
 * status*8 + dup*4 + seed*2 + quota) -- qa.crawllog_aggregate's grouping -- in open-addressing hash
 * tables (authority and MIME interned to ids, groups keyed by the ids; lines added in batches
 * whose table slots are prefetched), with the GIL released (so threads can scan ranges of one
 * mmap in parallel). columns() gives the table by ids; add() takes the odd lines' groups.
 *
 * It only accepts lines it is certain to read exactly as qa.crawllog_aggregate's polars fast path does:
 * no whitespace but the space (no NUL, TAB, VT, FF, CR, 0x1c-0x1f, nor Unicode whitespace), valid
 * UTF-8 (ASCII in the fixed columns),
 * Heritrix's fixed layout (status right-aligned at 25..29, size at 31..40), plain integers, and
 * exactly nine non-empty single-space separated fields after them (a 13th extra-info field, or
 * the extra fields of a shifted or forged line, go to the reference, which decides). Any other
 * line (blank ones too) is returned untouched ("odd") with its line number, and Python parses
 * the odd lines with the reference polars/slow path. So the result never depends on this file's idea of an edge case.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    int64_t lineno;
    size_t off, len;
} Odd;

typedef struct {
    Odd *items;
    size_t n, cap;
} OddList;

/* byte classes: 0 ordinary, 1 space, 2 refuse (non-ASCII, NUL, whitespace other than ' ') */
static unsigned char cls[256];

static void init_classes(void) {
    /* every byte Python's str.split() (the reference's field rule) takes as whitespace, other
     * than the space: TAB, VT, FF, CR, 0x1c-0x1f; and NUL, and every non-ASCII byte */
    for (int c = 0; c < 256; c++)
        cls[c] = (c >= 0x80 || c == 0 || c == '\t' || c == 0x0b || c == 0x0c || c == '\r' ||
                  (c >= 0x1c && c <= 0x1f))
                     ? 2
                     : 0;
    cls[(unsigned char)' '] = 1;
}

/* Two tables instead of one keyed by the "authority MIME" string: the distinct authorities and
 * MIME types (tens of thousands, cache-resident) are interned to small ids, and the groups are
 * keyed by (authority id, MIME id, code) -- three integers in one 32-byte slot. A line then
 * costs one probe into the large group table, where the string-keyed table cost two cache
 * misses (slot, then the key in the arena), a byte-wise hash and a copy of the key: together
 * ~60% of the scan (perf, 10^7 lines, 7.3 x 10^5 groups). */
typedef struct {
    uint64_t hash;
    size_t off; /* into the arena: a probe needs no look-up in items */
    uint32_t id1; /* id + 1; 0 = empty slot */
    uint32_t len;
} StrSlot;

typedef struct {
    size_t off;
    uint32_t len;
} StrItem;

typedef struct {
    StrSlot *slots;
    size_t cap; /* power of two */
    StrItem *items;
    size_t count, items_cap;
    char *arena;
    size_t arena_len, arena_cap;
} Strings;

typedef struct {
    uint32_t a, m; /* authority and MIME ids */
    int64_t code;
    int64_t lines; /* 0 = empty slot */
    int64_t bytes;
} Group;

typedef struct {
    Strings s;
    Group *slots;
    size_t cap; /* power of two */
    size_t count;
} Table;

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static uint64_t hash_group(uint32_t a, uint32_t m, int64_t code) {
    uint64_t h = ((uint64_t)a << 32 | m) * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)code * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 31;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 29);
}

/* The hash tables' slots: zeroed memory; from 2 MiB on, an anonymous mapping the kernel may
 * back with transparent huge pages. Why: the table (~10^6 groups, 64 MiB of slots for 10^7
 * lines) is probed at random once per line; with 4 KiB pages nearly every probe also missed
 * the TLB and walked the page tables, and each page was faulted in twice (read: zero page,
 * then written). */
#define BIG_SLOTS ((size_t)2 << 20)

static void *slots_alloc(size_t count, size_t size) {
#ifdef MADV_HUGEPAGE
    size_t bytes = count * size;
    if (bytes >= BIG_SLOTS) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        madvise(p, bytes, MADV_HUGEPAGE); /* advice only: 4 KiB pages if refused */
        return p;
    }
#endif
    return calloc(count, size);
}

static void slots_free(void *p, size_t count, size_t size) {
    if (!p) return;
#ifdef MADV_HUGEPAGE
    if (count * size >= BIG_SLOTS) {
        munmap(p, count * size);
        return;
    }
#endif
    free(p);
}

static int table_init(Table *t) {
    memset(t, 0, sizeof(Table));
    t->s.cap = 1 << 12;
    t->s.slots = slots_alloc(t->s.cap, sizeof(StrSlot));
    t->s.items_cap = 1 << 10;
    t->s.items = malloc(t->s.items_cap * sizeof(StrItem));
    t->s.arena_cap = 1 << 16;
    t->s.arena = malloc(t->s.arena_cap);
    t->cap = 1 << 14;
    t->slots = slots_alloc(t->cap, sizeof(Group));
    return t->s.slots && t->s.items && t->s.arena && t->slots ? 0 : -1;
}

static void table_free(Table *t) {
    slots_free(t->s.slots, t->s.cap, sizeof(StrSlot));
    free(t->s.items);
    free(t->s.arena);
    slots_free(t->slots, t->cap, sizeof(Group));
}

/* Whether [a, a+n) and [b, b+n) hold the same bytes, 8 at a time. Why not memcmp: every line
 * compares its authority and MIME type (~20 bytes) with their interned copies, and the library
 * call cost more than the comparison (perf: memcmp ~7% of the scan, with the timestamps'). */
static inline int same_bytes(const char *a, const char *b, size_t n) {
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--)
        if (*a++ != *b++) return 0;
    return 1;
}

/* memcmp(a, b, 24) < 0 / > 0 of two crawl.log timestamps, as three big-endian words compared
 * inline (two per line: the earliest and the latest). */
static inline int ts_cmp(const char *a, const char *b) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (int k = 0; k < 24; k += 8) {
        uint64_t x, y;
        memcpy(&x, a + k, 8);
        memcpy(&y, b + k, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    return 0;
#else
    return memcmp(a, b, 24);
#endif
}

/* id of the string [p, p+n), added if new; -1 = out of memory */
static int64_t intern_h(Strings *s, const char *p, size_t n, uint64_t h) {
    size_t j = h & (s->cap - 1);
    while (s->slots[j].id1) {
        StrSlot *e = &s->slots[j];
        if (e->hash == h && e->len == n && same_bytes(s->arena + e->off, p, n))
            return e->id1 - 1;
        j = (j + 1) & (s->cap - 1);
    }
    if (n > UINT32_MAX || s->count >= UINT32_MAX - 1) return -1;
    if (s->arena_len + n > s->arena_cap) {
        size_t nc = (s->arena_len + n) * 2;
        char *na = realloc(s->arena, nc);
        if (!na) return -1;
        s->arena = na;
        s->arena_cap = nc;
    }
    if (s->count == s->items_cap) {
        size_t nc = s->items_cap * 2;
        StrItem *ni = realloc(s->items, nc * sizeof(StrItem));
        if (!ni) return -1;
        s->items = ni;
        s->items_cap = nc;
    }
    memcpy(s->arena + s->arena_len, p, n);
    s->items[s->count].off = s->arena_len;
    s->items[s->count].len = (uint32_t)n;
    s->arena_len += n;
    s->slots[j].hash = h;
    s->slots[j].off = s->arena_len - n;
    s->slots[j].len = (uint32_t)n;
    s->slots[j].id1 = (uint32_t)(s->count + 1);
    int64_t id = (int64_t)s->count++;
    if (s->count * 2 > s->cap) {
        size_t ncap = s->cap * 2;
        StrSlot *ns = slots_alloc(ncap, sizeof(StrSlot));
        if (!ns) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i].id1) continue;
            size_t k = s->slots[i].hash & (ncap - 1);
            while (ns[k].id1) k = (k + 1) & (ncap - 1);
            ns[k] = s->slots[i];
        }
        slots_free(s->slots, s->cap, sizeof(StrSlot));
        s->slots = ns;
        s->cap = ncap;
    }
    return id;
}

static int64_t intern(Strings *s, const char *p, size_t n) {
    return intern_h(s, p, n, hash_bytes(p, n));
}

static int groups_grow(Table *t) {
    size_t ncap = t->cap * 2;
    Group *ns = slots_alloc(ncap, sizeof(Group));
    if (!ns) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        Group *g = &t->slots[i];
        if (!g->lines) continue;
        size_t j = hash_group(g->a, g->m, g->code) & (ncap - 1);
        while (ns[j].lines) j = (j + 1) & (ncap - 1);
        ns[j] = *g;
    }
    slots_free(t->slots, t->cap, sizeof(Group));
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

static int group_add_h(Table *t, uint32_t a, uint32_t m, int64_t code, int64_t lines,
                       int64_t size, uint64_t h) {
    size_t j = h & (t->cap - 1);
    while (t->slots[j].lines) {
        Group *g = &t->slots[j];
        if (g->a == a && g->m == m && g->code == code) {
            g->lines += lines;
            g->bytes += size;
            return 0;
        }
        j = (j + 1) & (t->cap - 1);
    }
    Group *g = &t->slots[j];
    g->a = a;
    g->m = m;
    g->code = code;
    g->lines = lines;
    g->bytes = size;
    t->count++;
    if (t->count * 2 > t->cap) return groups_grow(t);
    return 0;
}

static int group_add(Table *t, uint32_t a, uint32_t m, int64_t code, int64_t lines,
                     int64_t size) {
    return group_add_h(t, a, m, code, lines, size, hash_group(a, m, code));
}

/* One parsed line, waiting in a batch. Why batches: nearly all of the scan's time is cache
 * misses in the two tables (perf); hashing a batch's keys first and prefetching their slots
 * lets the misses of BATCH lines overlap instead of being paid one after the other. */
typedef struct {
    const char *a, *m;
    size_t an, mn;
    int64_t code, size;
    uint64_t ha, hm, hg;
    uint32_t ia, im;
} Rec;

#define BATCH 32

static int flush(Table *t, Rec *r, int n) {
    Strings *s = &t->s;
    for (int i = 0; i < n; i++) {
        r[i].ha = hash_bytes(r[i].a, r[i].an);
        r[i].hm = hash_bytes(r[i].m, r[i].mn);
        __builtin_prefetch(&s->slots[r[i].ha & (s->cap - 1)]);
        __builtin_prefetch(&s->slots[r[i].hm & (s->cap - 1)]);
    }
    for (int i = 0; i < n; i++) {
        int64_t ia = intern_h(s, r[i].a, r[i].an, r[i].ha);
        int64_t im = ia < 0 ? -1 : intern_h(s, r[i].m, r[i].mn, r[i].hm);
        if (im < 0) return -1;
        r[i].ia = (uint32_t)ia;
        r[i].im = (uint32_t)im;
        r[i].hg = hash_group(r[i].ia, r[i].im, r[i].code);
        __builtin_prefetch(&t->slots[r[i].hg & (t->cap - 1)], 1);
    }
    for (int i = 0; i < n; i++)
        if (group_add_h(t, r[i].ia, r[i].im, r[i].code, 1, r[i].size, r[i].hg) < 0) return -1;
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

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80) that is not whitespace to
 * Python's str.split(), else 0. Why: polars reads the log as UTF-8 (invalid bytes become
 * U+FFFD) and the reference sends a line holding Unicode whitespace (U+0085, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) to the slow path; any other valid
 * sequence is text the C scanner reads as the same bytes. The table is RFC 3629's (no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_text(const unsigned char *p, const unsigned char *e) {
    unsigned c = p[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if ((size_t)(e - p) < need || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 2; k < need; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    unsigned b1 = p[1], b2 = need > 2 ? p[2] : 0;
    if (c == 0xC2 && (b1 == 0x85 || b1 == 0xA0)) return 0;
    if (c == 0xE1 && b1 == 0x9A && b2 == 0x80) return 0;
    if (c == 0xE2 && b1 == 0x80 && (b2 <= 0x8A || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF))
        return 0;
    if (c == 0xE2 && b1 == 0x81 && b2 == 0x9F) return 0;
    if (c == 0xE3 && b1 == 0x80 && b2 == 0x80) return 0;
    return need;
}

/* 1 when [p, p+n) has no class-2 byte but valid, non-whitespace UTF-8 sequences from byte
 * ``ascii_upto`` on (the fixed columns before it are character offsets to polars: ASCII
 * only), 16 clean ASCII bytes at a time where SSE2 is. */
static int line_clean(const char *p, size_t n, size_t ascii_upto) {
    size_t i = 0;
#ifdef __SSE2__
    /* a crawl.log line has no byte below 0x20 (control) and few from 0x80 (non-ASCII): a
     * block with any of them goes to the per-byte check below */
    const __m128i sp = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        /* signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them too */
        if (_mm_movemask_epi8(_mm_cmplt_epi8(v, sp))) break;
    }
#endif
    const unsigned char *u = (const unsigned char *)p;
    while (i < n) {
        unsigned char c = u[i];
        if (c < 0x80) {
            if (cls[c] == 2) return 0;
            i++;
            continue;
        }
        size_t k = i < ascii_upto ? 0 : utf8_text(u + i, u + n);
        if (!k) return 0;
        i += k;
    }
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

/* The end of the line at l (its first '\n' before e, else e: *n = its length) and, for a line of
 * ASCII text without control bytes, the nine fields after column 42 (uri hop via mime thread
 * dur digest source ann), in one SSE2 pass that finds the newline, checks the bytes and finds
 * the spaces together (a memchr for the newline first, then this pass, read every line twice:
 * memchr was ~5% of the scan, perf). Returns 1 (found), 0 (odd line: not exactly nine
 * non-empty single-space separated fields), or -1 (a byte below 0x20 other than the newline,
 * or from 0x80: fields_general decides). */
static int line_fields(const char *l, const char *e, size_t *n, const char **fs,
                       const char **fe) {
    size_t sp[9];
    int k = 0, many = 0;
    size_t avail = (size_t)(e - l), i = 0;
#ifdef __SSE2__
    const __m128i space = _mm_set1_epi8(' '), low = _mm_set1_epi8(0x20);
    for (; i + 16 <= avail; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(l + i));
        /* signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them too */
        unsigned lo = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(v, low));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, space));
        if (lo) m &= (1u << __builtin_ctz(lo)) - 1; /* the spaces before that byte */
        /* the fixed columns' spaces are checked by position */
        if (i + 16 <= 42) m = 0;
        else if (i < 42) m &= 0xFFFFu << (42 - i);
        while (m) {
            if (k == 9) { /* a 13th field or more: the reference decides */
                many = 1;
                break;
            }
            sp[k++] = i + (size_t)__builtin_ctz(m);
            m &= m - 1;
        }
        if (lo) {
            i += (size_t)__builtin_ctz(lo);
            break;
        }
    }
#endif
    for (; i < avail; i++) {
        unsigned char c = (unsigned char)l[i];
        if (c < 0x20 || c >= 0x80) break;
        if (c == ' ' && i >= 42) {
            if (k == 9) many = 1;
            else sp[k++] = i;
        }
    }
    if (i < avail && l[i] != '\n') { /* a control or non-ASCII byte: find the end, then decide */
        const char *nl = memchr(l + i, '\n', avail - i);
        *n = nl ? (size_t)(nl - l) : avail;
        return -1;
    }
    *n = i;
    if (many || k != 8) return 0; /* too few fields, or a 13th */
    fs[0] = l + 42;
    for (int f = 0; f < 8; f++) {
        fe[f] = l + sp[f];
        if (fe[f] == fs[f]) return 0; /* an empty field (two spaces) */
        fs[f + 1] = fe[f] + 1;
    }
    fe[8] = l + i;
    return fe[8] != fs[8]; /* empty annotations: not in the layout */
}

/* The same fields for any line: bytes checked by line_clean (UTF-8 text allowed), spaces
 * found by memchr. */
static int fields_general(const char *l, size_t n, const char **fs, const char **fe) {
    if (!line_clean(l, n, 42)) return 0;
    const char *end = l + n;
    fs[0] = l + 42;
    for (int f = 0; f < 8; f++) {
        const char *sp = memchr(fs[f], ' ', end - fs[f]);
        if (!sp || sp == fs[f]) return 0; /* too few fields, or an empty one (two spaces) */
        fe[f] = sp;
        fs[f + 1] = sp + 1;
    }
    fe[8] = end;
    if (fe[8] == fs[8]) return 0; /* empty annotations: not in the layout */
    /* a 13th field (Heritrix's extra info) or more: the reference path decides */
    return memchr(fs[8], ' ', fe[8] - fs[8]) == NULL;
}

/* Parse one line into *rec (added to the tables by flush); 1 = parsed, 0 = odd. ``found``,
 * fs and fe: line_fields' answer for the line. */
static int scan_line(const char *l, size_t n, int found, const char **fs, const char **fe,
                     Rec *rec, const char **ts_min, const char **ts_max) {
    if (n < 44) return 0;
    if (l[24] != ' ' || l[30] != ' ' || l[41] != ' ' || l[42] == ' ' || l[4] != '-' ||
        l[10] != 'T')
        return 0;
    int64_t status, size;
    if (!parse_int_field(l + 25, l + 30, 0, &status)) return 0;
    if (!parse_int_field(l + 31, l + 41, 1, &size)) return 0;
    if (memchr(l, ' ', 24)) return 0; /* a timestamp with a space: not one field */
    if (found < 0) found = fields_general(l, n, fs, fe);
    if (!found) return 0;
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
    if (*ts_min == NULL || ts_cmp(l, *ts_min) < 0) *ts_min = l;
    if (*ts_max == NULL || ts_cmp(l, *ts_max) > 0) *ts_max = l;
    rec->a = as;
    rec->an = ae - as;
    rec->m = fs[3];
    rec->mn = fe[3] - fs[3];
    rec->code = code;
    rec->size = size;
    return 1;
}

/* A Scanner keeps one hash table across pieces of a byte range, so the (large) grouped result
 * crosses into Python once per range, as four flat buffers rather than millions of tuples. */
typedef struct {
    PyObject_HEAD Table t;
    char ts_min[24], ts_max[24];
    int has_ts;
} Scanner;

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kw) {
    table_free(&self->t);
    if (table_init(&self->t) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->has_ts = 0;
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    table_free(&self->t);
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
    Rec batch[BATCH];
    int nb = 0;
    while (pos < len) {
        const char *l = buf + pos;
        const char *fs[9] = {NULL}; /* set by line_fields when it finds them */
        const char *fe[9] = {NULL};
        size_t n;
        int found = line_fields(l, buf + len, &n, fs, fe);
        lines++;
        if (scan_line(l, n, found, fs, fe, &batch[nb], &ts_min, &ts_max)) {
            if (++nb == BATCH) {
                if (flush(&self->t, batch, nb) < 0) {
                    failed = 1;
                    break;
                }
                nb = 0;
            }
        } else if (odd_add(&odd, lines, pos, n) < 0) {
            failed = 1;
            break;
        }
        pos += n + (pos + n < len ? 1 : 0); /* the newline, when the piece has one */
    }
    if (!failed && nb && flush(&self->t, batch, nb) < 0) failed = 1;
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

/* The int64 columns every group has (code, lines, bytes), in slot order, for columns(). Returns 0, or -1 with a Python error set (the three then NULL). */
static int group_counts(const Table *t, PyObject **codes, PyObject **counts, PyObject **sums) {
    Py_ssize_t size = (Py_ssize_t)(t->count * 8);
    *codes = PyBytes_FromStringAndSize(NULL, size);
    *counts = PyBytes_FromStringAndSize(NULL, size);
    *sums = PyBytes_FromStringAndSize(NULL, size);
    if (!*codes || !*counts || !*sums) {
        Py_CLEAR(*codes);
        Py_CLEAR(*counts);
        Py_CLEAR(*sums);
        return -1;
    }
    int64_t *cp = (int64_t *)PyBytes_AS_STRING(*codes);
    int64_t *lp = (int64_t *)PyBytes_AS_STRING(*counts);
    int64_t *bp = (int64_t *)PyBytes_AS_STRING(*sums);
    size_t j = 0;
    for (size_t i = 0; i < t->cap; i++) {
        const Group *g = &t->slots[i];
        if (!g->lines) continue;
        cp[j] = g->code;
        lp[j] = g->lines;
        bp[j] = g->bytes;
        j++;
    }
    return 0;
}

PyDoc_STRVAR(columns_doc,
             "columns() -> (strings, auth_ids, mime_ids, codes, lines, bytes, first_ts, last_ts)\n\n"
             "The groups, with authority and MIME as indices (uint32 arrays, as bytes) into\n"
             "strings: every distinct string (UTF-8), in id order, joined by newlines; codes,\n"
             "lines, bytes: native int64 arrays (as bytes) in the same order; timestamps None if\n"
             "no line. Lets Python build the table by gathering ~10^4 strings instead of\n"
             "splitting ~10^6 keys.");

static PyObject *Scanner_columns(Scanner *self, PyObject *unused) {
    Table *t = &self->t;
    const Strings *st = &t->s;
    size_t n = t->count, klen = 0;
    for (size_t i = 0; i < st->count; i++) klen += (size_t)st->items[i].len + 1;
    PyObject *strs = PyBytes_FromStringAndSize(NULL, klen ? (Py_ssize_t)klen - 1 : 0);
    PyObject *aids = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 4));
    PyObject *mids = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 4));
    PyObject *codes = NULL, *counts = NULL, *sums = NULL, *result = NULL;
    if (!strs || !aids || !mids || group_counts(t, &codes, &counts, &sums) < 0) goto done;
    char *kp = PyBytes_AS_STRING(strs);
    for (size_t i = 0; i < st->count; i++) {
        if (i) *kp++ = '\n';
        memcpy(kp, st->arena + st->items[i].off, st->items[i].len);
        kp += st->items[i].len;
    }
    uint32_t *ap = (uint32_t *)PyBytes_AS_STRING(aids);
    uint32_t *mp = (uint32_t *)PyBytes_AS_STRING(mids);
    size_t j = 0;
    for (size_t i = 0; i < t->cap; i++) {
        Group *g = &t->slots[i];
        if (!g->lines) continue;
        ap[j] = g->a;
        mp[j] = g->m;
        j++;
    }
    if (self->has_ts)
        result = Py_BuildValue("(OOOOOOs#s#)", strs, aids, mids, codes, counts, sums,
                               self->ts_min, (Py_ssize_t)24, self->ts_max, (Py_ssize_t)24);
    else
        result = Py_BuildValue("(OOOOOOOO)", strs, aids, mids, codes, counts, sums, Py_None,
                               Py_None);
done:
    Py_XDECREF(strs);
    Py_XDECREF(aids);
    Py_XDECREF(mids);
    Py_XDECREF(codes);
    Py_XDECREF(counts);
    Py_XDECREF(sums);
    return result;
}

PyDoc_STRVAR(add_doc,
             "add(auth, mime, code, lines, bytes): add one group's counts (bytes keys).\n\n"
             "Why: the few groups of the lines the reference path parsed (odd lines) join the\n"
             "scanner's table here, so the whole table crosses into polars once, by ids.");

static PyObject *Scanner_add(Scanner *self, PyObject *args) {
    const char *a, *m;
    Py_ssize_t an, mn;
    long long code, lines, size;
    if (!PyArg_ParseTuple(args, "y#y#LLL", &a, &an, &m, &mn, &code, &lines, &size)) return NULL;
    if (!self->t.slots) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner not initialised");
        return NULL;
    }
    if (lines <= 0) { /* 0 marks an empty slot */
        PyErr_SetString(PyExc_ValueError, "add() needs lines > 0");
        return NULL;
    }
    if (memchr(a, '\n', an) || memchr(m, '\n', mn)) { /* columns() joins strings by newlines */
        PyErr_SetString(PyExc_ValueError, "add(): a key holds a newline");
        return NULL;
    }
    int64_t ia = intern(&self->t.s, a, (size_t)an);
    int64_t im = ia < 0 ? -1 : intern(&self->t.s, m, (size_t)mn);
    if (im < 0 || group_add(&self->t, (uint32_t)ia, (uint32_t)im, code, lines, size) < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
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
    /* the other table's string ids become this table's, once per distinct string */
    const Strings *os = &o->t.s;
    uint32_t *ids = malloc((os->count ? os->count : 1) * sizeof(uint32_t));
    if (!ids) return PyErr_NoMemory();
    for (size_t i = 0; i < os->count; i++) {
        int64_t id = intern(&self->t.s, os->arena + os->items[i].off, os->items[i].len);
        if (id < 0) {
            free(ids);
            return PyErr_NoMemory();
        }
        ids[i] = (uint32_t)id;
    }
    for (size_t i = 0; i < o->t.cap; i++) {
        Group *g = &o->t.slots[i];
        if (!g->lines) continue;
        if (group_add(&self->t, ids[g->a], ids[g->m], g->code, g->lines, g->bytes) < 0) {
            free(ids);
            return PyErr_NoMemory();
        }
    }
    free(ids);
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
    {"add", (PyCFunction)Scanner_add, METH_VARARGS, add_doc},
    {"columns", (PyCFunction)Scanner_columns, METH_NOARGS, columns_doc},
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS, feed_doc},
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
    /* the line rules this build applies (qa.crawlscan refuses an older build: 2 = exactly 12
     * fields, whitespace other than the space refused; 3 = valid UTF-8 text read here too) */
    if (PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddIntConstant(m, "LINE_RULES", 3) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
