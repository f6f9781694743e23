/* The Units type (the C scanner): its other methods, its slots, its spec.  Part of the
   _speedups translation unit (see _speedups.c). */

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

static PyObject *
Units_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    module_state *st = (module_state *)PyType_GetModuleState(type);
    if (st == NULL) {
        return NULL;
    }
    UnitsObject *self = (UnitsObject *)PyType_GenericNew(type, args, kwds);
    if (self != NULL) {
        self->state = st;
        self->fail_start = -1;
        Py_INCREF(Py_None);
        self->callback = Py_None;
        self->replacement = PyUnicode_FromOrdinal(0xFFFD);
        if (self->replacement == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        self->repl_len = 1;
        self->repl_char = 0xFFFD;
    }
    return (PyObject *)self;
}

static int
Units_init(UnitsObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"replacement", "callback", NULL};
    PyObject *replacement, *callback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", kwlist, &replacement, &callback)) {
        return -1;
    }
    self->maps = replacement == Py_None;
    if (self->maps) {
        /* No constant: the callback maps each unit to its text. */
        if (!PyCallable_Check(callback)) {
            PyErr_SetString(PyExc_TypeError, "without a replacement the callback maps units");
            return -1;
        }
        replacement = self->state->empty;
    }
    else if (!PyUnicode_Check(replacement)) {
        PyErr_SetString(PyExc_TypeError, "the replacement is a str or None");
        return -1;
    }
    if (PyUnicode_GET_LENGTH(replacement) > 1) {
        PyErr_SetString(PyExc_ValueError, "the replacement is one character or none");
        return -1;
    }
    Py_INCREF(replacement);
    Py_XSETREF(self->replacement, replacement);
    Py_INCREF(callback);
    Py_XSETREF(self->callback, callback);
    self->repl_len = PyUnicode_GET_LENGTH(replacement);
    self->repl_char = self->repl_len ? PyUnicode_READ_CHAR(replacement, 0) : 0;
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return 0;
}

static int
Units_traverse(UnitsObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->replacement);
    Py_VISIT(self->callback);
    Py_VISIT(self->partial);
    Py_VISIT(self->pending);
    return 0;
}

static int
Units_clear(UnitsObject *self)
{
    Py_CLEAR(self->replacement);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->partial);
    Py_CLEAR(self->pending);
    return 0;
}

static void
Units_dealloc(UnitsObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Units_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Units_methods[] = {
    {"feed", (PyCFunction)(void (*)(void))Units_feed, METH_FASTCALL,
     "feed(pending, data, final, position) -> (text, pending)"},
    {"lines", (PyCFunction)(void (*)(void))Units_lines, METH_FASTCALL,
     "lines(head, data, position, sep, limit) -> (parts, offsets)"},
    {"drain", (PyCFunction)Units_drain, METH_NOARGS,
     "drain() -> tuple: units counted by kind since the last drain"},
    {"decode", (PyCFunction)(void (*)(void))Units_decode, METH_FASTCALL,
     "decode(data, final=False) -> str: the next chunk of the stream"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Units_members[] = {
    {"fail_start", T_PYSSIZET, offsetof(UnitsObject, fail_start), READONLY,
     "start of the unit whose callback raised, in the data of that call; -1 if the call "
     "failed elsewhere"},
    {"resume_at", T_LONGLONG, offsetof(UnitsObject, resume_at), READONLY,
     "absolute offset just past that unit"},
    {"reporting", T_INT, offsetof(UnitsObject, reporting), READONLY,
     "true while the callback runs"},
    {"position", T_LONGLONG, offsetof(UnitsObject, position), 0,
     "absolute offset of the next byte of the stream"},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *
Units_get_callback(UnitsObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self->callback);
    return self->callback;
}

/* Replaced in place, from the next unit on, even from inside the callback: the counts
   of the call in progress stay in this object. */
static int
Units_set_callback(UnitsObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "callback cannot be deleted (set None)");
        return -1;
    }
    if (self->maps && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "a mapping scanner needs its callback");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(self->callback, value);
    return 0;
}

static PyObject *
Units_get_partial(UnitsObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->partial != NULL ? self->partial : self->state->empty);
}

static PyGetSetDef Units_getset[] = {
    {"pending", (getter)Units_get_pending, (setter)Units_set_pending,
     "the held proper prefix of the stream (bytes)", NULL},
    {"partial", (getter)Units_get_partial, NULL,
     "after the callback raised at a unit (fail_start >= 0): the text before that unit",
     NULL},
    {"callback", (getter)Units_get_callback, (setter)Units_set_callback,
     "called with each Malformed event (None: none)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Units_slots[] = {
    {Py_tp_doc, "Units(replacement, callback): the C scanner of one decoder (replacement None: "
                "the callback returns each unit's text)"},
    {Py_tp_new, Units_new},
    {Py_tp_init, Units_init},
    {Py_tp_dealloc, Units_dealloc},
    {Py_tp_traverse, Units_traverse},
    {Py_tp_clear, Units_clear},
    {Py_tp_methods, Units_methods},
    {Py_tp_members, Units_members},
    {Py_tp_getset, Units_getset},
    {0, NULL},
};

static PyType_Spec Units_spec = {
    .name = "utf8stream._speedups.Units",
    .basicsize = sizeof(UnitsObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Units_slots,
};

