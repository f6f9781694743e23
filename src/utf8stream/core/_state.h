/* The core accelerator's shared state and object layouts (one translation unit: see
   _speedups.c). */

#ifndef UTF8STREAM_STATE_H
#define UTF8STREAM_STATE_H

/* ---- module state ------------------------------------------------------------------ */

#include "_table37.h"

/* Everything the module keeps lives here, one per module object (PEP 489 multi-phase
   initialisation): no static globals, so two module objects (a second import of the
   extension, a subinterpreter) share nothing.  The types are heap types created per
   module; each holds its module, so an object finds the state through its type. */
typedef struct {
    PyTypeObject *units_type;
    PyTypeObject *encoder_type;
    PyTypeObject *buffered_type;
    /* Set by setup(), from Python: */
    PyObject *kinds[N_KINDS]; /* MalformedKind members, in the order above */
    PyTypeObject *event_type; /* Malformed */
    Py_ssize_t slot_offset, slot_data, slot_kind; /* where its slots are */
    PyObject *empty; /* "" */
    PyObject *empty_bytes; /* b"" */
    int ready;
    int simd; /* SIMD_AVX2, SIMD_SSE2 or SIMD_NONE: the kernels used (_simd.h) */
    int prefetchw; /* the CPU has PREFETCHW (with AVX2: ascii_copy_avx2) */
    /* The mojibake tables' derived parts, for the tables last passed (moji_bits_of,
       _moji.h), and with a reference to those tables: */
    PyObject *moji_pages, *moji_index, *moji_held;
    Py_ssize_t moji_width;
    Py_UCS4 moji_last;
    /* The lead bytes of their characters in UTF-8 (mojib_need_of, _mojibytes.h): */
    PyObject *mojib_index, *mojib_pages;
    Py_ssize_t mojib_width;
    unsigned char mojib_need[256];
} module_state;

static inline module_state *
get_state(PyObject *module)
{
    return (module_state *)PyModule_GetState(module);
}

/* ---- Units -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *replacement; /* str */
    PyObject *callback;    /* callable or None */
    PyObject *partial;     /* after a failure at a unit: the text of the call before it */
    int maps;              /* no replacement: the callback's result is each unit's text */
    long long counts[N_KINDS];
    long long chars;       /* characters returned by feed() since the last drain */
    Py_ssize_t fail_start; /* -1: the call did not fail at a unit */
    long long resume_at;
    Py_ssize_t repl_len;   /* length of replacement: 0 or 1 */
    Py_UCS4 repl_char;
    int reporting;         /* the callback is running: this object refuses to decode */
    /* The stream's state, read and written by its decoder (decode() keeps it): */
    long long position;    /* absolute offset of the next byte */
    PyObject *pending;     /* the held proper prefix (bytes); NULL: none */
    module_state *state;   /* of the module that made this object's type (which keeps
                              that module, and so the state, alive) */
} UnitsObject;

#endif /* UTF8STREAM_STATE_H */
