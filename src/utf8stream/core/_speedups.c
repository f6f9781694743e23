/* Optional accelerator for utf8stream (the package works without it).

 * 1. Units: the C scanner (core/scanner.py), a UTF-8 decoder of our own.
 *    Units(replacement, callback).feed(pending, data, final, position) is the scanner
 *    call of one Utf8Decoder.decode; lines() cuts the complete lines of a buffer and
 *    decodes each as it goes.  Each malformed unit (a maximal subpart) is classified,
 *    counted and reported to the callback as a Malformed event, in order, exactly as
 *    the pure-Python scanner does, and replaced by the constant replacement ("replace":
 *    U+FFFD, "ignore": nothing) or, made with None (a mapping object: every other
 *    policy), by the str the callback returns.  When the callback raises, fail_start /
 *    resume_at tell where the failing unit was and partial is the text before it.
 *
 *    Why not CPython's decoder with an error handler: that costs an exception object
 *    and a result tuple per unit, and splitting lines means building the chunk's text
 *    and cutting it again.  Ours looks over the bytes once to choose each string's
 *    kind and length, then validates and decodes in one pass straight into it (16
 *    ASCII bytes at a time with SSE2, two- three- and four-byte characters in runs of
 *    their own; with AVX2, chosen at run time, 32 ASCII bytes and eight three-byte
 *    characters a step, and UCS-2 and UCS-4 text of mixed lengths 32 bytes a step:
 *    _simd.h); it keeps no buffer between calls.
 *
 * 2. PlainEncoder: Utf8Encoder.encode for plain UTF-8 in one C call per chunk.
 *
 * 3. BufferedAsyncIterator: `async for` over items that are mostly ready already.
 *    __anext__ hands out the next ready item through an awaitable that completes at once,
 *    and calls the Python coroutine function `refill` only when none is ready.  A Python
 *    `async def __anext__` costs a coroutine per item, an async generator a frame resume;
 *    this costs a C call.
 *
 * 4. split_lines(): the line engine's cut of whole lines of the encodings whose code
 *    units are characters (UTF-16/32, single-byte codecs): the search for newline
 *    units in the bytes, at code-unit offsets, and the slices of the decoded text.
 *
 * 5. find_run() and join_cut(): the normalizer's search for long runs of non-starters
 *    and its output made in one copy (_runs.h); normalize_piece(): its pass over a
 *    piece, the quick check, the segments that need normalizing and the output in one
 *    go (_normpass.h).
 *
 * 6. The encoding detector's passes over every byte and every decoded character, and its
 *    sums of costs (_detect.h).
 *
 * 7. find_moji(): the mojibake repairer's search for runs that could be undone (_moji.h);
 *    moji_repair(): the repairer's whole pass over a buffer, its decision included
 *    (_mojirepair.h); find_moji_bytes(), the same search over UTF-8 bytes for the
 *    byte-domain repairer (_mojibytes.h).
 *
 * Everything here returns plain data (texts, offsets): the follower's record type and
 * read buffers are the apps layer's own extension (apps/_apps_speedups.c).
 *
 * One translation unit of files of one responsibility each, so that the hot functions
 * inline across them as in one file: _table37.h (Table 3-7, shared with _transcode.c),
 * _state.h (module state, object layouts), _decode.h and _simd.h (the decoding loop and
 * its SIMD kernels), _feed.h (Units.feed), _stream.h (the stream state: Units.decode), _lines.h (line cutting),
 * _units.h (the Units type), _encoder.h, _iterator.h, _runs.h, _normpass.h, _detect.h,
 * _moji.h, _mojirepair.h, _mojibytes.h; the module here.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_transcode.h"
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#else
#define HAVE_SSE2 0
#endif

#include "_state.h"
#include "_decode.h"
#include "_feed.h"
#include "_stream.h"
#include "_lines.h"
#include "_units.h"
#include "_encoder.h"
#include "_iterator.h"
#include "_runs.h"
#include "_normpass.h"
#include "_detect.h"
#include "_moji.h"
#include "_mojirepair.h"
#include "_mojibytes.h"

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
    module_state *st = get_state(module);
    for (int i = 0; i < N_KINDS; i++) {
        PyObject *k = PyTuple_GET_ITEM(kind_tuple, i);
        Py_INCREF(k);
        Py_XSETREF(st->kinds[i], k);
    }
    Py_INCREF(type);
    Py_XSETREF(st->event_type, (PyTypeObject *)type);
    st->slot_offset = offsets[0];
    st->slot_data = offsets[1];
    st->slot_kind = offsets[2];
    st->ready = 1;
    Py_RETURN_NONE;
}

/* _classify_all(prefix, width) -> bytes

   For the tests that hold this file to the Python table (core/_bytes.py): the sequence
   at the start of every buffer ``prefix + x``, x running over all byte strings that
   make the buffer ``width`` bytes long (lexicographic order), as the decoding loop's
   general path sees it (sequence_at, then classify for a malformed unit).  One byte per
   buffer: the length plus 4 in the low nibble (negative: a proper prefix that the end of
   the buffer cuts off), and in the high nibble 0 for a character or 1 + the unit's kind
   (the order of setup()). */
static PyObject *
classify_all(PyObject *module, PyObject *args)
{
    const unsigned char *prefix;
    Py_ssize_t np;
    int width;
    if (!PyArg_ParseTuple(args, "y#i", &prefix, &np, &width)) {
        return NULL;
    }
    if (width < 1 || width > 4 || np > width || width - np > 3) {
        PyErr_SetString(PyExc_ValueError, "_classify_all: 1..4 bytes, at most 3 of them free");
        return NULL;
    }
    Py_ssize_t free_bytes = width - np, count = (Py_ssize_t)1 << (8 * free_bytes);
    PyObject *out = PyBytes_FromStringAndSize(NULL, count);
    if (out == NULL) {
        return NULL;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    unsigned char buf[4];
    memcpy(buf, prefix, np);
    for (Py_ssize_t x = 0; x < count; x++) {
        for (Py_ssize_t k = 0; k < free_bytes; k++) {
            buf[np + k] = (unsigned char)(x >> (8 * (free_bytes - 1 - k)));
        }
        Py_UCS4 cp;
        Py_ssize_t k = sequence_at(buf, 0, width, &cp);
        int kind = -1;
        if (k > 0 && cp == NOT_A_CHAR) {
            kind = classify(buf, width, 0, k);
        }
        o[x] = (unsigned char)(((k + 4) & 0x0F) | ((kind + 1) << 4));
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"_classify_all", (PyCFunction)classify_all, METH_VARARGS,
     "_classify_all(prefix, width) -> bytes: the decoder's view of every buffer (tests)"},
    {"setup", (PyCFunction)setup, METH_VARARGS,
     "setup(kinds, Malformed, offset_slot, data_slot, kind_slot)"},
    {"find_run", (PyCFunction)(void (*)(void))find_run, METH_FASTCALL,
     "find_run(text, members, shortest, start) -> index of a long run of members | -1"},
    {"find_moji", (PyCFunction)(void (*)(void))find_moji, METH_FASTCALL,
     "find_moji(text, index, pages, width, start, longest) -> index of a run to undo | -1"},
    {"moji_repair", (PyCFunction)(void (*)(void))moji_repair, METH_FASTCALL,
     "moji_repair(buf, before, final, max_carry, events, rules, classes) -> (out, end, fixes)"},
    {"find_moji_bytes", (PyCFunction)(void (*)(void))find_moji_bytes, METH_FASTCALL,
     "find_moji_bytes(data, index, pages, width, start, longest) -> byte offset of a run | -1"},
    {"join_cut", (PyCFunction)(void (*)(void))join_cut, METH_FASTCALL,
     "join_cut(head, text, cut) -> head + text[:cut], in one copy"},
    {"normalize_piece", (PyCFunction)(void (*)(void))normalize_piece, METH_FASTCALL,
     "normalize_piece(head, text, cut, tables, shortest) -> normalized head + text[:cut] | int"},
    {"split_lines", (PyCFunction)(void (*)(void))split_lines, METH_FASTCALL,
     "split_lines(data, text, newline, base, limit, each_offset) -> (contents, offsets) | None"},
    {"count_bytes", (PyCFunction)(void (*)(void))detect_count_bytes, METH_FASTCALL,
     "count_bytes(segment, evidence) -> int: the detector's byte counts"},
    {"count_runs", (PyCFunction)(void (*)(void))detect_count_runs, METH_FASTCALL,
     "count_runs(segment, evidence, pairs, starts, flags): the runs of bytes above 7F"},
    {"count_east_asian", (PyCFunction)detect_count_east_asian, METH_O,
     "count_east_asian(text) -> int: the characters in East Asian scripts"},
    {"count_text", (PyCFunction)(void (*)(void))detect_count_text, METH_FASTCALL,
     "count_text(text, counts, adjacent) -> (chars, east_asian, single, longer)"},
    {"code_page_scores", (PyCFunction)(void (*)(void))detect_code_page_scores, METH_FASTCALL,
     "code_page_scores(evidence, pairs, starts, flags, costs, terms, rows, extras, ascii_cost)"},
    {"cheapest_language", (PyCFunction)(void (*)(void))detect_cheapest_language, METH_FASTCALL,
     "cheapest_language(counts, models, letters, mixed, single, longer) -> (cost, index)"},
    {"class_counts", (PyCFunction)(void (*)(void))detect_class_counts, METH_FASTCALL,
     "class_counts(counts, cache, class_of) -> (letters, symbols, bad, others)"},
    {NULL, NULL, 0, NULL},
};

static int
module_exec(PyObject *m)
{
    module_state *st = get_state(m);
    st->empty = PyUnicode_New(0, 0);
    st->empty_bytes = PyBytes_FromStringAndSize(NULL, 0);
    if (st->empty == NULL || st->empty_bytes == NULL) {
        return -1;
    }
    st->simd = simd_level();
#if HAVE_AVX2
    st->prefetchw = has_prefetchw();
#endif
    if (PyModule_AddStringConstant(m, "simd", simd_name(st->simd)) < 0) {
        return -1;
    }
    st->units_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Units_spec, NULL);
    if (st->units_type == NULL || PyModule_AddType(m, st->units_type) < 0) {
        return -1;
    }
    st->encoder_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Encoder_spec, NULL);
    if (st->encoder_type == NULL || PyModule_AddType(m, st->encoder_type) < 0) {
        return -1;
    }
    st->buffered_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Buffered_spec, NULL);
    if (st->buffered_type == NULL || PyModule_AddType(m, st->buffered_type) < 0) {
        return -1;
    }
    return utf8stream_add_byte_transcoder(m);
}

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
    module_state *st = get_state(m);
    Py_VISIT(st->units_type);
    Py_VISIT(st->encoder_type);
    Py_VISIT(st->buffered_type);
    for (int i = 0; i < N_KINDS; i++) {
        Py_VISIT(st->kinds[i]);
    }
    Py_VISIT(st->event_type);
    Py_VISIT(st->empty);
    Py_VISIT(st->empty_bytes);
    Py_VISIT(st->moji_pages);
    Py_VISIT(st->moji_index);
    Py_VISIT(st->moji_held);
    Py_VISIT(st->mojib_index);
    Py_VISIT(st->mojib_pages);
    return 0;
}

static int
module_clear(PyObject *m)
{
    module_state *st = get_state(m);
    Py_CLEAR(st->units_type);
    Py_CLEAR(st->encoder_type);
    Py_CLEAR(st->buffered_type);
    for (int i = 0; i < N_KINDS; i++) {
        Py_CLEAR(st->kinds[i]);
    }
    Py_CLEAR(st->event_type);
    Py_CLEAR(st->empty);
    Py_CLEAR(st->empty_bytes);
    Py_CLEAR(st->moji_pages);
    Py_CLEAR(st->moji_index);
    Py_CLEAR(st->moji_held);
    Py_CLEAR(st->mojib_index);
    Py_CLEAR(st->mojib_pages);
    st->ready = 0;
    return 0;
}

static void
module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_MOD_PER_INTERPRETER_GIL_SUPPORTED
    /* Nothing is shared between module objects (see module_state). */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "utf8stream._speedups",
    .m_doc = "Optional C accelerator for utf8stream; the package works without it.",
    .m_size = sizeof(module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}

