/* Optional accelerator for utf8stream (the package works without it).
 *
 * 1. A codecs error handler written in C for the decoder's common policies (a constant
 *    replacement: "replace" or "ignore").  CPython's own UTF-8 decoder stays the hot path;
 *    for each maximal subpart it finds, it calls this handler, which classifies the unit,
 *    counts it, builds the Malformed event and hands it to the callback -- the same work
 *    as decoder._c_error_handler, without a Python frame per unit.
 *
 *    Units(replacement, callback).feed(pending, data, final, position) is one ordinary
 *    Utf8Decoder.decode call: codecs.utf_8_decode(pending + data, <this handler>, final)
 *    plus what happens to the unconsumed tail.  When the callback raises, fail_start /
 *    resume_at tell where the failing unit was (as the Python handler records them).
 *
 * 2. BufferedAsyncIterator: `async for` over items that are mostly ready already.
 *    __anext__ hands out the next ready item through an awaitable that completes at once,
 *    and calls the Python coroutine function `refill` only when none is ready.  A Python
 *    `async def __anext__` costs a coroutine per item, an async generator a frame resume;
 *    this costs a C call.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

/* ---- module state (set once by setup()) ------------------------------------------- */

enum {
    K_UNEXPECTED_CONTINUATION,
    K_OVERLONG,
    K_SURROGATE,
    K_OUT_OF_RANGE,
    K_INVALID_BYTE,
    K_INCOMPLETE_SEQUENCE,
    K_TRUNCATED_AT_END,
    N_KINDS
};

static PyObject *kinds[N_KINDS];  /* MalformedKind members, in the order above */
static PyTypeObject *event_type;  /* Malformed */
static Py_ssize_t slot_offset, slot_data, slot_kind;  /* where its slots are */
static int ready;

/* ---- Units -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *replacement; /* str */
    PyObject *callback;    /* callable or None */
    PyObject *result;      /* the (replacement, end) tuple, reused when nobody holds it */
    long long counts[N_KINDS];
    long long chars;       /* characters returned by feed() since the last drain */
    Py_ssize_t fail_start;
    long long resume_at;
} UnitsObject;

/* What the handler needs to know about the decode call it serves. */
typedef struct {
    UnitsObject *units;
    const unsigned char *buf;
    Py_ssize_t len;
    long long base;
} Call;

static THREAD_LOCAL Call *current_call;

static int
classify(const unsigned char *buf, Py_ssize_t len, Py_ssize_t start, Py_ssize_t end)
{
    unsigned char b0 = buf[start];
    if (b0 < 0xC0) {
        return K_UNEXPECTED_CONTINUATION; /* never called for ASCII */
    }
    if (b0 < 0xC2) {
        return K_OVERLONG;
    }
    if (b0 >= 0xF8) {
        return K_INVALID_BYTE;
    }
    if (b0 >= 0xF5) {
        return K_OUT_OF_RANGE;
    }
    if (end < len) {
        if (end - start == 1 && buf[end] >= 0x80 && buf[end] <= 0xBF) {
            switch (b0) {
            case 0xE0:
            case 0xF0:
                return K_OVERLONG;
            case 0xED:
                return K_SURROGATE;
            case 0xF4:
                return K_OUT_OF_RANGE;
            default:
                break;
            }
        }
        return K_INCOMPLETE_SEQUENCE;
    }
    return K_TRUNCATED_AT_END;
}

static PyObject *
make_event(long long offset, const unsigned char *data, Py_ssize_t n, int kind)
{
    PyObject *off = PyLong_FromLongLong(offset);
    if (off == NULL) {
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)data, n);
    if (bytes == NULL) {
        Py_DECREF(off);
        return NULL;
    }
    PyObject *ev = event_type->tp_alloc(event_type, 0);
    if (ev == NULL) {
        Py_DECREF(off);
        Py_DECREF(bytes);
        return NULL;
    }
    /* The slots are empty: fill them directly (what the slot descriptors do). */
    *(PyObject **)((char *)ev + slot_offset) = off;
    *(PyObject **)((char *)ev + slot_data) = bytes;
    Py_INCREF(kinds[kind]);
    *(PyObject **)((char *)ev + slot_kind) = kinds[kind];
    /* An int, a bytes object and an enum member: the event can never be part of a
       reference cycle, so the collector need not track it (as CPython does for tuples
       of atomic values). */
    if (PyObject_IS_GC(ev)) {
        PyObject_GC_UnTrack(ev);
    }
    return ev;
}

static PyObject *
error_handler(PyObject *module, PyObject *exc)
{
    Call *call = current_call;
    if (call == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the utf8stream accelerator's error handler is only for Units.feed");
        return NULL;
    }
    Py_ssize_t start, end;
    if (PyUnicodeDecodeError_GetStart(exc, &start) < 0 ||
        PyUnicodeDecodeError_GetEnd(exc, &end) < 0) {
        return NULL;
    }
    if (start < 0 || end <= start || end > call->len) {
        PyErr_SetString(PyExc_SystemError, "utf8stream accelerator: unit out of range");
        return NULL;
    }
    UnitsObject *u = call->units;
    int kind = classify(call->buf, call->len, start, end);

    u->counts[kind]++;

    if (u->callback != Py_None) {
        u->fail_start = start;
        u->resume_at = call->base + end;
        PyObject *ev = make_event(call->base + start, call->buf + start, end - start, kind);
        if (ev == NULL) {
            return NULL;
        }
        PyObject *res = PyObject_CallOneArg(u->callback, ev);
        Py_DECREF(ev);
        if (res == NULL) {
            return NULL;
        }
        Py_DECREF(res);
    }
    PyObject *pos = PyLong_FromSsize_t(end);
    if (pos == NULL) {
        return NULL;
    }
    PyObject *result = u->result;
    if (result != NULL && Py_REFCNT(result) == 1) {
        /* CPython's caller has parsed and released the tuple of the previous unit. */
        Py_SETREF(PyTuple_GET_ITEM(result, 1), pos);
    }
    else {
        result = PyTuple_New(2);
        if (result == NULL) {
            Py_DECREF(pos);
            return NULL;
        }
        Py_INCREF(u->replacement);
        PyTuple_SET_ITEM(result, 0, u->replacement);
        PyTuple_SET_ITEM(result, 1, pos);
        Py_XSETREF(u->result, result);
    }
    Py_INCREF(result);
    return result;
}

#define HANDLER_NAME "utf8stream.decoder.accelerated"

/* Decode buf[0:len] with the handler; base is the absolute offset of buf[0]. */
static PyObject *
run(UnitsObject *self, const char *buf, Py_ssize_t len, long long base, int final,
    Py_ssize_t *consumed)
{
    Call call;
    call.units = self;
    call.buf = (const unsigned char *)buf;
    call.len = len;
    call.base = base;
    *consumed = len;
    Call *saved = current_call;
    current_call = &call;
    PyObject *text = PyUnicode_DecodeUTF8Stateful(buf, len, HANDLER_NAME,
                                                  final ? NULL : consumed);
    current_call = saved;
    return text;
}

static int
ready_check(void)
{
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "utf8stream accelerator: setup() not called");
        return -1;
    }
    return 0;
}

/* feed(pending, data, final, position) -> (text, pending)

   One whole ordinary Utf8Decoder.decode call: ``pending`` (a held proper prefix) goes
   in front of ``data``, which ends at the absolute offset ``position``; what is left at
   the end is the new pending prefix, except ED A0..BF (CPython holds it, but no byte
   can complete it), whose two units are decoded at once.  When the callback raises,
   fail_start is relative to pending + data, as for a single decode of that buffer. */
static PyObject *
Units_feed(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "feed(pending: bytes, data: bytes, final, position)");
        return NULL;
    }
    if (ready_check() < 0) {
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
    PyObject *buf;
    if (PyBytes_GET_SIZE(args[0]) == 0) {
        buf = args[1];
        Py_INCREF(buf);
    }
    else {
        buf = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(args[0]) + PyBytes_GET_SIZE(args[1]));
        if (buf == NULL) {
            return NULL;
        }
        memcpy(PyBytes_AS_STRING(buf), PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]));
        memcpy(PyBytes_AS_STRING(buf) + PyBytes_GET_SIZE(args[0]), PyBytes_AS_STRING(args[1]),
               PyBytes_GET_SIZE(args[1]));
    }
    Py_ssize_t len = PyBytes_GET_SIZE(buf);
    const char *p = PyBytes_AS_STRING(buf);
    long long base = position - len;
    Py_ssize_t consumed;
    PyObject *pending = NULL;
    Py_INCREF(self);
    PyObject *text = run(self, p, len, base, final, &consumed);
    if (text == NULL) {
        goto done;
    }
    if (consumed == len) {
        pending = PyBytes_FromStringAndSize(NULL, 0);
    }
    else {
        const unsigned char *tail = (const unsigned char *)p + consumed;
        Py_ssize_t n = len - consumed;
        if (tail[0] == 0xED && n >= 2 && tail[1] >= 0xA0) {
            /* certain already: decode its units now */
            Py_ssize_t used;
            PyObject *more = run(self, (const char *)tail, n, base + consumed, 1, &used);
            if (more == NULL) {
                self->fail_start += consumed;
                Py_CLEAR(text);
                goto done;
            }
            PyUnicode_Append(&text, more);
            Py_DECREF(more);
            if (text == NULL) {
                goto done;
            }
            pending = PyBytes_FromStringAndSize(NULL, 0);
        }
        else {
            pending = PyBytes_FromStringAndSize((const char *)tail, n);
        }
    }
    if (pending == NULL) {
        Py_CLEAR(text);
        goto done;
    }
    self->chars += PyUnicode_GET_LENGTH(text);
done:
    Py_DECREF(buf);
    Py_DECREF(self);
    if (text == NULL) {
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(text);
        Py_DECREF(pending);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, text);
    PyTuple_SET_ITEM(result, 1, pending);
    return result;
}

static PyObject *
Units_drain(UnitsObject *self, PyObject *Py_UNUSED(ignored))
{
    /* The units counted since the last drain, by kind (the order given to setup()),
       then the characters feed() returned. */
    PyObject *t = PyTuple_New(N_KINDS + 1);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < N_KINDS; i++) {
        PyObject *n = PyLong_FromLongLong(self->counts[i]);
        if (n == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, n);
    }
    PyObject *chars = PyLong_FromLongLong(self->chars);
    if (chars == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyTuple_SET_ITEM(t, N_KINDS, chars);
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return t;
}

static int
Units_init(UnitsObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"replacement", "callback", NULL};
    PyObject *replacement, *callback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO", kwlist, &replacement, &callback)) {
        return -1;
    }
    Py_INCREF(replacement);
    Py_XSETREF(self->replacement, replacement);
    Py_INCREF(callback);
    Py_XSETREF(self->callback, callback);
    Py_CLEAR(self->result);
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return 0;
}

static int
Units_traverse(UnitsObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->replacement);
    Py_VISIT(self->callback);
    Py_VISIT(self->result);
    return 0;
}

static int
Units_clear(UnitsObject *self)
{
    Py_CLEAR(self->replacement);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->result);
    return 0;
}

static void
Units_dealloc(UnitsObject *self)
{
    PyObject_GC_UnTrack(self);
    Units_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Units_methods[] = {
    {"feed", (PyCFunction)(void (*)(void))Units_feed, METH_FASTCALL,
     "feed(pending, data, final, position) -> (text, pending)"},
    {"drain", (PyCFunction)Units_drain, METH_NOARGS,
     "drain() -> tuple: units counted by kind since the last drain"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Units_members[] = {
    {"fail_start", T_PYSSIZET, offsetof(UnitsObject, fail_start), READONLY,
     "start of the unit whose callback raised, in the data of that call"},
    {"resume_at", T_LONGLONG, offsetof(UnitsObject, resume_at), READONLY,
     "absolute offset just past that unit"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject UnitsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "utf8stream._speedups.Units",
    .tp_basicsize = sizeof(UnitsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Units(replacement, callback): the C error handler's state for one decoder",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Units_init,
    .tp_dealloc = (destructor)Units_dealloc,
    .tp_traverse = (traverseproc)Units_traverse,
    .tp_clear = (inquiry)Units_clear,
    .tp_methods = Units_methods,
    .tp_members = Units_members,
};

/* ---- BufferedAsyncIterator ---------------------------------------------------------- */

/* `async for` over a list of ready items, taken from its end (list.pop() order), and a
   coroutine function that is called, with the iterator as its argument, when the list is
   empty.  The list is shared with the owner (it may pop from it too); refill() installs
   a new list with feed() and returns the next item, or raises StopAsyncIteration. */

typedef struct {
    PyObject_HEAD
    PyObject *items;  /* list or NULL */
    PyObject *refill; /* refill(iterator) -> awaitable of the next item */
} BufferedObject;

static PyTypeObject BufferedType;

static PyObject *
Buffered_anext(BufferedObject *self)
{
    if (self->items != NULL && PyList_GET_SIZE(self->items) > 0) {
        /* The object itself is the awaitable; the item is taken when it is awaited, so
           an __anext__() result that is never awaited loses nothing. */
        Py_INCREF(self);
        return (PyObject *)self;
    }
    return PyObject_CallOneArg(self->refill, (PyObject *)self);
}

static PyObject *
Buffered_await(BufferedObject *self)
{
    Py_INCREF(self);
    return (PyObject *)self;
}

/* The next item (a new reference), or NULL with an exception set. */
static PyObject *
Buffered_pop(BufferedObject *self)
{
    Py_ssize_t n = self->items == NULL ? 0 : PyList_GET_SIZE(self->items);
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "BufferedAsyncIterator: the buffer was emptied between __anext__() "
                        "and await");
        return NULL;
    }
    /* list.pop(): the list's reference moves to the caller.  The allocation is kept
       (it only ever shrinks here, and the owner replaces the list per chunk). */
    PyObject *item = PyList_GET_ITEM(self->items, n - 1);
    Py_SET_SIZE(self->items, n - 1);
    return item;
}

/* Awaiting completes at once: PyIter_Send (the SEND opcode) gets the item as the
   awaitable's return value, without a StopIteration object. */
static PySendResult
Buffered_send(BufferedObject *self, PyObject *arg, PyObject **result)
{
    PyObject *item = Buffered_pop(self);
    if (item == NULL) {
        *result = NULL;
        return PYGEN_ERROR;
    }
    *result = item;
    return PYGEN_RETURN;
}

static PyObject *
Buffered_next(BufferedObject *self)
{
    /* The same through the iterator protocol: StopIteration(item). */
    PyObject *item = Buffered_pop(self);
    if (item == NULL) {
        return NULL;
    }
    /* Built explicitly so that a tuple item is not unpacked. */
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, item);
    Py_DECREF(item);
    if (stop == NULL) {
        return NULL;
    }
    PyErr_SetObject(PyExc_StopIteration, stop);
    Py_DECREF(stop);
    return NULL;
}

static PyObject *
Buffered_feed(BufferedObject *self, PyObject *items)
{
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "feed(items: list)");
        return NULL;
    }
    Py_INCREF(items);
    Py_XSETREF(self->items, items);
    Py_RETURN_NONE;
}

static int
Buffered_init(BufferedObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"refill", NULL};
    PyObject *refill;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &refill)) {
        return -1;
    }
    Py_INCREF(refill);
    Py_XSETREF(self->refill, refill);
    Py_CLEAR(self->items);
    return 0;
}

static int
Buffered_traverse(BufferedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->items);
    Py_VISIT(self->refill);
    return 0;
}

static int
Buffered_clear(BufferedObject *self)
{
    Py_CLEAR(self->items);
    Py_CLEAR(self->refill);
    return 0;
}

static void
Buffered_dealloc(BufferedObject *self)
{
    PyObject_GC_UnTrack(self);
    Buffered_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyAsyncMethods Buffered_async = {
    .am_await = (unaryfunc)Buffered_await,
    .am_aiter = (unaryfunc)Buffered_await, /* __aiter__ returns self */
    .am_anext = (unaryfunc)Buffered_anext,
    .am_send = (sendfunc)Buffered_send,
};

static PyMethodDef Buffered_methods[] = {
    {"feed", (PyCFunction)Buffered_feed, METH_O,
     "feed(items): hand out items from this list (shared, popped from its end)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BufferedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "utf8stream._speedups.BufferedAsyncIterator",
    .tp_basicsize = sizeof(BufferedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "BufferedAsyncIterator(refill): async iteration over ready items",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Buffered_init,
    .tp_dealloc = (destructor)Buffered_dealloc,
    .tp_traverse = (traverseproc)Buffered_traverse,
    .tp_clear = (inquiry)Buffered_clear,
    .tp_as_async = &Buffered_async,
    .tp_iternext = (iternextfunc)Buffered_next,
    .tp_methods = Buffered_methods,
};

/* ---- module --------------------------------------------------------------------------- */

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *kind_tuple, *type, *d_offset, *d_data, *d_kind;
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyTuple_Type, &kind_tuple, &PyType_Type, &type,
                          &d_offset, &d_data, &d_kind)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(kind_tuple) != N_KINDS) {
        PyErr_SetString(PyExc_ValueError, "setup: expected 7 kinds");
        return NULL;
    }
    PyObject *descrs[3] = {d_offset, d_data, d_kind};
    Py_ssize_t offsets[3];
    for (int i = 0; i < 3; i++) {
        if (!PyObject_TypeCheck(descrs[i], &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "setup: slot descriptors expected");
            return NULL;
        }
        PyMemberDef *def = ((PyMemberDescrObject *)descrs[i])->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY) ||
            PyDescr_TYPE(descrs[i]) != (PyTypeObject *)type) {
            PyErr_SetString(PyExc_TypeError, "setup: writable object slots of the type expected");
            return NULL;
        }
        offsets[i] = def->offset;
    }
    for (int i = 0; i < N_KINDS; i++) {
        PyObject *k = PyTuple_GET_ITEM(kind_tuple, i);
        Py_INCREF(k);
        Py_XSETREF(kinds[i], k);
    }
    Py_INCREF(type);
    Py_XSETREF(event_type, (PyTypeObject *)type);
    slot_offset = offsets[0];
    slot_data = offsets[1];
    slot_kind = offsets[2];
    ready = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"error_handler", (PyCFunction)error_handler, METH_O,
     "The codecs error handler behind Units.feed (registered as " HANDLER_NAME ")."},
    {"setup", (PyCFunction)setup, METH_VARARGS,
     "setup(kinds, Malformed, offset_slot, data_slot, kind_slot)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "utf8stream._speedups",
    .m_doc = "Optional C accelerator for utf8stream; the package works without it.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&UnitsType) < 0 || PyType_Ready(&BufferedType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&UnitsType);
    if (PyModule_AddObject(m, "Units", (PyObject *)&UnitsType) < 0) {
        Py_DECREF(&UnitsType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BufferedType);
    if (PyModule_AddObject(m, "BufferedAsyncIterator", (PyObject *)&BufferedType) < 0) {
        Py_DECREF(&BufferedType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "HANDLER_NAME", HANDLER_NAME) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
