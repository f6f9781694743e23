/* moji_repair(buf, before, final, max_carry, events, rules, classes)
       -> (output, consumed, repairs | None)

   The mojibake repairer's pass over one buffer (core/mojibake.py holds the rules in
   words, core/_mojibake_native.py the pure twin): the stretches found, decided and
   repaired, the output made.  `buf` is the text (the carry, then the new piece); `before`
   the character before it ("" for none); `final` whether the text ends with it.
   `output` is buf[:consumed] with its repairs; buf[consumed:] is the stretch not yet
   decided.  `repairs`, made when `events` is true, is a list of (start, end, replacement,
   code pages undone) with start and end offsets in buf.

   `rules` is (index, pages, width, flags, groups, classify, names): find_moji's tables;
   per row of `pages` a uint16 of MR_* flags, native order (what the character is to
   the rules); per
   script group (a class's low seven bits) a byte of MG_* flags; `classify(code point)`
   the class of a character (group, MR_COMBINING for a combining mark), from unicodedata;
   the names of the code pages.  `classes` is a bytearray of 0x110000 classes, 0 where not
   yet known: filled through `classify` as characters are met, so that the classes follow
   the running interpreter's Unicode and no table is built before it is needed. */

#define MOJI_LAYERS 3
#define MOJI_SHORT 16 /* characters: a short repair */

/* What a character of the code pages is to the rules (a byte per row). */
enum {
    MR_RARE = 1,        /* next to a letter, all but always mojibake */
    MR_TELL = 2,        /* a lead byte of Latin-1 letters read in a code page */
    MR_TELL_LATIN = 4,  /* a tell before a Latin letter too */
    MR_TELL_NBSP = 8,   /* a tell before a no-break space too */
    MR_SYMBOLIC = 16,   /* a letter that in mojibake stands for a symbol */
    MR_SPACE = 32,      /* category Zs */
    MR_PUNCT = 64,      /* category P* */
    MR_ALPHA = 128,     /* str.isalpha */
    MR_LOWER = 256,     /* str.islower */
    MR_UPPER = 512,     /* str.isupper */
};
/* What a script group is (a byte per group). */
enum {
    MG_NO = 1,           /* no repair gives it */
    MG_NONE = 2,         /* of no script: goes with any */
    MG_LATIN = 4,
    MG_ALPHABET = 8,     /* an alphabet other than Latin */
    MG_NOT_IN_LATIN = 16 /* its letters stand in no word of ASCII letters */
};
#define MR_COMBINING 0x80
#define MR_GROUP 0x7F

/* One run of a stretch at one layer: the rows of its characters, its second character,
   the characters around it, and the repair found for it with the code pages undone. */
typedef struct {
    const uint16_t *rows;
    Py_UCS4 second;
    Py_ssize_t len, parent;
    Py_UCS4 before, after;
    const Py_UCS4 *rep;
    const uint16_t *rrows; /* of the repair's characters */
    Py_ssize_t rlen;
    unsigned char undone[MOJI_LAYERS];
    int nundone, done, deep;
    int odd, group, first; /* of the repair's classes, for moji_plausible */
} moji_item;

/* A repair of the buffer: its span and where its replacement is in `chars`. */
typedef struct {
    Py_ssize_t a, b, at, len;
    unsigned char undone[MOJI_LAYERS];
    int nundone;
} moji_fix;

typedef struct {
    moji_tables t;
    const uint16_t *flags; /* native order, a row each */
    const unsigned char *groups;
    unsigned char *classes;
    PyObject *classify, *names, *bits; /* bits: a reference to the state's moji_held */
    /* The rows of the stretch's characters (0: none of the pages') and, per layer, its
       runs and their repairs (each at most a stretch long) with the rows of theirs; made
       when a first stretch is decided. */
    Py_ssize_t limit;
    moji_item *items[MOJI_LAYERS];
    Py_UCS4 *reps[MOJI_LAYERS];
    unsigned char *bytes; /* a run's bytes through a page */
    Py_ssize_t *edges; /* where the stretch's runs start and end */
    uint16_t *rrows[MOJI_LAYERS], *srows;
    /* The repairs found and their replacements, growing. */
    moji_fix *fixes;
    Py_ssize_t nfixes, capfixes;
    Py_UCS4 *chars;
    Py_ssize_t nchars, capchars;
} moji_ctx;

/* The class of a character not met before, asked of `classify`; -1 with an exception. */
static int
moji_class_asked(moji_ctx *c, Py_UCS4 cp)
{
    PyObject *v = PyObject_CallFunction(c->classify, "k", (unsigned long)cp);
    if (v == NULL) {
        return -1;
    }
    long k = PyLong_AsLong(v);
    Py_DECREF(v);
    if (k < 1 || k > 0xFF) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "moji_repair: a class is 1 to 255");
        }
        return -1;
    }
    c->classes[cp] = (unsigned char)k;
    return (int)k;
}

/* The class of a character; -1 with an exception. */
static inline int
moji_class(moji_ctx *c, Py_UCS4 cp)
{
    return c->classes[cp] ? c->classes[cp] : moji_class_asked(c, cp);
}

/* str.isalpha, str.islower and str.isupper of a character, ASCII without a look-up: the
   characters around a run are most often ASCII. */
static inline int
moji_isalpha(Py_UCS4 ch)
{
    return ch < 0x80 ? (ch | 0x20) - 'a' < 26u : Py_UNICODE_ISALPHA(ch) != 0;
}

static inline int
moji_islower(Py_UCS4 ch)
{
    return ch < 0x80 ? ch - 'a' < 26u : Py_UNICODE_ISLOWER(ch) != 0;
}

static inline int
moji_isupper(Py_UCS4 ch)
{
    return ch < 0x80 ? ch - 'A' < 26u : Py_UNICODE_ISUPPER(ch) != 0;
}

/* Whether a character of the pages (by its flags) is a symbol to the rules. */
static inline int
moji_symbolic(unsigned flags)
{
    return !(flags & MR_ALPHA) || (flags & MR_SYMBOLIC);
}

/* The run undone through page k and judged: its bytes through the page, then in one
   pass over them its text decoded as UTF-8 (sequence_at, _table37.h: Table 3-7, as
   Python's strict decoder) into `out`, the rows of that
   repair into `rows`; then whether it may be a layer between two others (every
   character a code page holds, or one a repair may give), whether it may be mojibake
   still (two characters or more, all of the pages'), and what moji_plausible needs of
   the characters' classes.  1 when the page undoes it and it may be a layer, 0 when not,
   -1 with an exception.  Trying the pages one by one in order, each given up at its first
   wrong byte, costs less than reading all of them at once: most mojibake goes through the
   first page or two tried. */
enum { MOJI_ROWLESS = 1, MOJI_NEVER = 2, MOJI_ODD = 4 };

static int
moji_undo(moji_ctx *c, moji_item *x, int k, Py_UCS4 *out, uint16_t *rows)
{
    const unsigned char *column = c->t.cols + k * c->t.nrows;
    const uint16_t *from = x->rows;
    /* The tables held apart: the stores may alias the ctx to the compiler. */
    const unsigned char *classes = c->classes, *groups = c->groups;
    const uint16_t *index = c->t.rows;
    const Py_UCS4 last = c->t.last;
    Py_ssize_t o = 0, n = x->len;
    /* Of the characters so far: MOJI_ROWLESS, MOJI_NEVER, MOJI_ODD (one register). */
    unsigned seen = 0;
    int group = 0;
    /* Its bytes through the page: 0 where the page does not hold a character. */
    unsigned char *bytes = c->bytes;
    for (Py_ssize_t i = 0; i < n; i++) {
        bytes[i] = column[from[i]];
    }
    for (Py_ssize_t i = 0; i < n;) {
        Py_UCS4 cp;
        Py_ssize_t len = sequence_at(bytes, i, n, &cp);
        /* Malformed, cut by the run's end, or a byte the page does not hold (which alone
           decodes to U+0000: an overlong one is malformed). */
        if (len <= 0 || cp == NOT_A_CHAR || cp == 0) {
            return 0;
        }
        i += len;
        /* A character of the repair, judged without a branch but the class asked of a
           new one; a character no repair gives and no page holds is found at the end. */
        int cls = classes[cp] ? classes[cp] : moji_class_asked(c, cp);
        if (cls < 0) {
            return -1;
        }
        unsigned g = groups[cls & MR_GROUP], r = cp <= last ? index[cp] : 0;
        unsigned kg = (unsigned)cls & MR_GROUP, rowless = r == 0, never = g & MG_NO;
        out[o] = cp;
        rows[o++] = (uint16_t)r;
        /* For moji_plausible: a C1 control, a character no repair gives, two scripts. */
        unsigned odd = (cp - 0x80u < 0x20u) | never |
                       (!(g & MG_NONE) & (group != 0) & ((unsigned)group != kg));
        seen |= rowless * MOJI_ROWLESS | (rowless & never) * MOJI_NEVER | odd * MOJI_ODD;
        group = g & MG_NONE ? group : (int)kg;
    }
    if (seen & MOJI_NEVER) {
        return 0;
    }
    x->rep = out;
    x->rlen = o;
    x->rrows = rows;
    x->undone[0] = (unsigned char)k;
    x->nundone = 1;
    x->deep = !(seen & MOJI_ROWLESS) && o > 1;
    x->first = moji_class(c, out[0]); /* known by now */
    x->odd = (seen & MOJI_ODD) != 0;
    x->group = group;
    return 1;
}

/* Whether the run looks like mojibake as it is (_Rules.reads_badly in the twin). */
static int
moji_reads_badly(const moji_ctx *c, const moji_item *x)
{
    const uint16_t *rows = x->rows;
    Py_ssize_t n = x->len;
    unsigned f1 = c->flags[rows[0]], f2 = c->flags[rows[1]], f = f1;
    /* A lower-case letter before a capital, one of them not ASCII (the run's are not). */
    if ((f1 & MR_RARE) || (moji_islower(x->before) && (f1 & MR_UPPER))) {
        return 1;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        unsigned g = c->flags[rows[i]];
        if ((g & MR_RARE) || ((f & MR_LOWER) && (g & MR_UPPER))) {
            return 1;
        }
        f = g;
    }
    if ((f & MR_LOWER) && moji_isupper(x->after)) {
        return 1;
    }
    if (n >= 3) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (moji_symbolic(c->flags[rows[i]])) {
                return 1;
            }
        }
        return 0;
    }
    Py_UCS4 second = x->second;
    if (f1 & MR_TELL) {
        if (second == 0xA0) {
            return (f1 & MR_TELL_NBSP) != 0;
        }
        return moji_symbolic(f2) || ((f1 & MR_TELL_LATIN) && second <= 0x24F);
    }
    if (!moji_symbolic(f2) || (f2 & MR_SPACE)) {
        return 0;
    }
    if (f2 & MR_PUNCT) {
        return moji_isalpha(x->after) != 0;
    }
    return moji_isalpha(x->before) || moji_isalpha(x->after);
}

/* Whether the repair reads as text between the run's neighbours: no C1 control, one
   script at most (both read by moji_undo), no stray combining mark, no other
   alphabet glued to an ASCII word. */
static int
moji_plausible(const moji_ctx *c, const moji_item *x)
{
    const Py_UCS4 *r = x->rep;
    int group = x->group, first = x->first;
    if (x->odd) {
        return 0;
    }
    Py_UCS4 b = x->before, a = x->after;
    if ((first & MR_COMBINING) && !(r[0] >= 0x300 && r[0] <= 0x36F && moji_isalpha(b))) {
        return 0;
    }
    unsigned g = group ? c->groups[group] : 0;
    int b_letter = b < 0x80 && moji_isalpha(b),
        a_letter = a < 0x80 && moji_isalpha(a);
    if (b_letter && a_letter) {
        return !group || (g & MG_LATIN);
    }
    return !((g & MG_NOT_IN_LATIN) && ((b_letter && moji_isalpha(r[0])) ||
                                       (a_letter && moji_isalpha(r[x->rlen - 1]))));
}

/* The runs' repairs through page k, checked: 1 when every one goes through it and may be
   a layer. */
static int
moji_try_page(moji_ctx *c, moji_item *runs, Py_ssize_t nruns, int level, int k)
{
    Py_UCS4 *out = c->reps[level];
    uint16_t *rows = c->rrows[level];
    for (Py_ssize_t i = 0; i < nruns; i++) {
        int p = moji_undo(c, &runs[i], k, out, rows);
        if (p <= 0) {
            return p;
        }
        out += runs[i].rlen;
        rows += runs[i].rlen;
    }
    return 1;
}

/* The deepest repair of every run, each layer through the first page that repairs them
   all (core/_mojibake_native.py's _Rules.peel): 1 found, 0 none, -1 with an exception. */
static int
moji_peel(moji_ctx *c, moji_item *runs, Py_ssize_t nruns, int depth, int shown)
{
    int level = MOJI_LAYERS - depth, bad = shown ? 1 : -1;
    /* The pages through which every run starts with a lead byte and ends with a last
       byte of UTF-8: the others cannot undo them, and are not tried. */
    uint32_t tried = c->t.all;
    for (Py_ssize_t i = 0; i < nruns; i++) {
        const moji_bits *first = &c->t.bits[runs[i].rows[0]];
        const moji_bits *last = &c->t.bits[runs[i].rows[runs[i].len - 1]];
        uint32_t ascii = last->lead & ~(last->lead2 | last->lead3 | last->lead4);
        tried &= first->lead & (last->cont | ascii);
    }
    for (; tried; tried &= tried - 1) {
        int k = __builtin_ctz(tried);
        int p = moji_try_page(c, runs, nruns, level, k);
        if (p <= 0) {
            if (p < 0) {
                return -1;
            }
            continue;
        }
        for (Py_ssize_t i = 0; bad < 0 && i < nruns; i++) {
            bad = moji_reads_badly(c, &runs[i]) ? 1 : (i == nruns - 1 ? 0 : -1);
        }
        if (!bad) {
            continue;
        }
        int all_done = 1, rest_done = 1, deep_done = 1;
        Py_ssize_t ndeep = 0;
        moji_item *sub = level + 1 < MOJI_LAYERS ? c->items[level + 1] : NULL;
        for (Py_ssize_t i = 0; i < nruns; i++) {
            moji_item *x = &runs[i];
            x->done = moji_plausible(c, x);
            all_done &= x->done;
            if (x->deep && sub) {
                moji_item *y = &sub[ndeep++];
                y->second = x->rep[1];
                y->rows = x->rrows;
                y->len = x->rlen;
                y->parent = i;
                y->before = x->before;
                y->after = x->after;
                deep_done &= x->done;
            }
            else {
                rest_done &= x->done;
            }
        }
        if (depth > 1 && ndeep && rest_done) {
            int f = moji_peel(c, sub, ndeep, depth - 1, !deep_done);
            if (f < 0) {
                return -1;
            }
            if (f) {
                for (Py_ssize_t j = 0; j < ndeep; j++) {
                    moji_item *x = &runs[sub[j].parent];
                    x->rep = sub[j].rep;
                    x->rlen = sub[j].rlen;
                    memcpy(x->undone + 1, sub[j].undone, (size_t)sub[j].nundone);
                    x->nundone = 1 + sub[j].nundone;
                }
                return 1;
            }
        }
        if (all_done) {
            return 1;
        }
    }
    return 0;
}

/* buf (of *cap items of `size` bytes) with room for `need` items: the same, or grown (a
   new *cap); NULL with an exception. */
static void *
moji_room(void *buf, Py_ssize_t *cap, Py_ssize_t need, size_t size)
{
    if (need <= *cap) {
        return buf;
    }
    Py_ssize_t grown = 2 * need + 64;
    void *p = PyMem_Realloc(buf, (size_t)grown * size);
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *cap = grown;
    return p;
}

/* Room for n more repairs and m more characters of replacements; -1 with an exception. */
static int
moji_grow(moji_ctx *c, Py_ssize_t n, Py_ssize_t m)
{
    moji_fix *f = moji_room(c->fixes, &c->capfixes, c->nfixes + n, sizeof *f);
    if (f == NULL) {
        return -1;
    }
    c->fixes = f;
    Py_UCS4 *s = moji_room(c->chars, &c->capchars, c->nchars + m, sizeof *s);
    if (s == NULL) {
        return -1;
    }
    c->chars = s;
    return 0;
}

/* The repairs of the stretch at s of the text (its n characters, their rows and the
   edges of their runs in c->srows and c->edges), between `before` and `after`, added to
   c->fixes (core/_mojibake_native.py's _Rules.decide); -1 with an exception. */
static int
moji_decide(moji_ctx *c, int kind, const void *data, Py_ssize_t s, Py_ssize_t n,
            Py_ssize_t nedges, Py_UCS4 before, Py_UCS4 after)
{
    const uint16_t *rows = c->srows;
    const Py_ssize_t *edges = c->edges;
    moji_item *runs = c->items[0];
    Py_ssize_t nruns = 0;
    for (Py_ssize_t k = 0; k < nedges; k += 2) {
        Py_ssize_t a = edges[k], e = edges[k + 1];
        if (e - a == 1) {
            return 0; /* a lone character of the pages: correct text, the line is left */
        }
        moji_item *x = &runs[nruns++];
        x->rows = rows + a;
        x->second = PyUnicode_READ(kind, data, s + a + 1);
        x->len = e - a;
        x->parent = a;
        x->before = a ? PyUnicode_READ(kind, data, s + a - 1) : before;
        x->after = e < n ? PyUnicode_READ(kind, data, s + e) : after;
    }
    int found = moji_peel(c, runs, nruns, MOJI_LAYERS, 0);
    if (found <= 0) {
        return found;
    }
    if (nruns == 1 && runs[0].rlen == 1) {
        /* One letter of an alphabet other than Latin, alone: too little to go on. */
        int k = moji_class(c, runs[0].rep[0]);
        if (k < 0) {
            return -1;
        }
        if (c->groups[k & MR_GROUP] & MG_ALPHABET) {
            return 0;
        }
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < nruns; i++) {
        total += runs[i].rlen;
    }
    if (moji_grow(c, nruns, total + MOJI_SHORT) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nruns; i++) {
        moji_fix *f = &c->fixes[c->nfixes++];
        f->a = s + runs[i].parent;
        f->b = f->a + runs[i].len;
        f->at = c->nchars;
        f->len = runs[i].rlen;
        memcpy(f->undone, runs[i].undone, sizeof f->undone);
        f->nundone = runs[i].nundone;
        /* Most repairs are short: copied as MOJI_SHORT characters, in one move (both
           buffers have room past their last one). */
        Py_ssize_t len = runs[i].rlen <= MOJI_SHORT ? MOJI_SHORT : runs[i].rlen;
        memcpy(c->chars + c->nchars, runs[i].rep, (size_t)len * sizeof(Py_UCS4));
        c->nchars += runs[i].rlen;
    }
    return 0;
}

static inline int
moji_line_end(Py_UCS4 ch)
{
    return ch == '\n' || ch == '\r';
}

/* The first run at or after `start` that could be undone (find_moji), or -1. */
static Py_ssize_t
moji_next_pair(const moji_ctx *c, PyObject *buf, Py_ssize_t start, Py_ssize_t longest)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(buf);
    const void *data = PyUnicode_DATA(buf);
    if (PyUnicode_IS_ASCII(buf)) {
        return -1;
    }
    switch (PyUnicode_KIND(buf)) {
    case PyUnicode_1BYTE_KIND:
        return moji_scan_Py_UCS1(&c->t, data, n, start, longest);
    case PyUnicode_2BYTE_KIND:
        return moji_scan_Py_UCS2(&c->t, data, n, start, longest);
    default:
        return moji_scan_Py_UCS4(&c->t, data, n, start, longest);
    }
}

/* The buffers for the decisions, made for a first stretch, as long as the longest
   stretch of `n` characters at most can be (one past the bound is read); -1 with an
   exception. */
static int
moji_buffers(moji_ctx *c, Py_ssize_t n)
{
    /* Per layer, the runs of a stretch (at most half its length) and their repairs. */
    size_t limit = (size_t)(n < c->limit + 1 ? n : c->limit + 1), half = limit / 2 + 1;
    size_t per = limit * (sizeof(Py_UCS4) + sizeof(uint16_t)) + half * sizeof(moji_item);
    size_t edges = (limit + 2) * sizeof(Py_ssize_t); /* a run's edges, a slot past them */
    char *at = PyMem_Malloc(edges + limit * sizeof(uint16_t) + MOJI_LAYERS * per +
                            MOJI_SHORT * sizeof(Py_UCS4) + limit);
    if (at == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* The items and edges first, for their alignment; then the characters, the rows. */
    for (int k = 0; k < MOJI_LAYERS; k++, at += half * sizeof(moji_item)) {
        c->items[k] = (moji_item *)at;
    }
    c->edges = (Py_ssize_t *)at;
    at += edges;
    for (int k = 0; k < MOJI_LAYERS; k++, at += limit * sizeof(Py_UCS4)) {
        c->reps[k] = (Py_UCS4 *)at;
    }
    c->srows = (uint16_t *)at;
    for (int k = 0; k < MOJI_LAYERS; k++) {
        c->rrows[k] = (uint16_t *)(at += limit * sizeof(uint16_t));
    }
    /* Past the last rows and the room a short repair's copy may read. */
    c->bytes = (unsigned char *)(at + limit * sizeof(uint16_t) + MOJI_SHORT * sizeof(Py_UCS4));
    return 0;
}

/* The stretch from the first character of the pages at or after *s (*s moved there,
   n when there is none): the rows of its characters into c->srows up to its line end or
   one past the bound, whichever comes first, and where its runs start and end into
   c->edges (their count in *nedges), in one read of the text; the index of its end.
   The edges are found without a branch on the characters (at a run's edges one would be
   mispredicted): each position is written to the next slot, kept only where a run starts
   or ends. */
#define MOJI_READ_STRETCH(TYPE)                                                           \
    static Py_ssize_t moji_read_##TYPE(moji_ctx *c, const TYPE *d, Py_ssize_t *s,         \
                                       Py_ssize_t n, Py_ssize_t *nedges)                  \
    {                                                                                     \
        uint16_t *rows = c->srows;                                                        \
        Py_ssize_t *edges = c->edges, m = 0, i = 0, a = *s;                               \
        /* Held apart: the stores may alias the ctx to the compiler. */                   \
        const uint16_t *index = c->t.rows;                                                \
        const Py_UCS4 last = c->t.last;                                                   \
        unsigned was = 0;                                                                 \
        while (a < n && !(d[a] <= last && index[d[a]])) {                                 \
            a++;                                                                          \
        }                                                                                 \
        *s = a;                                                                           \
        Py_ssize_t stop = n - a < c->limit + 1 ? n : a + c->limit + 1;                    \
        for (const TYPE *p = d + a, *end = d + stop; p < end; p++, i++) {                 \
            Py_UCS4 ch = *p;                                                              \
            /* One test for most characters: no letter is below a carriage return. */    \
            if (ch <= '\r' && (ch == '\n' || ch == '\r')) {                               \
                break;                                                                    \
            }                                                                             \
            unsigned r = ch <= last ? index[ch] : 0, is = (r + 0xFFFFu) >> 16; /* r != 0 */\
            rows[i] = (uint16_t)r;                                                        \
            edges[m] = i;                                                                 \
            m += is ^ was;                                                                \
            was = is;                                                                     \
        }                                                                                 \
        edges[m] = i;                                                                     \
        *nedges = m + was;                                                                \
        return a + i;                                                                     \
    }

MOJI_READ_STRETCH(Py_UCS1)
MOJI_READ_STRETCH(Py_UCS2)
MOJI_READ_STRETCH(Py_UCS4)
#undef MOJI_READ_STRETCH

static Py_ssize_t
moji_read_stretch(moji_ctx *c, const void *data, int kind, Py_ssize_t *s, Py_ssize_t n,
                  Py_ssize_t *nedges)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return moji_read_Py_UCS1(c, data, s, n, nedges);
    case PyUnicode_2BYTE_KIND:
        return moji_read_Py_UCS2(c, data, s, n, nedges);
    default:
        return moji_read_Py_UCS4(c, data, s, n, nedges);
    }
}

/* Where a stretch from s longer than the bound ends: after its last whole run within the
   bound, or at the bound (rows: the stretch's, c->srows, one past the bound included);
   its edges (c->edges, *nedges of them) kept to that end, a run open there closed. */
static Py_ssize_t
moji_cut(moji_ctx *c, Py_ssize_t s, Py_ssize_t limit, Py_ssize_t *nedges)
{
    const uint16_t *rows = c->srows;
    Py_ssize_t e = limit, m = 0;
    while (e > 0 && (!rows[e - 1] || rows[e])) {
        e--;
    }
    e = e > 0 ? e : limit;
    while (m < *nedges && c->edges[m] < e) {
        m++;
    }
    if (m & 1) {
        c->edges[m++] = e;
    }
    *nedges = m;
    return s + e;
}

/* The stretches of buf decided, in order (MojibakeRepairer.transform's loop): the end
   of what is decided, or -1 with an exception. */
static Py_ssize_t
moji_stretches(moji_ctx *c, PyObject *buf, Py_UCS4 before, int final)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(buf), at = 0, pair = -1, limit = c->limit;
    const void *data = PyUnicode_DATA(buf);
    int kind = PyUnicode_KIND(buf), have_pair = 1, warm = 0;
    for (;;) {
        /* A line without a run that could be undone goes out as it is; so does the rest
           of a final text without one.  After a repair the next stretch is decided without
           that search (mojibake comes in lines that follow each other): a stretch without
           such a run is decided with no repair, as it would have been left. */
        Py_ssize_t s = at;
        if (!warm) {
            if (have_pair && pair < at) {
                pair = moji_next_pair(c, buf, at, limit);
                have_pair = pair >= 0;
            }
            if (!have_pair && final) {
                return n;
            }
            s = have_pair ? pair : n;
            while (s > at && !moji_line_end(PyUnicode_READ(kind, data, s - 1))) {
                s--;
            }
        }
        if (s == n) {
            return n;
        }
        if (c->srows == NULL && moji_buffers(c, n) < 0) {
            return -1;
        }
        Py_ssize_t nedges;
        Py_ssize_t e = moji_read_stretch(c, data, kind, &s, n, &nedges);
        if (s == n) {
            return n;
        }
        if (e == (n - s < limit + 1 ? n : s + limit + 1)) {
            if (n > s + limit) {
                e = moji_cut(c, s, limit, &nedges);
            }
            else if (!final) {
                return s;
            }
        }
        Py_UCS4 b = s ? PyUnicode_READ(kind, data, s - 1) : before;
        Py_UCS4 a = e < n ? PyUnicode_READ(kind, data, e) : 0;
        Py_ssize_t fixed = c->nfixes;
        if (moji_decide(c, kind, data, s, e - s, nedges, b, a) < 0) {
            return -1;
        }
        warm = c->nfixes > fixed;
        at = e;
    }
}

/* Characters r[:len] written into odata from o on as TYPE: len either MOJI_SHORT, a
   constant the compiler unrolls, or any other. */
#define MOJI_NARROW(TYPE, odata, o, r, len)                                               \
    do {                                                                                  \
        TYPE *to_ = (TYPE *)(odata) + (o);                                                \
        if ((len) == MOJI_SHORT) {                                                        \
            for (int j_ = 0; j_ < MOJI_SHORT; j_++) {                                     \
                to_[j_] = (TYPE)(r)[j_];                                                  \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (Py_ssize_t j_ = 0; j_ < (len); j_++) {                                   \
                to_[j_] = (TYPE)(r)[j_];                                                  \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* buf[:end] with c's repairs in place; -1 with an exception. */
static PyObject *
moji_output(const moji_ctx *c, PyObject *buf, Py_ssize_t end)
{
    if (c->nfixes == 0) {
        return PyUnicode_Substring(buf, 0, end);
    }
    /* The output holds a repair, so it is not ASCII: only its kind is to be found. */
    int kind = PyUnicode_KIND(buf);
    const void *data = PyUnicode_DATA(buf);
    Py_UCS4 widest = 0xFF, top = kind == PyUnicode_1BYTE_KIND   ? 0xFF
                                 : kind == PyUnicode_2BYTE_KIND ? 0xFFFF
                                                                : 0x10FFFF;
    Py_ssize_t size = end;
    for (Py_ssize_t i = 0; i < c->nfixes; i++) {
        size += c->fixes[i].len - (c->fixes[i].b - c->fixes[i].a);
    }
    /* The repairs' characters or-ed: above 0xFF (0xFFFF) exactly when one of them is. */
    Py_UCS4 any = 0;
    for (Py_ssize_t i = 0; i < c->nchars; i++) {
        any |= c->chars[i];
    }
    widest = any > 0xFFFF ? 0x10FFFF : any > 0xFF ? 0xFFFF : 0xFF;
    for (Py_ssize_t i = 0, from = 0; i <= c->nfixes && widest < top; i++) {
        Py_ssize_t to = i < c->nfixes ? c->fixes[i].a : end;
        for (Py_ssize_t j = from; j < to && widest < top; j++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, j);
            widest = ch > widest ? (ch > 0xFFFF ? 0x10FFFF : 0xFFFF) : widest;
        }
        from = i < c->nfixes ? c->fixes[i].b : end;
    }
    PyObject *out = PyUnicode_New(size, widest);
    if (out == NULL) {
        return NULL;
    }
    int okind = PyUnicode_KIND(out);
    char *odata = PyUnicode_DATA(out);
    const char *idata = data;
    Py_ssize_t o = 0, from = 0, ibytes = PyUnicode_GET_LENGTH(buf) * kind, obytes = size * okind;
    for (Py_ssize_t i = 0; i <= c->nfixes; i++) {
        Py_ssize_t to = i < c->nfixes ? c->fixes[i].a : end;
        if (okind == kind) {
            /* The text between repairs, as it is (a kind is the size of a character):
               mostly a space or a sign, copied as 16 bytes where both texts have room,
               the bytes past it written over next. */
            Py_ssize_t a = from * kind, nb = (to - from) * kind;
            if (nb <= 16 && a + 16 <= ibytes && o * kind + 16 <= obytes) {
                memcpy(odata + o * kind, idata + a, 16);
            }
            else {
                memcpy(odata + o * kind, idata + a, (size_t)nb);
            }
            o += to - from;
        }
        else {
            for (Py_ssize_t j = from; j < to; j++) {
                PyUnicode_WRITE(okind, odata, o++, PyUnicode_READ(kind, data, j));
            }
        }
        if (i == c->nfixes) {
            break;
        }
        const moji_fix *f = &c->fixes[i];
        const Py_UCS4 *r = c->chars + f->at;
        /* A short repair is written as MOJI_SHORT characters in one go where the output
           has room: the buffer of the repairs has room past its last one, and what is
           written past this repair is written over next. */
        Py_ssize_t len = f->len <= MOJI_SHORT && o + MOJI_SHORT <= size ? MOJI_SHORT : f->len;
        switch (okind) {
        case PyUnicode_1BYTE_KIND:
            MOJI_NARROW(Py_UCS1, odata, o, r, len);
            break;
        case PyUnicode_2BYTE_KIND:
            MOJI_NARROW(Py_UCS2, odata, o, r, len);
            break;
        default:
            memcpy(odata + o * 4, r, (size_t)len * 4);
        }
        o += f->len;
        from = f->b;
    }
    return out;
}

/* The repairs as (start, end, replacement, code pages undone); NULL with an exception. */
static PyObject *
moji_events(const moji_ctx *c)
{
    PyObject *list = PyList_New(c->nfixes);
    for (Py_ssize_t i = 0; list && i < c->nfixes; i++) {
        const moji_fix *f = &c->fixes[i];
        PyObject *names = PyTuple_New(f->nundone);
        for (int k = 0; names && k < f->nundone; k++) {
            PyTuple_SET_ITEM(names, k, Py_NewRef(PyTuple_GET_ITEM(c->names, f->undone[k])));
        }
        PyObject *rep = names ? PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND,
                                                          c->chars + f->at, f->len)
                              : NULL;
        if (rep == NULL) {
            Py_XDECREF(names);
            Py_CLEAR(list);
            break;
        }
        /* "N" takes both references, whether the tuple is made or not. */
        PyObject *item = Py_BuildValue("(nnNN)", f->a, f->b, rep, names);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* The rules from the arguments, checked; -1 with an exception. */
static int
moji_ctx_of(module_state *st, moji_ctx *c, PyObject *buf, PyObject *rules, Py_buffer *classes)
{
    if (!PyTuple_Check(rules) || PyTuple_GET_SIZE(rules) != 7) {
        PyErr_SetString(PyExc_TypeError, "moji_repair: rules is (index, pages, width, flags, "
                                         "groups, classify, names)");
        return -1;
    }
    PyObject *r[7];
    for (int i = 0; i < 7; i++) {
        r[i] = PyTuple_GET_ITEM(rules, i);
    }
    PyObject *probe[4] = {buf, r[0], r[1], r[2]};
    if (moji_tables_of(st, probe, &c->t) < 0) {
        return -1;
    }
    if (!PyBytes_Check(r[3]) || PyBytes_GET_SIZE(r[3]) < 2 * c->t.nrows || !PyBytes_Check(r[4]) ||
        PyBytes_GET_SIZE(r[4]) != MR_GROUP + 1 || !PyCallable_Check(r[5]) ||
        !PyTuple_Check(r[6]) || PyTuple_GET_SIZE(r[6]) != c->t.width ||
        classes->len != 0x110000) {
        PyErr_SetString(PyExc_ValueError, "moji_repair: two bytes of flags a row, 128 groups, a "
                                          "classifier, a name a page, 0x110000 classes");
        return -1;
    }
    c->flags = (const uint16_t *)PyBytes_AS_STRING(r[3]);
    c->groups = (const unsigned char *)PyBytes_AS_STRING(r[4]);
    c->classify = r[5];
    c->names = r[6];
    c->classes = classes->buf;
    c->bits = Py_NewRef(st->moji_held); /* the classifier may run any code */
    return 0;
}

static void
moji_ctx_free(moji_ctx *c)
{
    PyMem_Free(c->items[0]); /* the start of the buffers */
    PyMem_Free(c->fixes);
    PyMem_Free(c->chars);
    Py_XDECREF(c->bits);
}

static PyObject *
moji_repair(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1]) ||
        PyUnicode_GET_LENGTH(args[1]) > 1) {
        PyErr_SetString(PyExc_TypeError, "moji_repair(buf: str, before: str (0 or 1 "
                                         "character), final, max_carry, events, rules, classes)");
        return NULL;
    }
    int final = PyObject_IsTrue(args[2]), events = PyObject_IsTrue(args[4]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (final < 0 || events < 0 || (limit == -1 && PyErr_Occurred())) {
        return NULL;
    }
    if (limit < 4 || limit > PY_SSIZE_T_MAX / (8 * (Py_ssize_t)sizeof(moji_item))) {
        PyErr_SetString(PyExc_ValueError, "moji_repair: max_carry must be at least 4");
        return NULL;
    }
    Py_buffer classes;
    if (PyObject_GetBuffer(args[6], &classes, PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    moji_ctx c = {0};
    PyObject *result = NULL;
    if (moji_ctx_of(get_state(module), &c, args[0], args[5], &classes) < 0) {
        goto done;
    }
    c.limit = limit;
    Py_UCS4 before = PyUnicode_GET_LENGTH(args[1]) ? PyUnicode_READ_CHAR(args[1], 0) : 0;
    Py_ssize_t end = moji_stretches(&c, args[0], before, final);
    if (end < 0) {
        goto done;
    }
    PyObject *out = moji_output(&c, args[0], end);
    PyObject *fixes = out && events ? moji_events(&c) : Py_NewRef(Py_None);
    if (out && fixes) {
        result = Py_BuildValue("(NnN)", out, end, fixes);
    }
    else {
        Py_XDECREF(out);
        Py_XDECREF(fixes);
    }
done:
    moji_ctx_free(&c);
    PyBuffer_Release(&classes);
    return result;
}
