/* The encoding detector's counting (core/detector.py, core/_detector_score.py): the
 * passes over every byte and every decoded character, which pure Python makes with
 * regular expressions, translate() and Counter.  Each function has its twin of the same
 * name in core/_native.py, which states what it counts; the two give the same counts in
 * the same dict order and the same sums, each added in the same order, so that the
 * detector's decisions do not depend on which runs.
 *
 * The detector's byte counts live in one array of int64 (array('q')), laid out as
 * _detector_native.EVIDENCE_* says: the count of NUL and of each byte value above 7F,
 * the ASCII bytes by class, then the bytes above 7F next to an ASCII letter, alone
 * between two, the runs of such bytes one byte long and longer, and for each code page
 * the capitals of glued words.  Pairs of bytes are dicts keyed (a << 8) | b.
 */

/* The sums of costs are made as the twin makes them, one rounding per operation: no
   multiply-add fused into one. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

#define EV_HISTOGRAM 0
#define EV_ASCII 256
#define EV_ADJACENT 260
#define EV_INSIDE 516
#define EV_RUNS 772
#define EV_WORDS 774
#define MAX_CODE_PAGES 16
#define EV_SIZE (EV_WORDS + MAX_CODE_PAGES)

/* What a byte reads as in a code page (_detector_score.CODE_PAGE_FLAGS' bits). */
enum {
    CP_LETTER = 1,
    CP_SYMBOL = 2,
    CP_LOWER = 4,
    CP_UPPER = 8,
    CP_STRAY = 16,
    CP_INTRUDER = 32,
    CP_BAD = 64,
};

/* The classes of ASCII characters (ascii_classes): letter, space, control, other. */
enum { AC_LETTER, AC_SPACE, AC_CONTROL, AC_OTHER };

static inline int
ascii_class(unsigned int c)
{
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
        return AC_LETTER;
    }
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
        return AC_SPACE;
    }
    if ((c < 0x20 && c != 0x1b) || c == 0x7f) {
        return AC_CONTROL;
    }
    return AC_OTHER;
}

static inline int
is_ascii_letter(unsigned int c)
{
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* The int64 array of the detector's counts, writable and at least EV_SIZE long. */
static int
get_evidence(PyObject *obj, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        return -1;
    }
    if (view->itemsize != 8 || view->format == NULL || strcmp(view->format, "q") != 0 ||
        view->len < (Py_ssize_t)(EV_SIZE * 8)) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "an array('q') of the detector's counts expected");
        return -1;
    }
    return 0;
}

/* args[0], a segment of bytes, and args[1], the evidence (get_evidence): both held, or
   neither and -1 with an exception set. */
static int
get_segment_and_evidence(PyObject *const *args, Py_buffer *data, Py_buffer *ev)
{
    if (PyObject_GetBuffer(args[0], data, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (get_evidence(args[1], ev) < 0) {
        PyBuffer_Release(data);
        return -1;
    }
    return 0;
}

/* dict[key] += n (a missing key counts from 0, inserted last). */
static int
dict_add(PyObject *dict, PyObject *key, long long n)
{
    PyObject *old = PyDict_GetItemWithError(dict, key);
    if (old == NULL && PyErr_Occurred()) {
        return -1;
    }
    long long was = 0;
    if (old != NULL) {
        was = PyLong_AsLongLong(old);
        if (was == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    PyObject *value = PyLong_FromLongLong(was + n);
    if (value == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static int
dict_add_int(PyObject *dict, long key, long long n)
{
    PyObject *k = PyLong_FromLong(key);
    if (k == NULL) {
        return -1;
    }
    int rc = dict_add(dict, k, n);
    Py_DECREF(k);
    return rc;
}

/* count_bytes(segment, evidence) -> int

   Adds each byte of ``segment`` to the histogram and its ASCII class; returns the bytes
   above 7F it holds as a bit mask (bit b for byte b). */
static PyObject *
detect_count_bytes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "count_bytes(segment, evidence)");
        return NULL;
    }
    Py_buffer data, ev;
    if (get_segment_and_evidence(args, &data, &ev) < 0) {
        return NULL;
    }
    const unsigned char *p = data.buf;
    long long *counts = ev.buf;
    long long hist[256] = {0};
    for (Py_ssize_t i = 0; i < data.len; i++) {
        hist[p[i]]++;
    }
    uint64_t words[2] = {0, 0};
    counts[EV_HISTOGRAM] += hist[0];
    for (int b = 0; b < 256; b++) {
        if (b < 0x80) {
            counts[EV_ASCII + ascii_class((unsigned int)b)] += hist[b];
            continue;
        }
        counts[EV_HISTOGRAM + b] += hist[b];
        if (hist[b]) {
            words[(b - 0x80) >> 6] |= (uint64_t)1 << ((b - 0x80) & 63);
        }
    }
    PyBuffer_Release(&ev);
    PyBuffer_Release(&data);
    /* (words[1] << 64 | words[0]) << 128 */
    PyObject *high = PyLong_FromUnsignedLongLong(words[1]);
    PyObject *shift64 = PyLong_FromLong(64), *shift128 = PyLong_FromLong(128);
    PyObject *low = PyLong_FromUnsignedLongLong(words[0]);
    PyObject *mask = NULL;
    if (high != NULL && shift64 != NULL && shift128 != NULL && low != NULL) {
        PyObject *up = PyNumber_Lshift(high, shift64);
        PyObject *both = up == NULL ? NULL : PyNumber_Or(up, low);
        mask = both == NULL ? NULL : PyNumber_Lshift(both, shift128);
        Py_XDECREF(up);
        Py_XDECREF(both);
    }
    Py_XDECREF(high);
    Py_XDECREF(shift64);
    Py_XDECREF(shift128);
    Py_XDECREF(low);
    return mask;
}

/* Counts of pairs of bytes above 7F, flushed into a dict in the order each pair was
   first seen (one dict update per distinct pair). */
typedef struct {
    /* Valid where ``touched`` says: only the bit map is cleared before use. */
    uint32_t count[128 * 128];
    uint8_t touched[128 * 128 / 8];
    uint16_t *order;
    Py_ssize_t seen;
} pair_counts;

static inline void
pair_add(pair_counts *t, unsigned int a, unsigned int b)
{
    uint16_t key = (uint16_t)((a - 0x80) << 7 | (b - 0x80));
    uint8_t bit = (uint8_t)(1u << (key & 7));
    if (t->touched[key >> 3] & bit) {
        t->count[key]++;
    }
    else {
        t->touched[key >> 3] |= bit;
        t->count[key] = 1;
        t->order[t->seen++] = key;
    }
}

static int
pair_flush(pair_counts *t, PyObject *dict)
{
    for (Py_ssize_t k = 0; k < t->seen; k++) {
        uint16_t key = t->order[k];
        long a = 0x80 + (key >> 7), b = 0x80 + (key & 127);
        if (dict_add_int(dict, a << 8 | b, t->count[key]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The capitals of glued words in the run p[0..n) (see the twin): counted for each code
   page whose bit is set in all four masks of four bytes in a row. */
static void
count_glued(const unsigned char *p, Py_ssize_t n, const uint16_t *lower, const uint16_t *upper,
            long long *counts)
{
    for (Py_ssize_t k = 0; k + 3 < n; k++) {
        unsigned int m = lower[p[k]] & lower[p[k + 1]] & upper[p[k + 2]] & lower[p[k + 3]];
        for (int page = 0; m; page++, m >>= 1) {
            counts[EV_WORDS + page] += m & 1;
        }
    }
}

/* count_runs(segment, evidence, pairs, starts, flags) -> None

   The runs of bytes above 7F of ``segment`` with the ASCII letters just before and after
   them (within the segment), and the capitals of glued words for each code page of
   ``flags``: see the twin. */
static PyObject *
detect_count_runs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyDict_Check(args[2]) || !PyDict_Check(args[3]) ||
        !PyBytes_Check(args[4]) || PyBytes_GET_SIZE(args[4]) % 256 != 0 ||
        PyBytes_GET_SIZE(args[4]) > 256 * MAX_CODE_PAGES) {
        PyErr_SetString(PyExc_TypeError, "count_runs(segment, evidence, pairs: dict, "
                                         "starts: dict, flags: bytes of 256 a code page)");
        return NULL;
    }
    /* For each byte value, the code pages that read it as a lower-case letter and as an
       upper-case one, a bit each. */
    uint16_t lower[256] = {0}, upper[256] = {0};
    const unsigned char *flags = (const unsigned char *)PyBytes_AS_STRING(args[4]);
    for (Py_ssize_t page = 0; page < PyBytes_GET_SIZE(args[4]) / 256; page++) {
        for (int b = 0; b < 256; b++) {
            lower[b] |= (uint16_t)((flags[256 * page + b] & CP_LOWER ? 1u : 0u) << page);
            upper[b] |= (uint16_t)((flags[256 * page + b] & CP_UPPER ? 1u : 0u) << page);
        }
    }
    Py_buffer data, ev;
    if (get_segment_and_evidence(args, &data, &ev) < 0) {
        return NULL;
    }
    const unsigned char *p = data.buf;
    long long *counts = ev.buf;
    Py_ssize_t n = data.len, i = 0;
    /* Each table sees at most one new pair per byte, and 128 * 128 pairs in all. */
    size_t room = n < 128 * 128 ? (size_t)n + 1 : 128 * 128;
    pair_counts *pairs = PyMem_Malloc(2 * sizeof(pair_counts));
    uint16_t *order = PyMem_Malloc(2 * room * sizeof(uint16_t));
    if (pairs == NULL || order == NULL) {
        PyMem_Free(pairs);
        PyMem_Free(order);
        PyBuffer_Release(&ev);
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    pair_counts *starts = &pairs[1];
    memset(pairs->touched, 0, sizeof pairs->touched);
    memset(starts->touched, 0, sizeof starts->touched);
    pairs->seen = starts->seen = 0;
    pairs->order = order;
    starts->order = order + room;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < n && p[i] >= 0x80) {
            i++;
        }
        int before = start > 0 && is_ascii_letter(p[start - 1]);
        int after = i < n && is_ascii_letter(p[i]);
        unsigned int first = p[start], last = p[i - 1];
        if (i - start == 1) {
            counts[EV_RUNS]++;
            counts[EV_ADJACENT + first] += before || after;
            counts[EV_INSIDE + first] += before && after;
            continue;
        }
        counts[EV_RUNS + 1]++;
        for (Py_ssize_t k = start; k + 1 < i; k++) {
            pair_add(pairs, p[k], p[k + 1]);
        }
        count_glued(p + start, i - start, lower, upper, counts);
        if (before) {
            counts[EV_ADJACENT + first]++;
        }
        else {
            pair_add(starts, first, p[start + 1]);
        }
        counts[EV_ADJACENT + last] += after;
    }
    int failed = pair_flush(pairs, args[2]) < 0 || pair_flush(starts, args[3]) < 0;
    PyMem_Free(pairs);
    PyMem_Free(order);
    PyBuffer_Release(&ev);
    PyBuffer_Release(&data);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Counts of characters beyond ASCII (open addressing; code point 0 marks a free slot),
   each with how often it stood next to an ASCII letter, and the orders in which they
   were first seen and first seen next to a letter. */
typedef struct {
    uint32_t cp, count, adjacent;
} char_count;

typedef struct {
    char_count *slots;
    size_t mask, used;
    Py_UCS4 *order, *adjacent_order;
    size_t seen_adjacent;
} char_counts;

static int
char_counts_init(char_counts *t, size_t capacity)
{
    t->slots = PyMem_Calloc(capacity, sizeof(char_count));
    t->order = PyMem_Malloc(capacity / 2 * sizeof(Py_UCS4));
    t->adjacent_order = PyMem_Malloc(capacity / 2 * sizeof(Py_UCS4));
    t->mask = capacity - 1;
    t->used = t->seen_adjacent = 0;
    return t->slots != NULL && t->order != NULL && t->adjacent_order != NULL ? 0 : -1;
}

static void
char_counts_free(char_counts *t)
{
    PyMem_Free(t->slots);
    PyMem_Free(t->order);
    PyMem_Free(t->adjacent_order);
}

static char_count *
char_slot(char_count *slots, size_t mask, Py_UCS4 cp)
{
    size_t i = ((size_t)cp * 0x9E3779B1u) & mask;
    while (slots[i].cp != 0 && slots[i].cp != cp) {
        i = (i + 1) & mask;
    }
    return &slots[i];
}

/* Twice the room, the counts and orders kept (at most half the slots are used). */
static int
char_counts_grow(char_counts *t)
{
    char_counts bigger;
    if (char_counts_init(&bigger, (t->mask + 1) * 2) < 0) {
        char_counts_free(&bigger);
        return -1;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->slots[i].cp != 0) {
            *char_slot(bigger.slots, bigger.mask, t->slots[i].cp) = t->slots[i];
        }
    }
    memcpy(bigger.order, t->order, t->used * sizeof(Py_UCS4));
    memcpy(bigger.adjacent_order, t->adjacent_order, t->seen_adjacent * sizeof(Py_UCS4));
    bigger.used = t->used;
    bigger.seen_adjacent = t->seen_adjacent;
    char_counts_free(t);
    *t = bigger;
    return 0;
}

static int
char_add(char_counts *t, Py_UCS4 cp, int adjacent)
{
    char_count *slot = char_slot(t->slots, t->mask, cp);
    if (slot->cp == 0) {
        if ((t->used + 1) * 2 > t->mask + 1) {
            if (char_counts_grow(t) < 0) {
                return -1;
            }
            slot = char_slot(t->slots, t->mask, cp);
        }
        slot->cp = cp;
        t->order[t->used++] = cp;
    }
    slot->count++;
    if (adjacent && slot->adjacent++ == 0) {
        t->adjacent_order[t->seen_adjacent++] = cp;
    }
    return 0;
}

static int
char_counts_flush(char_counts *t, PyObject *counts, PyObject *adjacent)
{
    for (int pass = 0; pass < 2; pass++) {
        Py_UCS4 *order = pass ? t->adjacent_order : t->order;
        size_t n = pass ? t->seen_adjacent : t->used;
        for (size_t k = 0; k < n; k++) {
            char_count *slot = char_slot(t->slots, t->mask, order[k]);
            PyObject *key = PyUnicode_FromOrdinal((int)order[k]);
            int rc = key == NULL ? -1
                                 : dict_add(pass ? adjacent : counts, key,
                                            pass ? slot->adjacent : slot->count);
            Py_XDECREF(key);
            if (rc < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static inline int
is_east_asian(Py_UCS4 c)
{
    return (c >= 0x3000 && c <= 0x9fff) || (c >= 0xac00 && c <= 0xd7af) ||
           (c >= 0xff00 && c <= 0xffef);
}

/* count_east_asian(text) -> int: the characters of ``text`` in East Asian scripts. */
static PyObject *
detect_count_east_asian(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "count_east_asian(text: str)");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), found = 0;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        for (Py_ssize_t i = 0; i < n; i++) {
            found += is_east_asian(PyUnicode_READ(kind, data, i));
        }
    }
    return PyLong_FromSsize_t(found);
}

/* count_text(text, counts, adjacent) -> (chars, east_asian, single_runs, longer_runs)

   A multi-byte candidate's decoded text counted: see the twin. */
static PyObject *
detect_count_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyDict_Check(args[1]) ||
        !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "count_text(text: str, counts: dict, adjacent: dict)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    long long classes[4] = {0, 0, 0, 0}, east_asian = 0, runs[2] = {0, 0};
    char_counts table = {0};
    if (!PyUnicode_IS_ASCII(text) && char_counts_init(&table, 256) < 0) {
        char_counts_free(&table);
        return PyErr_NoMemory();
    }
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        Py_UCS4 c = i < n ? PyUnicode_READ(kind, data, i) : 0;
        if (c < 0x80) {
            runs[0] += run == 1;
            runs[1] += run > 1;
            run = 0;
            classes[ascii_class(c)] += i < n;
            continue;
        }
        run++;
        east_asian += is_east_asian(c);
        int adjacent = (i > 0 && is_ascii_letter(PyUnicode_READ(kind, data, i - 1))) ||
                       (i + 1 < n && is_ascii_letter(PyUnicode_READ(kind, data, i + 1)));
        if (char_add(&table, c, adjacent) < 0) {
            char_counts_free(&table);
            return PyErr_NoMemory();
        }
    }
    int failed = table.slots != NULL && char_counts_flush(&table, args[1], args[2]) < 0;
    char_counts_free(&table);
    static const char class_keys[4] = {'a', ' ', '\x01', '.'};
    for (int k = 0; k < 4 && !failed; k++) {
        if (classes[k]) {
            PyObject *key = PyUnicode_FromOrdinal(class_keys[k]);
            failed = key == NULL || dict_add(args[1], key, classes[k]) < 0;
            Py_XDECREF(key);
        }
    }
    if (failed) {
        return NULL;
    }
    return Py_BuildValue("(nLLL)", n, east_asian, runs[0], runs[1]);
}

/* The entries of a dict of pairs (a << 8) | b -> count, read once for every code page:
   ``key[i]`` and ``count[i]`` for i < n, in the dict's order. */
typedef struct {
    Py_ssize_t n;
    unsigned short *key;
    long long *count;
} pair_list;

/* Read ``dict`` into ``out`` (keys outside 0-FFFF are left out, as no flags match them);
   -1 on an error (``out`` then holds nothing to free). */
static int
pair_list_of(PyObject *dict, pair_list *out)
{
    Py_ssize_t size = PyDict_GET_SIZE(dict), pos = 0;
    PyObject *key, *value;
    out->n = 0;
    out->key = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(unsigned short));
    out->count = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(long long));
    if (out->key == NULL || out->count == NULL) {
        PyMem_Free(out->key);
        PyMem_Free(out->count);
        PyErr_NoMemory();
        return -1;
    }
    while (PyDict_Next(dict, &pos, &key, &value)) {
        long k = PyLong_AsLong(key);
        long long n = PyLong_AsLongLong(value);
        if ((k == -1 || n == -1) && PyErr_Occurred()) {
            PyMem_Free(out->key);
            PyMem_Free(out->count);
            return -1;
        }
        if (k >= 0 && k <= 0xffff) {
            out->key[out->n] = (unsigned short)k;
            out->count[out->n++] = n;
        }
    }
    return 0;
}

static void
pair_list_free(pair_list *pairs)
{
    PyMem_Free(pairs->key);
    PyMem_Free(pairs->count);
}

/* The sum of the counts of the pairs (a << 8) | b whose flags hold ``first`` for a and
   ``second`` for b. */
static long long
pairs_with(const pair_list *pairs, const unsigned char *flags, int first, int second)
{
    long long total = 0;
    for (Py_ssize_t i = 0; i < pairs->n; i++) {
        unsigned k = pairs->key[i];
        if ((flags[k >> 8] & first) && (flags[k & 0xff] & second)) {
            total += pairs->count[i];
        }
    }
    return total;
}

/* An array('d') of rows of ``row`` doubles. */
static int
get_doubles(PyObject *obj, Py_buffer *view, Py_ssize_t row)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT) < 0) {
        return -1;
    }
    if (view->itemsize != 8 || view->format == NULL || strcmp(view->format, "d") != 0 ||
        view->len % (row * 8) != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "an array('d') of whole rows expected");
        return -1;
    }
    return 0;
}

/* The byte values above 7F seen, upwards, and how often each was. */
typedef struct {
    int n;
    unsigned char value[128];
    double count[128];
} seen_bytes;

static void
seen_bytes_of(const long long *counts, seen_bytes *seen)
{
    seen->n = 0;
    for (int b = 0x80; b < 256; b++) {
        if (counts[EV_HISTOGRAM + b]) {
            seen->value[seen->n] = (unsigned char)b;
            seen->count[seen->n++] = (double)counts[EV_HISTOGRAM + b];
        }
    }
}

/* The sum of cost * count over the bytes above 7F seen, upwards: one row of ``costs``. */
static double
high_bytes_cost(const seen_bytes *seen, const double *costs)
{
    double total = 0.0;
    for (int k = 0; k < seen->n; k++) {
        total += costs[seen->value[k]] * seen->count[k];
    }
    return total;
}

/* One code page's score: see the twin. */
static PyObject *
score_one_page(const long long *counts, const seen_bytes *seen, const pair_list *pairs,
               const pair_list *starts, const unsigned char *flags, const double *costs,
               const double *terms, int rows, const double *extra, double ascii_cost,
               long long glued)
{
    long long letters = 0, mixed = 0, symbols = 0, camel = 0, bad = 0;
    for (int b = 0x80; b < 256; b++) {
        long long seen = counts[EV_HISTOGRAM + b], near = counts[EV_ADJACENT + b];
        letters += (flags[b] & CP_LETTER) ? seen : 0;
        bad += (flags[b] & CP_BAD) ? seen : 0;
        mixed += (flags[b] & CP_LETTER) ? near : 0;
        symbols += (flags[b] & CP_SYMBOL) ? near : 0;
        camel += (flags[b] & CP_INTRUDER) ? counts[EV_INSIDE + b] : 0;
    }
    /* A capital of a glued word is no letter in the wrong case. */
    long long lower_upper = pairs_with(pairs, flags, CP_LOWER, CP_UPPER) - glued;
    long long stray_letter = pairs_with(starts, flags, CP_STRAY, CP_LETTER);
    camel += lower_upper + stray_letter;
    double single = (double)counts[EV_RUNS], longer = (double)counts[EV_RUNS + 1];
    double best = 0.0;
    int best_row = -1;
    for (int r = 0; r < rows; r++) {
        const double *t = terms + 4 * r;
        double mixing = (double)mixed * t[0] + (double)(letters - mixed) * t[1];
        double runs = single * t[2] + longer * t[3];
        double total = high_bytes_cost(seen, costs + 256 * r) + mixing + runs;
        if (best_row < 0 || total < best) {
            best = total;
            best_row = r;
        }
    }
    double misplaced = extra[0] * (double)camel + extra[1] * (double)symbols + extra[2];
    return Py_BuildValue("(diL)", ascii_cost + best + misplaced, best_row, bad);
}

/* code_page_scores(evidence, pairs, starts, flags, costs, terms, rows, extras, ascii_cost)
   -> tuple

   Every code page scored on the bytes seen: for the code page k, 256 ``flags`` (what
   each byte reads as), ``rows[k]`` languages, each a row of 256 ``costs`` and four
   ``terms``, and three ``extras`` (array('d')), one page after the other.  See the
   twin. */
static PyObject *
detect_code_page_scores(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    double ascii_cost = nargs == 9 ? PyFloat_AsDouble(args[8]) : -1.0;
    if (ascii_cost == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (nargs != 9 || !PyDict_Check(args[1]) || !PyDict_Check(args[2]) ||
        !PyBytes_Check(args[3]) || !PyBytes_Check(args[6]) ||
        PyBytes_GET_SIZE(args[3]) != 256 * PyBytes_GET_SIZE(args[6])) {
        PyErr_SetString(PyExc_TypeError, "code_page_scores(evidence, pairs: dict, starts: dict, "
                                         "flags: bytes, costs, terms, rows: bytes, extras, "
                                         "ascii_cost: float)");
        return NULL;
    }
    Py_buffer ev, cost_view, term_view, extra_view;
    if (get_evidence(args[0], &ev) < 0) {
        return NULL;
    }
    if (get_doubles(args[7], &extra_view, 3) < 0) {
        PyBuffer_Release(&ev);
        return NULL;
    }
    if (get_doubles(args[4], &cost_view, 256) < 0) {
        PyBuffer_Release(&extra_view);
        PyBuffer_Release(&ev);
        return NULL;
    }
    if (get_doubles(args[5], &term_view, 4) < 0) {
        PyBuffer_Release(&cost_view);
        PyBuffer_Release(&extra_view);
        PyBuffer_Release(&ev);
        return NULL;
    }
    Py_ssize_t pages = PyBytes_GET_SIZE(args[6]), total_rows = 0;
    const unsigned char *rows = (const unsigned char *)PyBytes_AS_STRING(args[6]);
    for (Py_ssize_t k = 0; k < pages; k++) {
        total_rows += rows[k];
    }
    PyObject *out = NULL;
    if (pages > MAX_CODE_PAGES || cost_view.len != total_rows * 256 * 8 ||
        term_view.len != total_rows * 4 * 8 || extra_view.len != pages * 3 * 8) {
        PyErr_SetString(PyExc_ValueError, "code_page_scores: the rows do not match the costs");
    }
    else {
        out = PyTuple_New(pages);
    }
    const unsigned char *flags = (const unsigned char *)PyBytes_AS_STRING(args[3]);
    const double *costs = cost_view.buf, *terms = term_view.buf, *extras = extra_view.buf;
    const long long *glued = (const long long *)ev.buf + EV_WORDS;
    seen_bytes seen;
    seen_bytes_of(ev.buf, &seen);
    pair_list pairs = {0, NULL, NULL}, starts = {0, NULL, NULL};
    if (out != NULL && pair_list_of(args[1], &pairs) < 0) {
        Py_CLEAR(out);
    }
    else if (out != NULL && pair_list_of(args[2], &starts) < 0) {
        pair_list_free(&pairs);
        pairs.key = NULL;
        pairs.count = NULL;
        Py_CLEAR(out);
    }
    for (Py_ssize_t k = 0, row = 0; out != NULL && k < pages; row += rows[k], k++) {
        PyObject *one = score_one_page(ev.buf, &seen, &pairs, &starts, flags + 256 * k,
                                       costs + 256 * row, terms + 4 * row, rows[k],
                                       extras + 3 * k, ascii_cost, glued[k]);
        if (one == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, k, one);
    }
    pair_list_free(&starts);
    pair_list_free(&pairs);
    PyBuffer_Release(&term_view);
    PyBuffer_Release(&cost_view);
    PyBuffer_Release(&extra_view);
    PyBuffer_Release(&ev);
    return out;
}

/* What counted text costs in one language: the sum of cost * count over the characters
   of ``counts`` in its order, each cost from ``cache`` or, where it has none,
   ``cost_of(char)`` (which caches it).  -1 on an error. */
static double
text_cost(PyObject *counts, PyObject *cache, PyObject *cost_of)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    double total = 0.0;
    while (PyDict_Next(counts, &pos, &key, &value)) {
        PyObject *cost = PyDict_GetItemWithError(cache, key);
        if (cost != NULL) {
            Py_INCREF(cost);
        }
        else if (PyErr_Occurred() || (cost = PyObject_CallOneArg(cost_of, key)) == NULL) {
            return -1.0;
        }
        double c = PyFloat_AsDouble(cost);
        Py_DECREF(cost);
        double n = PyLong_AsDouble(value);
        if ((c == -1.0 || n == -1.0) && PyErr_Occurred()) {
            return -1.0;
        }
        total += c * n;
    }
    return total;
}

/* cheapest_language(counts, models, letters, mixed, single, longer) -> (float, int) | None

   Counted text scored in each language of ``models``, tuples (cache, cost_of, mixing,
   apart, single_cost, longer_cost): see the twin. */
static PyObject *
detect_cheapest_language(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "cheapest_language(counts: dict, models: tuple, "
                                         "letters, mixed, single, longer)");
        return NULL;
    }
    double n[4];
    for (int k = 0; k < 4; k++) {
        n[k] = PyLong_AsDouble(args[2 + k]);
        if (n[k] == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    double letters = n[0], mixed = n[1], single = n[2], longer = n[3], best = 0.0;
    Py_ssize_t best_index = -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[1]); i++) {
        PyObject *model = PyTuple_GET_ITEM(args[1], i);
        double t[4];
        if (!PyTuple_Check(model) || PyTuple_GET_SIZE(model) != 6 ||
            !PyDict_Check(PyTuple_GET_ITEM(model, 0))) {
            PyErr_SetString(PyExc_TypeError, "cheapest_language: a model is "
                                             "(cache, cost_of, mixing, apart, single, longer)");
            return NULL;
        }
        for (int k = 0; k < 4; k++) {
            t[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(model, 2 + k));
            if (t[k] == -1.0 && PyErr_Occurred()) {
                return NULL;
            }
        }
        double cost = text_cost(args[0], PyTuple_GET_ITEM(model, 0), PyTuple_GET_ITEM(model, 1));
        if (cost == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        double mixing = mixed * t[0] + (letters - mixed) * t[1];
        double total = cost + mixing + (single * t[2] + longer * t[3]);
        if (best_index < 0 || total < best) {
            best = total;
            best_index = i;
        }
    }
    if (best_index < 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(dn)", best, best_index);
}

/* class_counts(counts, cache, class_of) -> (letters, symbols, bad, others)

   The characters of ``counts`` by class (0 to 3), each character's class from ``cache``
   or, where it has none, ``class_of(char)`` (which caches it). */
static PyObject *
detect_class_counts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "class_counts(counts: dict, cache: dict, class_of)");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    long long totals[4] = {0, 0, 0, 0};
    while (PyDict_Next(args[0], &pos, &key, &value)) {
        PyObject *found = PyDict_GetItemWithError(args[1], key);
        if (found != NULL) {
            Py_INCREF(found);
        }
        else if (PyErr_Occurred() || (found = PyObject_CallOneArg(args[2], key)) == NULL) {
            return NULL;
        }
        long c = PyLong_AsLong(found);
        Py_DECREF(found);
        long long n = PyLong_AsLongLong(value);
        if ((c == -1 || n == -1) && PyErr_Occurred()) {
            return NULL;
        }
        if (c < 0 || c > 3) {
            PyErr_SetString(PyExc_ValueError, "class_counts: a class is 0 to 3");
            return NULL;
        }
        totals[c] += n;
    }
    return Py_BuildValue("(LLLL)", totals[0], totals[1], totals[2], totals[3]);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
