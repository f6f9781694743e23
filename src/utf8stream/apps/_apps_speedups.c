/* The apps layer's optional accelerator (utf8stream.apps._apps_speedups): the
   follower's Line record type, records() to build a block of them from the line
   engine's plain data (texts and offsets), its read buffer (ReadBuffer), and the
   read-ahead of the follower and the file transcoder (ReadAhead).  None of it decodes
   a byte: the lines come from the core (utf8stream._speedups), this makes them records.
   The pure-Python twin is apps/_apps_native.py, name for name. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* Everything the module keeps, one per module object (PEP 489). */
typedef struct {
    PyTypeObject *line_type;
    PyTypeObject *readbuffer_type;
    PyTypeObject *readahead_type;
    /* Freed Line records kept for records() to reuse (chained through their first
       field): a block's records are built together and freed one by one. */
    PyObject *line_free;
    Py_ssize_t n_line_free;
} module_state;

/* How many freed records are kept: a block of a 64 KiB slice of 40-byte lines. */
#define LINE_FREE_MAX 2048

static inline module_state *
get_state(PyObject *module)
{
    return (module_state *)PyModule_GetState(module);
}

/* ---- Line ------------------------------------------------------------------------------ */

/* The follower's ``Line`` record (apps/follow.py declares it as a frozen dataclass and,
   when this module is built, gives this type that declaration's ``dataclasses``
   metadata, repr, equality, hash and frozen ``__setattr__``; its module and its name).
   What makes it cheap, per line, against a slotted dataclass: it is not a garbage
   collector type (allocating one does not count towards a collection, which walked the
   follower's lists of thousands of records; freeing one is five decrefs), and
   ``records`` builds a block of them in one call.  Its fields are a str, an int, a
   FileIdentity, a str and a bool, which cannot lead back to a record. */

typedef struct {
    PyObject_HEAD
    PyObject *text;
    PyObject *offset; /* NULL until asked for when made by records() from packed offsets */
    PyObject *file;
    PyObject *path;
    PyObject *terminated;
    long long off; /* the offset, while ``offset`` is NULL */
} LineObject;

/* The memory of a Line record: from the free list, or newly allocated; nothing in it set
   (not even its type).  NULL with MemoryError. */
static inline LineObject *
line_memory(module_state *st)
{
    LineObject *r;
    if (st->line_free != NULL) {
        r = (LineObject *)st->line_free;
        st->line_free = r->text;
        st->n_line_free--;
        return r;
    }
    r = PyObject_Malloc(sizeof(LineObject));
    if (r == NULL) {
        PyErr_NoMemory();
    }
    return r;
}

static PyObject *
Line_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"text", "offset", "file", "path", "terminated", NULL};
    PyObject *text, *offset, *file, *path = NULL, *terminated = Py_True;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|OO:Line", kwlist, &text, &offset, &file,
                                     &path, &terminated)) {
        return NULL;
    }
    LineObject *self = (LineObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->text = Py_NewRef(text);
    self->offset = Py_NewRef(offset);
    self->off = 0;
    self->file = Py_NewRef(file);
    self->path = path != NULL ? Py_NewRef(path) : PyUnicode_New(0, 0);
    self->terminated = Py_NewRef(terminated);
    if (self->path == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
Line_dealloc(LineObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_XDECREF(self->text);
    Py_XDECREF(self->offset);
    Py_XDECREF(self->file);
    Py_XDECREF(self->path);
    Py_XDECREF(self->terminated);
    /* The module's state as PyType_GetModuleState finds it, without its two calls and
       checks (a record is freed per line): this type is a heap type made with its
       module (PyType_FromModuleAndSpec), which it holds. */
    module_state *st = PyModule_GetState(((PyHeapTypeObject *)type)->ht_module);
    if (st != NULL && st->line_type == type && st->n_line_free < LINE_FREE_MAX) {
        /* Kept for records(), which makes the same type (sizeof(LineObject) bytes). */
        self->text = st->line_free;
        st->line_free = (PyObject *)self;
        st->n_line_free++;
    }
    else {
        type->tp_free((PyObject *)self);
    }
    Py_DECREF(type);
}

/* The offset as an int: made on first use (and kept) for a record built from packed
   offsets, so a reader that never looks at it never pays for it. */
static PyObject *
Line_get_offset(LineObject *self, void *Py_UNUSED(closure))
{
    if (self->offset == NULL) {
        self->offset = PyLong_FromLongLong(self->off);
        if (self->offset == NULL) {
            return NULL;
        }
    }
    return Py_NewRef(self->offset);
}

/* Pickling and copying: the class and its fields (the class's own __init__ arguments). */
static PyObject *
Line_reduce(LineObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *offset = Line_get_offset(self, NULL);
    if (offset == NULL) {
        return NULL;
    }
    PyObject *r = Py_BuildValue("O(OOOOO)", Py_TYPE(self), self->text, offset, self->file,
                                self->path, self->terminated);
    Py_DECREF(offset);
    return r;
}

static PyMethodDef Line_methods[] = {
    {"__reduce__", (PyCFunction)Line_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Line_members[] = {
    {"text", T_OBJECT_EX, offsetof(LineObject, text), READONLY, NULL},
    {"file", T_OBJECT_EX, offsetof(LineObject, file), READONLY, NULL},
    {"path", T_OBJECT_EX, offsetof(LineObject, path), READONLY, NULL},
    {"terminated", T_OBJECT_EX, offsetof(LineObject, terminated), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Line_getset[] = {
    {"offset", (getter)Line_get_offset, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Line_slots[] = {
    {Py_tp_doc, "Line(text, offset, file, path='', terminated=True)\n--\n\n"
                "One line of a followed file (see utf8stream.apps.follow.Line)."},
    {Py_tp_new, Line_new},
    {Py_tp_dealloc, Line_dealloc},
    {Py_tp_methods, Line_methods},
    {Py_tp_members, Line_members},
    {Py_tp_getset, Line_getset},
    {0, NULL},
};

static PyType_Spec Line_spec = {
    .name = "utf8stream.apps._apps_speedups.Line",
    .basicsize = sizeof(LineObject),
    /* Not immutable: apps/follow.py completes it (see above). */
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = Line_slots,
};

/* ---- ReadBuffer ------------------------------------------------------------------------ */

/* ReadBuffer(size): a writable buffer of ``size`` bytes that a read fills in place
   (``os.preadv``, ``readinto``), then ``take(n)`` hands out its first ``n`` bytes as a
   bytes object with no copy: the buffer is a new bytes object not shown to anyone yet,
   shrunk to ``n``; the next use gets a new one (whose bytes are unspecified until read
   into).  The follower's reads from the page
   cache: a scratch bytearray and a copy of what was read cost a second pass over every
   byte (a memcpy the size of the file), which ``for line in open()`` never makes. */

typedef struct {
    PyObject_HEAD
    PyObject *bytes;    /* the buffer: a bytes object of ``size`` bytes, or NULL */
    Py_ssize_t size;
    Py_ssize_t exports; /* buffer views held */
} ReadBufferObject;

static int
ReadBuffer_init(ReadBufferObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"size", NULL};
    Py_ssize_t size;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:ReadBuffer", kwlist, &size)) {
        return -1;
    }
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "ReadBuffer: size must be non-negative");
        return -1;
    }
    if (self->exports > 0) {
        PyErr_SetString(PyExc_BufferError, "ReadBuffer: a view of it is held");
        return -1;
    }
    Py_CLEAR(self->bytes);
    self->size = size;
    return 0;
}

static int
ReadBuffer_getbuffer(ReadBufferObject *self, Py_buffer *view, int flags)
{
    if (self->bytes == NULL) {
        self->bytes = PyBytes_FromStringAndSize(NULL, self->size);
        if (self->bytes == NULL) {
            view->obj = NULL;
            return -1;
        }
    }
    if (PyBuffer_FillInfo(view, (PyObject *)self, PyBytes_AS_STRING(self->bytes), self->size,
                          0, flags) < 0) {
        return -1;
    }
    self->exports++;
    return 0;
}

static void
ReadBuffer_releasebuffer(ReadBufferObject *self, Py_buffer *Py_UNUSED(view))
{
    self->exports--;
}

static Py_ssize_t
ReadBuffer_length(ReadBufferObject *self)
{
    return self->size;
}

static PyObject *
ReadBuffer_take(ReadBufferObject *self, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0 || n > self->size) {
        PyErr_SetString(PyExc_ValueError, "take: 0 <= n <= size");
        return NULL;
    }
    if (self->exports > 0) {
        PyErr_SetString(PyExc_BufferError, "take: a view of the buffer is still held");
        return NULL;
    }
    if (self->bytes == NULL && n > 0) {
        PyErr_SetString(PyExc_ValueError, "take: nothing was read into the buffer");
        return NULL;
    }
    if (self->bytes == NULL) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    PyObject *out = self->bytes;
    self->bytes = NULL;
    if (n < self->size && _PyBytes_Resize(&out, n) < 0) {
        return NULL;
    }
    return out;
}

static void
ReadBuffer_dealloc(ReadBufferObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_CLEAR(self->bytes);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef ReadBuffer_methods[] = {
    {"take", (PyCFunction)ReadBuffer_take, METH_O,
     "take(n) -> bytes: the first n bytes, the buffer itself made a bytes object (no copy)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot ReadBuffer_slots[] = {
    {Py_tp_doc, "ReadBuffer(size): a buffer to read into, whose bytes are taken with no copy"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, ReadBuffer_init},
    {Py_tp_dealloc, ReadBuffer_dealloc},
    {Py_bf_getbuffer, ReadBuffer_getbuffer},
    {Py_bf_releasebuffer, ReadBuffer_releasebuffer},
    {Py_sq_length, ReadBuffer_length},
    {Py_tp_methods, ReadBuffer_methods},
    {0, NULL},
};

static PyType_Spec ReadBuffer_spec = {
    .name = "utf8stream.apps._apps_speedups.ReadBuffer",
    .basicsize = sizeof(ReadBufferObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ReadBuffer_slots,
};

/* ---- ReadAhead ------------------------------------------------------------------------- */

/* ReadAhead(fd): the next read of a regular file, done ahead in a thread of its own
   while the caller works on the last one (apps/_readahead.py states the contract; its
   users are the follower, which hands out the lines of one read meanwhile, and the file
   transcoder, which converts one chunk meanwhile).  ``start(offset, size, nowait)`` asks
   for the read (with RWF_NOWAIT when ``nowait``: then it never waits for storage, as the
   follower's own reads in the loop); ``take(offset, size)`` returns its bytes, exactly
   those of ``os.pread(fd, size, offset)`` (or of ``os.preadv(fd, [buffer], offset,
   RWF_NOWAIT)``) done when it was started: it waits for the read if it is not done yet
   (without the GIL), raises its OSError, or returns None if no read at that offset and
   size was started (the caller reads itself).  Only a regular file is read ahead (a
   pipe's read could wait for ever, and ``close`` with it): for any other ``start`` says
   False.  The thread reads through a duplicate of ``fd``, so the caller may close its
   own at any time and its file position never moves; ``close()`` stops the thread after
   its current read and closes the duplicate.  The thread touches no Python object: it
   fills the bytes object that ``start`` made, which no one else sees before ``take``
   hands it out (no copy after the kernel's). */

#if defined(__unix__) || defined(__APPLE__)
#define HAVE_READAHEAD 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#else
#define HAVE_READAHEAD 0
#endif

enum { RA_IDLE, RA_ASKED, RA_BUSY, RA_DONE };

#if HAVE_READAHEAD
/* The read-ahead threads running in this process (threads are the process's, whatever
   the interpreter that started them): ReadAhead.threads(). */
static int readahead_threads = 0;
#endif

typedef struct {
    PyObject_HEAD
#if HAVE_READAHEAD
    int fd;         /* the duplicate, -1 once closed */
    int regular;    /* it is a regular file: the only kind read ahead */
    int running;    /* the thread was started (and not joined) */
    pid_t pid;      /* the process that started it: a forked child has no thread */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* Guarded by lock: */
    int state;
    int stopping;
    char *data;     /* the buffer's bytes, written by the thread while ASKED or BUSY */
    long long offset;
    Py_ssize_t size;
    int nowait;
    Py_ssize_t got;
    int err;
    /* The main thread's (under the GIL): */
    PyObject *buffer; /* the bytes object being read into, or read */
#endif
} ReadAheadObject;

#if HAVE_READAHEAD
static void *
readahead_thread(void *arg)
{
    ReadAheadObject *self = (ReadAheadObject *)arg;
    pthread_mutex_lock(&self->lock);
    for (;;) {
        while (self->state != RA_ASKED && !self->stopping) {
            pthread_cond_wait(&self->cond, &self->lock);
        }
        if (self->stopping) {
            break;
        }
        self->state = RA_BUSY;
        char *data = self->data;
        long long offset = self->offset;
        size_t size = (size_t)self->size;
        int nowait = self->nowait, fd = self->fd;
        pthread_mutex_unlock(&self->lock);
        ssize_t n;
        do {
#if defined(RWF_NOWAIT)
            if (nowait) {
                struct iovec v = {data, size};
                n = preadv2(fd, &v, 1, (off_t)offset, RWF_NOWAIT);
            }
            else
#endif
            {
                (void)nowait;
                n = pread(fd, data, size, (off_t)offset);
            }
        } while (n < 0 && errno == EINTR);
        int err = n < 0 ? errno : 0;
#if !defined(RWF_NOWAIT)
        if (nowait) {
            n = -1;
            err = EOPNOTSUPP; /* as os.preadv given a flag this system does not have */
        }
#endif
        pthread_mutex_lock(&self->lock);
        self->got = n < 0 ? 0 : (Py_ssize_t)n;
        self->err = err;
        self->state = RA_DONE;
        pthread_cond_broadcast(&self->cond);
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

/* Until the thread is done with the buffer (the read asked for is done), without the
   GIL.  Called with the GIL. */
static void
readahead_settle(ReadAheadObject *self)
{
    if (!self->running || self->pid != getpid()) {
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    while (self->state == RA_ASKED || self->state == RA_BUSY) {
        pthread_cond_wait(&self->cond, &self->lock);
    }
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS
}

/* The thread stopped and joined, the duplicate closed, the buffer dropped. */
static void
readahead_stop(ReadAheadObject *self)
{
    if (self->running) {
        if (self->pid == getpid()) {
            pthread_mutex_lock(&self->lock);
            self->stopping = 1;
            pthread_cond_broadcast(&self->cond);
            pthread_mutex_unlock(&self->lock);
            Py_BEGIN_ALLOW_THREADS
            pthread_join(self->thread, NULL);
            Py_END_ALLOW_THREADS
        }
        __atomic_sub_fetch(&readahead_threads, 1, __ATOMIC_RELAXED);
        self->running = 0;
    }
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
    self->state = RA_IDLE;
    self->data = NULL;
    Py_CLEAR(self->buffer);
}
#endif

static PyObject *
ReadAhead_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fd", NULL};
    int fd;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i:ReadAhead", kwlist, &fd)) {
        return NULL;
    }
    ReadAheadObject *self = (ReadAheadObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
#if HAVE_READAHEAD
    self->fd = -1;
    self->buffer = NULL;
    self->state = RA_IDLE;
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (pthread_cond_init(&self->cond, NULL) != 0) {
        pthread_mutex_destroy(&self->lock);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* not inherited by a child process */
    struct stat st;
    if (self->fd < 0 || fstat(self->fd, &st) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(self);
        return NULL;
    }
    self->regular = S_ISREG(st.st_mode);
#else
    (void)fd;
#endif
    return (PyObject *)self;
}

static void
ReadAhead_dealloc(ReadAheadObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
#if HAVE_READAHEAD
    readahead_stop(self);
    pthread_cond_destroy(&self->cond);
    pthread_mutex_destroy(&self->lock);
#endif
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* start(offset, size, nowait) -> bool: the read asked for (a read started before and not
   taken is dropped); False where no thread can do it (closed, not a regular file, no
   threads). */
static PyObject *
ReadAhead_start(ReadAheadObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "start(offset, size, nowait)");
        return NULL;
    }
    long long offset = PyLong_AsLongLong(args[0]);
    Py_ssize_t size = PyLong_AsSsize_t(args[1]);
    int nowait = PyObject_IsTrue(args[2]);
    if (((offset == -1 || size == -1) && PyErr_Occurred()) || nowait < 0) {
        return NULL;
    }
    if (offset < 0 || size < 0) {
        PyErr_SetString(PyExc_ValueError, "start: offset and size must be non-negative");
        return NULL;
    }
#if HAVE_READAHEAD
    if (self->fd < 0 || !self->regular || (self->running && self->pid != getpid())) {
        Py_RETURN_FALSE;
    }
    readahead_settle(self);
    Py_CLEAR(self->buffer);
    self->state = RA_IDLE;
    PyObject *buffer = PyBytes_FromStringAndSize(NULL, size);
    if (buffer == NULL) {
        return NULL;
    }
    if (!self->running) {
        self->stopping = 0;
        self->pid = getpid();
        /* The thread blocks every signal (it inherits the mask it is created with), so
           that signals go to the interpreter's threads, as if it did not exist. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int failed = pthread_create(&self->thread, NULL, readahead_thread, self);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (failed) {
            Py_DECREF(buffer);
            Py_RETURN_FALSE;
        }
        __atomic_add_fetch(&readahead_threads, 1, __ATOMIC_RELAXED);
        self->running = 1;
    }
    self->buffer = buffer;
    pthread_mutex_lock(&self->lock);
    self->data = PyBytes_AS_STRING(buffer);
    self->offset = offset;
    self->size = size;
    self->nowait = nowait;
    self->state = RA_ASKED;
    pthread_cond_signal(&self->cond);
    pthread_mutex_unlock(&self->lock);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* take(offset, size) -> bytes | None: the read started at offset for size bytes. */
static PyObject *
ReadAhead_take(ReadAheadObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take(offset, size)");
        return NULL;
    }
    long long offset = PyLong_AsLongLong(args[0]);
    Py_ssize_t size = PyLong_AsSsize_t(args[1]);
    if ((offset == -1 || size == -1) && PyErr_Occurred()) {
        return NULL;
    }
#if HAVE_READAHEAD
    if (self->buffer == NULL || self->offset != offset || self->size != size ||
        self->pid != getpid()) {
        Py_RETURN_NONE;
    }
    readahead_settle(self);
    PyObject *out = self->buffer;
    self->buffer = NULL;
    self->data = NULL;
    self->state = RA_IDLE;
    if (self->err != 0) {
        Py_DECREF(out);
        errno = self->err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (self->got < size && _PyBytes_Resize(&out, self->got) < 0) {
        return NULL;
    }
    return out;
#else
    (void)offset;
    (void)size;
    Py_RETURN_NONE;
#endif
}

static PyObject *
ReadAhead_close(ReadAheadObject *self, PyObject *Py_UNUSED(ignored))
{
#if HAVE_READAHEAD
    readahead_stop(self);
#endif
    Py_RETURN_NONE;
}

/* ReadAhead.threads() -> int: how many read-ahead threads run in this process (a forked
   child counts its parent's until their objects are closed: it has none of them). */
static PyObject *
ReadAhead_threads(PyObject *Py_UNUSED(cls), PyObject *Py_UNUSED(ignored))
{
#if HAVE_READAHEAD
    return PyLong_FromLong(__atomic_load_n(&readahead_threads, __ATOMIC_RELAXED));
#else
    return PyLong_FromLong(0);
#endif
}

static PyMethodDef ReadAhead_methods[] = {
    {"threads", (PyCFunction)ReadAhead_threads, METH_NOARGS | METH_STATIC,
     "threads() -> int: the read-ahead threads running in this process"},
    {"start", (PyCFunction)(void (*)(void))ReadAhead_start, METH_FASTCALL,
     "start(offset, size, nowait) -> bool: read size bytes at offset in the background"},
    {"take", (PyCFunction)(void (*)(void))ReadAhead_take, METH_FASTCALL,
     "take(offset, size) -> bytes | None: the read started there (None: none was)"},
    {"close", (PyCFunction)ReadAhead_close, METH_NOARGS,
     "close(): stop the thread, close the duplicate descriptor"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot ReadAhead_slots[] = {
    {Py_tp_doc, "ReadAhead(fd): the next read of fd, done ahead in a thread"},
    {Py_tp_new, ReadAhead_new},
    {Py_tp_dealloc, ReadAhead_dealloc},
    {Py_tp_methods, ReadAhead_methods},
    {0, NULL},
};

static PyType_Spec ReadAhead_spec = {
    .name = "utf8stream.apps._apps_speedups.ReadAhead",
    .basicsize = sizeof(ReadAheadObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ReadAhead_slots,
};


/* records(cls, texts, offsets, file, path, terminated) -> texts, now the records, last first

   One Line (``cls`` must be this module's) per text: the text, the offset at the same
   index, and the three constants.  Last first: ready for BufferedAsyncIterator, which
   hands items out from the end of its list.  ``offsets``: a list of ints, or a buffer
   of native int64 (Units.lines' packed offsets): then each record keeps the number and
   makes its int only when asked.  The records are made in ``texts`` itself, each
   taking its text's reference (no second list, and no string is touched: a batch's
   strings, made a slice earlier, are out of the processor's first-level cache). */
static PyObject *
records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    module_state *st = get_state(module);
    if (nargs != 6 || !PyType_Check(args[0]) || !PyList_Check(args[1]) ||
        !(PyList_Check(args[2]) || PyObject_CheckBuffer(args[2]))) {
        PyErr_SetString(PyExc_TypeError, "records(cls: type, texts: list, offsets: list | "
                                         "int64 buffer, file, path, terminated)");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    if (cls != st->line_type) {
        PyErr_SetString(PyExc_TypeError, "records: the Line type expected");
        return NULL;
    }
    PyObject *texts = args[1], *offs = args[2];
    Py_ssize_t n = PyList_GET_SIZE(texts);
    const long long *packed = NULL;
    Py_buffer view = {0};
    if (!PyList_Check(offs)) {
        if (PyObject_GetBuffer(offs, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            return NULL;
        }
        if (view.itemsize != sizeof(long long) || view.format == NULL ||
            (strcmp(view.format, "q") != 0 && strcmp(view.format, "@q") != 0)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "records: offsets of format 'q' expected");
            return NULL;
        }
        packed = (const long long *)view.buf;
    }
    Py_ssize_t count = packed ? view.len / (Py_ssize_t)sizeof(long long) : PyList_GET_SIZE(offs);
    if (count < n) {
        if (packed) {
            PyBuffer_Release(&view);
        }
        PyErr_SetString(PyExc_ValueError, "records: fewer offsets than texts");
        return NULL;
    }
    /* Nothing below runs Python code, so texts cannot change size under the loop. */
    PyObject **items = ((PyListObject *)texts)->ob_item;
    PyObject *out = texts;
    for (Py_ssize_t i = 0; i < n; i++) {
        LineObject *r = line_memory(st);
        if (r == NULL) {
            /* The texts taken go back where they were. */
            for (Py_ssize_t k = 0; k < i; k++) {
                LineObject *made = (LineObject *)items[k];
                items[k] = made->text;
                made->text = NULL;
                Py_DECREF(made);
            }
            out = NULL; /* MemoryError is set */
            goto done;
        }
        PyObject_Init((PyObject *)r, cls);
        r->text = items[i]; /* the list's reference */
        if (packed) {
            r->offset = NULL;
            r->off = packed[i];
        }
        else {
            r->offset = Py_NewRef(PyList_GET_ITEM(offs, i));
            r->off = 0;
        }
        r->file = Py_NewRef(args[3]);
        r->path = Py_NewRef(args[4]);
        r->terminated = Py_NewRef(args[5]);
        items[i] = (PyObject *)r;
    }
    for (Py_ssize_t i = 0, j = n - 1; i < j; i++, j--) {
        PyObject *t = items[i];
        items[i] = items[j];
        items[j] = t;
    }
    Py_INCREF(out);
done:
    if (packed) {
        PyBuffer_Release(&view);
    }
    return out;
}


static PyMethodDef module_methods[] = {
    {"records", (PyCFunction)(void (*)(void))records, METH_FASTCALL,
     "records(cls, texts, offsets, file, path, terminated) -> texts, made the records "
     "(of cls), last first"},
    {NULL, NULL, 0, NULL},
};

static int
module_exec(PyObject *m)
{
    module_state *st = get_state(m);
    st->line_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Line_spec, NULL);
    if (st->line_type == NULL || PyModule_AddType(m, st->line_type) < 0) {
        return -1;
    }
    st->readbuffer_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &ReadBuffer_spec, NULL);
    if (st->readbuffer_type == NULL || PyModule_AddType(m, st->readbuffer_type) < 0) {
        return -1;
    }
    st->readahead_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &ReadAhead_spec, NULL);
    if (st->readahead_type == NULL || PyModule_AddType(m, st->readahead_type) < 0) {
        return -1;
    }
    return 0;
}

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
    module_state *st = get_state(m);
    Py_VISIT(st->line_type);
    Py_VISIT(st->readbuffer_type);
    Py_VISIT(st->readahead_type);
    return 0;
}

static int
module_clear(PyObject *m)
{
    module_state *st = get_state(m);
    Py_CLEAR(st->line_type);
    Py_CLEAR(st->readbuffer_type);
    Py_CLEAR(st->readahead_type);
    while (st->line_free != NULL) {
        PyObject *next = ((LineObject *)st->line_free)->text;
        PyObject_Free(st->line_free);
        st->line_free = next;
    }
    st->n_line_free = 0;
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
    .m_name = "utf8stream.apps._apps_speedups",
    .m_doc = "Optional C accelerator for the follower; it works without it.",
    .m_size = sizeof(module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__apps_speedups(void)
{
    return PyModuleDef_Init(&module_def);
}
