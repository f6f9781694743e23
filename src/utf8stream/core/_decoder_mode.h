/* Part of the _speedups translation unit (see _speedups.c). */

/* ---- decoder mode ------------------------------------------------------------------

   For the common configuration (decoder.py's _sync says which) a decoder's position and
   held prefix live in its Units object (enter()/leave()), and ``decoder.decode`` is a
   BoundDecode: one C call per chunk, doing the ready path of Utf8Decoder.decode
   (position += len(data); feed; the new prefix).  Everything else goes back to
   decoder.py, the one owner of the rules: any other input (not bytes, bytearray or a
   byte memoryview; keywords other than ``final``; a position that would reach
   ACCEL_MAX_POSITION) or a call after leave() runs Utf8Decoder.decode itself (which
   leaves decoder mode first); a failure (a raising callback, strict mode's error) calls
   the decoder's ``_c_failed`` with the exception, which leaves decoder mode and keeps
   what the failure leaves behind, as Utf8Decoder.decode does, before the exception
   propagates.

   Utf8Decoder.decode is a DecoderMethod, a descriptor over the Python function: for a
   decoder in decoder mode it gives a BoundDecode (which holds the decoder, as a bound
   method does, so ``f = Utf8Decoder().decode`` keeps it alive), else the ordinary bound
   method.  The decoder holds no reference to these: no reference cycle. */

#define DM_MAX_POSITION (1LL << 62) /* decoder.py's ACCEL_MAX_POSITION */

/* enter(position, pending): decoder mode, with the decoder's state. */
static PyObject *
Units_enter(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "enter(position: int, pending: bytes)");
        return NULL;
    }
    long long position = PyLong_AsLongLong(args[0]);
    if (position == -1 && PyErr_Occurred()) {
        return NULL;
    }
    self->position = position;
    Py_XSETREF(self->pending, Py_NewRef(args[1]));
    self->dm = 1;
    Py_RETURN_NONE;
}

/* leave() -> (position, pending): out of decoder mode, the decoder's state handed back. */
static PyObject *
Units_leave(UnitsObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->dm) {
        PyErr_SetString(PyExc_RuntimeError, "not in decoder mode");
        return NULL;
    }
    self->dm = 0;
    PyObject *pending = self->pending;
    self->pending = NULL;
    return pair(PyLong_FromLongLong(self->position), pending);
}

typedef struct {
    PyObject_HEAD
    PyObject *func; /* the Python Utf8Decoder.decode */
    PyObject *name; /* "_dm": the decoder's attribute holding its Units in decoder mode */
} DecoderMethodObject;

typedef struct {
    PyObject_HEAD
    PyObject *func;      /* the Python Utf8Decoder.decode */
    PyObject *decoder;
    UnitsObject *units;
    vectorcallfunc vectorcall;
} BoundDecodeObject;

/* Utf8Decoder.decode(decoder, *args, **kwargs), the Python function. */
static PyObject *
bound_slow(BoundDecodeObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8];
    PyObject **stack = small;
    if (nargs + nkw + 1 > 8) {
        stack = PyMem_Malloc((nargs + nkw + 1) * sizeof(PyObject *));
        if (stack == NULL) {
            return PyErr_NoMemory();
        }
    }
    stack[0] = self->decoder;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) {
        stack[i + 1] = args[i];
    }
    PyObject *res = PyObject_Vectorcall(self->func, stack, nargs + 1, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return res;
}

/* decoder.decode(input, final=False) -> str */
static PyObject *
BoundDecode_vectorcall(BoundDecodeObject *self, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    UnitsObject *units = self->units;
    PyObject *final_arg = NULL;
    if (kwnames != NULL) {
        if (nargs != 1 || PyTuple_GET_SIZE(kwnames) != 1 ||
            PyTuple_GET_ITEM(kwnames, 0) != units->state->str_final) {
            return bound_slow(self, args, nargs, kwnames);
        }
        final_arg = args[1];
    }
    else if (nargs == 2) {
        final_arg = args[1];
    }
    else if (nargs != 1) {
        return bound_slow(self, args, nargs, kwnames);
    }
    PyObject *data = args[0];
    if (!PyBytes_CheckExact(data)) {
        /* What Utf8Decoder.decode takes as it is (_byte_view): bytearray, a 1-D
           memoryview of bytes.  Anything else, or a released view, is decoder.py's. */
        int plain = PyByteArray_CheckExact(data);
        if (!plain && PyMemoryView_Check(data)) {
            Py_buffer view;
            if (PyObject_GetBuffer(data, &view, PyBUF_FULL_RO) < 0) {
                PyErr_Clear();
            }
            else {
                const char *f = view.format;
                plain = view.ndim == 1 && (f == NULL || ((f[0] == 'B' || f[0] == 'b' ||
                                                          f[0] == 'c') && f[1] == 0));
                PyBuffer_Release(&view);
            }
        }
        if (!plain || !units->dm) {
            return bound_slow(self, args, nargs, kwnames);
        }
        data = PyBytes_FromObject(data);
        if (data == NULL) {
            return NULL;
        }
    }
    else {
        Py_INCREF(data);
    }
    if (!units->dm || units->position >= DM_MAX_POSITION - PyBytes_GET_SIZE(data)) {
        Py_DECREF(data);
        return bound_slow(self, args, nargs, kwnames);
    }
    PyObject *text = NULL;
    int final = 0;
    if (refuse_reentry(units) < 0 ||
        (final_arg != NULL && (final = PyObject_IsTrue(final_arg)) < 0)) {
        Py_DECREF(data);
        return NULL;
    }
    Py_INCREF(units);
    /* As Utf8Decoder.decode: position counts the chunk before the scanner runs (what
       statistics() shows inside a callback). */
    PyObject *pending = Py_NewRef(units->pending);
    units->position += PyBytes_GET_SIZE(data);
    PyObject *held;
    text = feed_core(units, pending, data, final, units->position, &held);
    if (text != NULL) {
        Py_SETREF(units->pending, held);
    }
    else {
        /* The prefix stays as it was; the decoder keeps what the failure leaves behind. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL && value != NULL) {
            PyException_SetTraceback(value, traceback);
        }
        if (value != NULL) {
            PyObject *stack[5] = {self->decoder, value, pending, data,
                                  final ? Py_True : Py_False};
            PyObject *res = PyObject_VectorcallMethod(
                units->state->str_c_failed, stack, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            if (res == NULL) {
                PyErr_WriteUnraisable(self->decoder);
            }
            Py_XDECREF(res);
        }
        PyErr_Restore(type, value, traceback);
    }
    Py_DECREF(pending);
    Py_DECREF(data);
    Py_DECREF(units);
    return text;
}

static PyObject *
BoundDecode_get_self(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->decoder);
}

static PyObject *
BoundDecode_get_func(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->func);
}

static PyObject *
BoundDecode_get_doc(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return PyObject_GetAttrString(self->func, "__doc__");
}

/* inspect.signature() of it: that of the bound method it stands for (help(), IDEs). */
static PyObject *
BoundDecode_get_signature(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    PyObject *method = PyMethod_New(self->func, self->decoder);
    if (method == NULL) {
        return NULL;
    }
    PyObject *inspect = PyImport_ImportModule("inspect");
    PyObject *signature =
        inspect == NULL ? NULL : PyObject_CallMethod(inspect, "signature", "O", method);
    Py_XDECREF(inspect);
    Py_DECREF(method);
    return signature;
}

static PyGetSetDef BoundDecode_getset[] = {
    {"__self__", (getter)BoundDecode_get_self, NULL, "the decoder", NULL},
    {"__func__", (getter)BoundDecode_get_func, NULL, "Utf8Decoder.decode", NULL},
    {"__doc__", (getter)BoundDecode_get_doc, NULL, NULL, NULL},
    {"__signature__", (getter)BoundDecode_get_signature, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* As a bound method: equal when bound to the same decoder (identity) and function. */
static PyObject *
BoundDecode_richcompare(BoundDecodeObject *self, PyObject *other, int op)
{
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(other) != Py_TYPE(self)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    BoundDecodeObject *that = (BoundDecodeObject *)other;
    int equal = self->decoder == that->decoder;
    if (equal) {
        equal = PyObject_RichCompareBool(self->func, that->func, Py_EQ);
        if (equal < 0) {
            return NULL;
        }
    }
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static Py_hash_t
BoundDecode_hash(BoundDecodeObject *self)
{
    Py_hash_t y = PyObject_Hash(self->func);
    if (y == -1) {
        return -1;
    }
    size_t x = (size_t)(uintptr_t)self->decoder;
    x = (x >> 4) | (x << (8 * sizeof(size_t) - 4)); /* as CPython hashes a pointer */
    Py_hash_t h = (Py_hash_t)x ^ y;
    return h == -1 ? -2 : h;
}

static int
BoundDecode_traverse(BoundDecodeObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->func);
    Py_VISIT(self->decoder);
    Py_VISIT(self->units);
    return 0;
}

static int
BoundDecode_clear(BoundDecodeObject *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->decoder);
    Py_CLEAR(self->units);
    return 0;
}

static void
BoundDecode_dealloc(BoundDecodeObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    BoundDecode_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyObject *
BoundDecode_repr(BoundDecodeObject *self)
{
    return PyUnicode_FromFormat("<bound method decode of %R>", self->decoder);
}

static PyMemberDef BoundDecode_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BoundDecodeObject, vectorcall), READONLY,
     NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot BoundDecode_slots[] = {
    {Py_tp_doc, "Utf8Decoder.decode bound to a decoder in decoder mode"},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_dealloc, BoundDecode_dealloc},
    {Py_tp_traverse, BoundDecode_traverse},
    {Py_tp_clear, BoundDecode_clear},
    {Py_tp_getset, BoundDecode_getset},
    {Py_tp_members, BoundDecode_members},
    {Py_tp_repr, BoundDecode_repr},
    {Py_tp_richcompare, BoundDecode_richcompare},
    {Py_tp_hash, BoundDecode_hash},
    {0, NULL},
};

static PyType_Spec BoundDecode_spec = {
    .name = "utf8stream._speedups.BoundDecode",
    .basicsize = sizeof(BoundDecodeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = BoundDecode_slots,
};

static PyObject *
DecoderMethod_get(DecoderMethodObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self->func);
    }
    PyObject *units = PyObject_GetAttr(obj, self->name);
    if (units == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear(); /* not set up yet: the ordinary method */
    }
    module_state *st = (module_state *)PyType_GetModuleState(Py_TYPE(self));
    if (units == NULL || st == NULL || !Py_IS_TYPE(units, st->units_type) ||
        !((UnitsObject *)units)->dm) {
        Py_XDECREF(units);
        PyErr_Clear();
        return PyMethod_New(self->func, obj);
    }
    BoundDecodeObject *bound = PyObject_GC_New(BoundDecodeObject, st->bound_decode_type);
    if (bound == NULL) {
        Py_DECREF(units);
        return NULL;
    }
    bound->func = Py_NewRef(self->func);
    bound->decoder = Py_NewRef(obj);
    bound->units = (UnitsObject *)units; /* the reference moves here */
    bound->vectorcall = (vectorcallfunc)BoundDecode_vectorcall;
    PyObject_GC_Track(bound);
    return (PyObject *)bound;
}

static int
DecoderMethod_init(DecoderMethodObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *func;
    if (!PyArg_ParseTuple(args, "O:DecoderMethod", &func)) {
        return -1;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "DecoderMethod(func): func must be callable");
        return -1;
    }
    PyObject *name = PyUnicode_InternFromString("_dm");
    if (name == NULL) {
        return -1;
    }
    Py_XSETREF(self->func, Py_NewRef(func));
    Py_XSETREF(self->name, name);
    return 0;
}

static PyObject *
DecoderMethod_get_func(DecoderMethodObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->func != NULL ? self->func : Py_None);
}

static PyGetSetDef DecoderMethod_getset[] = {
    {"__func__", (getter)DecoderMethod_get_func, NULL, "the Python function", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int
DecoderMethod_traverse(DecoderMethodObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->func);
    return 0;
}

static int
DecoderMethod_clear(DecoderMethodObject *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->name);
    return 0;
}

static void
DecoderMethod_dealloc(DecoderMethodObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    DecoderMethod_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyType_Slot DecoderMethod_slots[] = {
    {Py_tp_doc, "DecoderMethod(func): Utf8Decoder.decode, one C call per chunk in decoder "
                "mode (a descriptor over the Python function func)"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, DecoderMethod_init},
    {Py_tp_descr_get, DecoderMethod_get},
    {Py_tp_dealloc, DecoderMethod_dealloc},
    {Py_tp_traverse, DecoderMethod_traverse},
    {Py_tp_clear, DecoderMethod_clear},
    {Py_tp_getset, DecoderMethod_getset},
    {0, NULL},
};

static PyType_Spec DecoderMethod_spec = {
    .name = "utf8stream._speedups.DecoderMethod",
    .basicsize = sizeof(DecoderMethodObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = DecoderMethod_slots,
};

static PyObject *
Units_get_pending(UnitsObject *self, void *Py_UNUSED(closure))
{
    if (self->pending == NULL) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    return Py_NewRef(self->pending);
}

