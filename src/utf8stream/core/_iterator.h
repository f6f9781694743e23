/* Part of the _speedups translation unit (see _speedups.c). */

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
    Py_VISIT(Py_TYPE(self));
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
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Buffered_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Buffered_methods[] = {
    {"feed", (PyCFunction)Buffered_feed, METH_O,
     "feed(items): hand out items from this list (shared, popped from its end)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Buffered_slots[] = {
    {Py_tp_doc, "BufferedAsyncIterator(refill): async iteration over ready items"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, Buffered_init},
    {Py_tp_dealloc, Buffered_dealloc},
    {Py_tp_traverse, Buffered_traverse},
    {Py_tp_clear, Buffered_clear},
    {Py_am_await, Buffered_await},
    {Py_am_aiter, Buffered_await}, /* __aiter__ returns self */
    {Py_am_anext, Buffered_anext},
    {Py_am_send, Buffered_send},
    {Py_tp_iternext, Buffered_next},
    {Py_tp_methods, Buffered_methods},
    {0, NULL},
};

static PyType_Spec Buffered_spec = {
    .name = "utf8stream._speedups.BufferedAsyncIterator",
    .basicsize = sizeof(BufferedObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Buffered_slots,
};

