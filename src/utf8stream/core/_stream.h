/* The stream's state (position, held prefix) and Units.decode, the next chunk of a
   stream.  Part of the _speedups translation unit (see _speedups.c). */

/* decode(data, final=False) -> str (data: any bytes-like object)

   position += len(data); the text of pending + data; the new held prefix.  On failure
   the held prefix stays as it was (the decoder keeps pending + data as what the
   failure leaves behind) and position counts data; refused (inside the callback, or
   an offset past 64 bits), nothing changes.  The decoder hands a stream to the Python
   scanner from ACCEL_MAX_POSITION (2**62) on, so only 2**62 bytes fed reach that. */
static PyObject *
Units_decode(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "decode(data, final=False)");
        return NULL;
    }
    if (refuse_reentry(self) < 0) {
        return NULL;
    }
    int final = nargs == 2 ? PyObject_IsTrue(args[1]) : 0;
    if (final < 0) {
        return NULL;
    }
    PyObject *data = args[0];
    if (PyBytes_CheckExact(data)) {
        Py_INCREF(data);
    }
    else if (PyObject_CheckBuffer(data)) {
        data = PyBytes_FromObject(data); /* any bytes-like object: its bytes */
        if (data == NULL) {
            return NULL;
        }
    }
    else {
        PyErr_Format(PyExc_TypeError, "a bytes-like object is required, not '%.100s'",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    if (self->position > LLONG_MAX - PyBytes_GET_SIZE(data)) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_OverflowError, "position past the C scanner's range");
        return NULL;
    }
    PyObject *pending = self->pending != NULL ? Py_NewRef(self->pending)
                                              : Py_NewRef(self->state->empty_bytes);
    /* position counts the chunk before the scan: what statistics() shows inside a
       callback. */
    self->position += PyBytes_GET_SIZE(data);
    PyObject *held;
    PyObject *text = feed_core(self, pending, data, final, self->position, &held);
    if (text != NULL) {
        Py_XSETREF(self->pending, held);
    }
    Py_DECREF(pending);
    Py_DECREF(data);
    return text;
}

static PyObject *
Units_get_pending(UnitsObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->pending != NULL ? self->pending : self->state->empty_bytes);
}

static int
Units_set_pending(UnitsObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL || !PyBytes_CheckExact(value)) {
        PyErr_SetString(PyExc_TypeError, "pending is bytes");
        return -1;
    }
    Py_XSETREF(self->pending, Py_NewRef(value));
    return 0;
}
