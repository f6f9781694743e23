/* The byte-to-byte transcoder of the accelerator (_transcode.c), compiled into the
   same extension as _speedups.c, which registers it when the module is set up. */

#ifndef UTF8STREAM_TRANSCODE_H
#define UTF8STREAM_TRANSCODE_H

#include <Python.h>

/* Adds the ByteTranscoder type to the module ``m``; -1 with an exception set on error. */
int utf8stream_add_byte_transcoder(PyObject *m);

#endif
