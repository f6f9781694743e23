/* Unicode Table 3-7 (well-formed UTF-8 byte sequences) for the core's C code: the one
   C copy, shared by the scanner (_speedups.c) and the byte transcoder (_transcode.c).  The
   pure-Python twin is core/_bytes.py; tests/test_table.py holds the two to each other
   (through _speedups._classify_all).

   The kinds of a malformed unit, in the order of _accel.ACCEL_KINDS (the counters'). */

#ifndef UTF8STREAM_TABLE37_H
#define UTF8STREAM_TABLE37_H

#include <Python.h>

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

/* The kind of the malformed unit buf[start:end) of a buffer of len bytes (never called
   for ASCII): the byte after the unit tells an overlong or surrogate second byte from a
   cut sequence. */
static inline int
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

/* The sequence at buf[i] (i < n): its length with *cp set if well-formed; minus the
   length of the proper prefix that the end of the buffer cuts off; or, for a malformed
   unit (a maximal subpart), its length with *cp = NOT_A_CHAR. */
#define NOT_A_CHAR 0xFFFFFFFFu

static inline Py_ssize_t
sequence_at(const unsigned char *buf, Py_ssize_t i, Py_ssize_t n, Py_UCS4 *cp)
{
    unsigned int b0 = buf[i];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    unsigned int lo = 0x80, hi = 0xBF, need;
    Py_UCS4 c;
    if (b0 < 0xC2) {
        *cp = NOT_A_CHAR;
        return 1;
    }
    else if (b0 < 0xE0) {
        need = 1;
        c = b0 & 0x1F;
    }
    else if (b0 < 0xF0) {
        need = 2;
        c = b0 & 0x0F;
        if (b0 == 0xE0) {
            lo = 0xA0;
        }
        else if (b0 == 0xED) {
            hi = 0x9F;
        }
    }
    else if (b0 < 0xF5) {
        need = 3;
        c = b0 & 0x07;
        if (b0 == 0xF0) {
            lo = 0x90;
        }
        else if (b0 == 0xF4) {
            hi = 0x8F;
        }
    }
    else {
        *cp = NOT_A_CHAR;
        return 1;
    }
    Py_ssize_t j = i + 1;
    if (j >= n) {
        return -1;
    }
    unsigned int b = buf[j];
    if (b < lo || b > hi) {
        *cp = NOT_A_CHAR;
        return 1;
    }
    c = (c << 6) | (b & 0x3F);
    j++;
    while (--need) {
        if (j >= n) {
            return -(j - i);
        }
        b = buf[j];
        if ((b & 0xC0) != 0x80) {
            *cp = NOT_A_CHAR;
            return j - i;
        }
        c = (c << 6) | (b & 0x3F);
        j++;
    }
    *cp = c;
    return j - i;
}

#endif /* UTF8STREAM_TABLE37_H */
