/* Part of the _speedups translation unit (see _speedups.c). */

/* ---- PlainEncoder ------------------------------------------------------------------ */

/* Utf8Encoder.encode for plain UTF-8 with a policy CPython's codec applies by itself:
   one C call per chunk.  It counts the characters it encoded (drain() hands the count
   to the Python object's position) and passes every other case -- keyword arguments,
   a character the policy does not cover -- to ``fallback``, the Python method, which
   raises the project's error with the right position. */

typedef struct {
    PyObject_HEAD
    PyObject *errors;   /* str */
    PyObject *fallback; /* callable(input, final=False) */
    long long chars;
    int strict;
} EncoderObject;

static PyObject *
Encoder_encode(EncoderObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 1 || nargs > 2 || !PyUnicode_CheckExact(args[0])) {
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    PyObject *input = args[0];
    PyObject *out = self->strict ? PyUnicode_AsUTF8String(input)
                                 : PyUnicode_AsEncodedString(input, "utf-8",
                                                             PyUnicode_AsUTF8(self->errors));
    if (out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            return NULL;
        }
        PyErr_Clear();
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    self->chars += PyUnicode_GET_LENGTH(input);
    return out;
}

static PyObject *
Encoder_drain(EncoderObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *n = PyLong_FromLongLong(self->chars);
    self->chars = 0;
    return n;
}

static int
Encoder_init(EncoderObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"errors", "fallback", NULL};
    PyObject *errors, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO", kwlist, &errors, &fallback)) {
        return -1;
    }
    Py_INCREF(errors);
    Py_XSETREF(self->errors, errors);
    Py_INCREF(fallback);
    Py_XSETREF(self->fallback, fallback);
    self->strict = PyUnicode_CompareWithASCIIString(errors, "strict") == 0;
    self->chars = 0;
    return 0;
}

static int
Encoder_traverse(EncoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->errors);
    Py_VISIT(self->fallback);
    return 0;
}

static int
Encoder_clear(EncoderObject *self)
{
    Py_CLEAR(self->errors);
    Py_CLEAR(self->fallback);
    return 0;
}

static void
Encoder_dealloc(EncoderObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Encoder_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Encoder_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))Encoder_encode, METH_FASTCALL | METH_KEYWORDS,
     "encode(input, final=False) -> bytes"},
    {"drain", (PyCFunction)Encoder_drain, METH_NOARGS,
     "drain() -> int: characters encoded since the last drain"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Encoder_slots[] = {
    {Py_tp_doc, "PlainEncoder(errors, fallback): Utf8Encoder.encode in one C call"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, Encoder_init},
    {Py_tp_dealloc, Encoder_dealloc},
    {Py_tp_traverse, Encoder_traverse},
    {Py_tp_clear, Encoder_clear},
    {Py_tp_methods, Encoder_methods},
    {0, NULL},
};

static PyType_Spec Encoder_spec = {
    .name = "utf8stream._speedups.PlainEncoder",
    .basicsize = sizeof(EncoderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Encoder_slots,
};

