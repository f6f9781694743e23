/* Units.feed: the scanner call of one Utf8Decoder.decode.  Part of the _speedups
   translation unit (see _speedups.c). */

static int
ready_check(module_state *st)
{
    if (!st->ready) {
        PyErr_SetString(PyExc_RuntimeError, "utf8stream accelerator: setup() not called");
        return -1;
    }
    return 0;
}

/* head + data as one bytes object (a new reference); both must be bytes. */
static inline PyObject *
joined(UnitsObject *self, PyObject *head, PyObject *data)
{
    if (!PyBytes_Check(head) || !PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "pending and data must be bytes");
        return NULL;
    }
    if (ready_check(self->state) < 0) {
        return NULL;
    }
    Py_ssize_t nh = PyBytes_GET_SIZE(head), nd = PyBytes_GET_SIZE(data);
    if (nh == 0) {
        Py_INCREF(data);
        return data;
    }
    PyObject *buf = PyBytes_FromStringAndSize(NULL, nh + nd);
    if (buf != NULL) {
        memcpy(PyBytes_AS_STRING(buf), PyBytes_AS_STRING(head), nh);
        memcpy(PyBytes_AS_STRING(buf) + nh, PyBytes_AS_STRING(data), nd);
    }
    return buf;
}

/* The input of feed(): pending + data as one bytes object (a new reference; data
   alone if not ``join``), and the absolute offset of that buffer's first byte, given
   the offset ``position`` where it ends. */
static PyObject *
parse_input(UnitsObject *self, PyObject *head, PyObject *data, int join, long long position,
            long long *base)
{
    PyObject *buf;
    if (join) {
        buf = joined(self, head, data);
    }
    else {
        /* the caller checked that data is bytes */
        buf = ready_check(self->state) < 0 ? NULL : Py_NewRef(data);
    }
    if (buf == NULL) {
        return NULL;
    }
    *base = position - PyBytes_GET_SIZE(buf);
    self->fail_start = -1;
    Py_CLEAR(self->partial);
    return buf;
}

/* A callback cannot decode with the object that is reporting to it: the call in
   progress owns the string being filled and the counts (the decoder refuses it too). */
static int
refuse_reentry(UnitsObject *self)
{
    if (self->reporting) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a Utf8Decoder cannot decode from inside its own on_malformed callback");
        return -1;
    }
    return 0;
}

/* The separator argument of lines(): -1 (universal newlines) or an ASCII byte; it needs
   a one-character replacement, so that each byte that is not a character yields one
   (with "ignore", \r <bad byte> \n would be one newline in the text, two in the bytes).
   -2 on error. */
static long
parse_sep(UnitsObject *self, PyObject *arg)
{
    if (self->maps || self->repl_len != 1) {
        PyErr_SetString(PyExc_ValueError, "lines need a one-character replacement");
        return -2;
    }
    long sep = PyLong_AsLong(arg);
    if (sep == -1 && PyErr_Occurred()) {
        return -2;
    }
    if (sep < -1 || sep > 127) {
        PyErr_SetString(PyExc_ValueError, "sep must be -1 or an ASCII byte value");
        return -2;
    }
    return sep;
}

/* Append an int to a list; -1 on error. */
static int
append_int(PyObject *list, long long value)
{
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL) {
        return -1;
    }
    int err = PyList_Append(list, v);
    Py_DECREF(v);
    return err;
}

static PyObject *
pair(PyObject *a, PyObject *b)
{
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyObject *t = PyTuple_New(2);
    if (t == NULL) {
        Py_DECREF(a);
        Py_DECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    return t;
}

/* feed(pending, data, final, position) -> (text, pending)

   One whole ordinary Utf8Decoder.decode call: ``pending`` (a held proper prefix) goes
   in front of ``data``, which ends at the absolute offset ``position``; what is left at
   the end is the new pending prefix.  When the callback raises, fail_start is relative
   to pending + data. */
/* How many bytes of data complete the held prefix ``head`` into one well-formed
   character (*cp); 0 if they do not (a malformed unit, or still a prefix: the caller
   then decodes head + data as one buffer). */
static Py_ssize_t
bridge(PyObject *head, PyObject *data, Py_UCS4 *cp)
{
    Py_ssize_t nh = PyBytes_GET_SIZE(head), nd = PyBytes_GET_SIZE(data);
    unsigned char joint[8];
    if (nh >= 4) {
        return 0;
    }
    Py_ssize_t take = nd < 4 ? nd : 4;
    memcpy(joint, PyBytes_AS_STRING(head), nh);
    memcpy(joint + nh, PyBytes_AS_STRING(data), take);
    Py_ssize_t k = sequence_at(joint, 0, nh + take, cp);
    return k > nh && *cp != NOT_A_CHAR ? k - nh : 0;
}

/* feed()'s work, shared with decode(): the text of head + data, which ends at
   ``position``; *held: the new held prefix (a new reference).  NULL on error. */
static PyObject *
feed_core(UnitsObject *self, PyObject *head, PyObject *data, int final, long long position,
          PyObject **held)
{
    /* A held prefix usually becomes one character with the first bytes of data: that
       character goes first, and data is decoded where it lies, not copied behind the
       prefix (a 64 KiB chunk of emoji or CJK text ends in a prefix more often than not). */
    Py_UCS4 first = NOT_A_CHAR;
    Py_ssize_t took = 0, nh = 0;
    *held = NULL;
    if (!self->maps && PyBytes_Check(head) && PyBytes_Check(data) &&
        (nh = PyBytes_GET_SIZE(head)) > 0) {
        took = bridge(head, data, &first);
    }
    long long base;
    PyObject *buf = parse_input(self, head, data, !took, position, &base);
    if (buf == NULL) {
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);
    Py_ssize_t n = PyBytes_GET_SIZE(buf);
    Py_ssize_t stop, unit;
    Py_UCS4 bits = 0;
    Py_INCREF(self);
    PyObject *text;
    if (self->maps) {
        text = own_mapped(self, b, n, base, final, &stop);
    }
    else if (took) {
        text = own_segment_after(self, first, b, took, n, n, base, final, &stop, &bits, &unit);
        if (text == NULL && self->fail_start >= 0) {
            /* fail_start and partial are the caller's: of pending + data. */
            self->fail_start += nh;
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyObject *whole = joined(self, head, data);
            if (whole == NULL) {
                PyErr_Clear(); /* the failure already being raised says enough */
            }
            PyErr_Restore(type, value, traceback);
            if (whole != NULL) {
                set_partial_by_replay(self, (const unsigned char *)PyBytes_AS_STRING(whole),
                                      base - nh);
                Py_DECREF(whole);
            }
        }
    }
    else {
        text = own_segment(self, b, 0, n, n, base, final, &stop, &bits, &unit);
        if (text == NULL) {
            set_partial_by_replay(self, b, base);
        }
    }
    if (text != NULL) {
        self->chars += PyUnicode_GET_LENGTH(text);
        *held = PyBytes_FromStringAndSize((const char *)b + stop, n - stop);
        if (*held == NULL) {
            Py_CLEAR(text);
        }
    }
    Py_DECREF(buf);
    Py_DECREF(self);
    return text;
}

/* feed(pending, data, final, position) -> (text, pending)

   One whole ordinary Utf8Decoder.decode call: ``pending`` (a held proper prefix) goes
   in front of ``data``, which ends at the absolute offset ``position``; what is left at
   the end is the new pending prefix.  When the callback raises, fail_start is relative
   to pending + data. */
static PyObject *
Units_feed(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "feed(pending: bytes, data: bytes, final, position)");
        return NULL;
    }
    if (refuse_reentry(self) < 0) {
        return NULL;
    }
    int final = PyObject_IsTrue(args[2]);
    if (final < 0) {
        return NULL;
    }
    long long position = PyLong_AsLongLong(args[3]);
    if (position == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *held;
    PyObject *text = feed_core(self, args[0], args[1], final, position, &held);
    return pair(text, held);
}

