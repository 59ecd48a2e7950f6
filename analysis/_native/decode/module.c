/*
 * module.c -- CPython binding of the pure-C walker (file.c finds the frames, frame.c decodes them).
 *
 * Python owns everything: the walker state lives in a bytearray (so its
 * lifetime is a Python object's), the capture is any object exporting a
 * buffer (an mmap), and each walk returns one bytearray per packet-table
 * column, which the Python side wraps with numpy.frombuffer. Only the
 * CPython C API is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

#include "decode.h"

/* A mapped file that shrinks while it is walked (tcpdump rotating it, a user truncating
 * it) faults with SIGBUS on the pages past its new end. The walk runs with an escape set:
 * the handler jumps back to it and the walk reports an error at the chunk's offset
 * instead of the process dying. A SIGBUS outside a walk keeps its previous behaviour. */
static _Thread_local sigjmp_buf *walk_escape;
static struct sigaction previous_sigbus;

static void on_sigbus(int signo, siginfo_t *info, void *context) {
    if (walk_escape != NULL) siglongjmp(*walk_escape, 1);
    sigaction(SIGBUS, &previous_sigbus, NULL);
    raise(signo);
    (void)info;
    (void)context;
}

static int install_sigbus_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGBUS, &action, &previous_sigbus);
}

#define SHRANK_MESSAGE "the file shrank while it was read (truncated or rewritten by another program)"

/* The packet-table columns, in analysis/columns.py order: name, bytes per
 * row, and where decode_columns keeps the array pointer. */
typedef struct column_spec {
    const char *name;
    size_t row_bytes;
    size_t pointer_offset;
} column_spec;

#define COLUMN(field, bytes) {#field, bytes, offsetof(decode_columns, field)}
static const column_spec COLUMNS[] = {
    COLUMN(ts_ns, 8),
    COLUMN(frame_len, 4),
    COLUMN(cap_len, 4),
    COLUMN(interface, 2),
    COLUMN(link_type, 2),
    COLUMN(decode_flags, 1),
    COLUMN(ip_version, 1),
    COLUMN(src_addr, 16),
    COLUMN(dst_addr, 16),
    COLUMN(ip_id, 4),
    COLUMN(ttl, 1),
    COLUMN(ip_proto, 1),
    COLUMN(ip_payload_len, 4),
    COLUMN(sport, 2),
    COLUMN(dport, 2),
    COLUMN(seq, 4),
    COLUMN(ack, 4),
    COLUMN(tcp_flags, 2),
    COLUMN(window, 2),
    COLUMN(tcp_header_len, 1),
    COLUMN(tcp_payload_len, 4),
    COLUMN(opt_mss, 2),
    COLUMN(opt_wscale, 1),
    COLUMN(opt_sack_permitted, 1),
    COLUMN(opt_has_ts, 1),
    COLUMN(opt_tsval, 4),
    COLUMN(opt_tsecr, 4),
    COLUMN(sack_count, 1),
    COLUMN(sack_left, 4 * DECODE_MAX_SACK_BLOCKS),
    COLUMN(sack_right, 4 * DECODE_MAX_SACK_BLOCKS),
    COLUMN(ip_frag_offset, 2),
    COLUMN(ts_valid, 1),
    COLUMN(opt_mptcp, 2),
    COLUMN(ip_ecn, 1),
};
#define N_COLUMNS (sizeof COLUMNS / sizeof COLUMNS[0])

static decode_state *state_from(PyObject *obj) {
    if (!PyByteArray_Check(obj) || (size_t)PyByteArray_GET_SIZE(obj) != sizeof(decode_state)) {
        PyErr_SetString(PyExc_TypeError, "state must be a bytearray from new_state()");
        return NULL;
    }
    return (decode_state *)PyByteArray_AS_STRING(obj);
}

static PyObject *py_new_state(PyObject *self, PyObject *args) {
    PyObject *state = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(decode_state));
    if (state) memset(PyByteArray_AS_STRING(state), 0, sizeof(decode_state));
    return state;
}

/* open(state, buffer) -> (status, first_offset, format, message, error_offset) */
static PyObject *py_open(PyObject *self, PyObject *args) {
    PyObject *state_obj, *buffer_obj;
    if (!PyArg_ParseTuple(args, "OO", &state_obj, &buffer_obj)) return NULL;
    decode_state *st = state_from(state_obj);
    if (!st) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer_obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    size_t first = 0;
    volatile int status = DECODE_ERROR;
    sigjmp_buf escape;
    if (sigsetjmp(escape, 1) == 0) {
        walk_escape = &escape;
        status = decode_open(st, (const uint8_t *)view.buf, (size_t)view.len, &first);
    } else {
        status = DECODE_ERROR;
        st->error_offset = 0;
        snprintf(st->error_message, sizeof st->error_message, "%s", SHRANK_MESSAGE);
    }
    walk_escape = NULL;
    PyBuffer_Release(&view);
    return Py_BuildValue("(innsK)", status, (Py_ssize_t)first, (Py_ssize_t)st->format, st->error_message,
                         (unsigned long long)(status == DECODE_CUT ? st->cut_offset : st->error_offset));
}

/* allocate(rows) -> tuple of zeroed bytearrays, one per column, for `rows` rows */
static PyObject *py_allocate(PyObject *self, PyObject *args) {
    Py_ssize_t rows;
    if (!PyArg_ParseTuple(args, "n", &rows)) return NULL;
    if (rows < 0) {
        PyErr_SetString(PyExc_ValueError, "negative row count");
        return NULL;
    }
    PyObject *columns = PyTuple_New((Py_ssize_t)N_COLUMNS);
    if (!columns) return NULL;
    for (size_t c = 0; c < N_COLUMNS; c++) {
        if ((size_t)rows > (size_t)PY_SSIZE_T_MAX / COLUMNS[c].row_bytes) {
            Py_DECREF(columns);
            return PyErr_NoMemory();
        }
        PyObject *array = PyByteArray_FromStringAndSize(NULL, rows * (Py_ssize_t)COLUMNS[c].row_bytes);
        if (!array) {
            Py_DECREF(columns);
            return NULL;
        }
        PyTuple_SET_ITEM(columns, (Py_ssize_t)c, array);
    }
    return columns;
}

/* walk(state, buffer, offset, max_packets, columns=None, first_row=0)
 *   -> (status, offset, rows, message)
 * With columns (from allocate), decodes into rows [first_row, first_row + rows);
 * without, only counts records. */
static PyObject *py_walk(PyObject *self, PyObject *args) {
    PyObject *state_obj, *buffer_obj, *columns = Py_None;
    Py_ssize_t offset, max_packets, first_row = 0;
    if (!PyArg_ParseTuple(args, "OOnn|On", &state_obj, &buffer_obj, &offset, &max_packets, &columns, &first_row))
        return NULL;
    decode_state *st = state_from(state_obj);
    if (!st) return NULL;
    if (offset < 0 || max_packets < 0 || first_row < 0) {
        PyErr_SetString(PyExc_ValueError, "negative offset, count or row");
        return NULL;
    }
    decode_columns cols;
    memset(&cols, 0, sizeof cols);
    int counting = columns == Py_None;
    if (!counting) {
        if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != (Py_ssize_t)N_COLUMNS) {
            PyErr_SetString(PyExc_TypeError, "columns must be the tuple from allocate()");
            return NULL;
        }
        for (size_t c = 0; c < N_COLUMNS; c++) {
            PyObject *array = PyTuple_GET_ITEM(columns, (Py_ssize_t)c);
            if (!PyByteArray_Check(array)) {
                PyErr_SetString(PyExc_TypeError, "columns must be bytearrays");
                return NULL;
            }
            size_t capacity_rows = (size_t)PyByteArray_GET_SIZE(array) / COLUMNS[c].row_bytes;
            if ((size_t)first_row > capacity_rows || (size_t)max_packets > capacity_rows - (size_t)first_row) {
                PyErr_SetString(PyExc_ValueError, "columns too small for first_row + max_packets");
                return NULL;
            }
            *(void **)((char *)&cols + COLUMNS[c].pointer_offset) =
                PyByteArray_AS_STRING(array) + (size_t)first_row * COLUMNS[c].row_bytes;
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buffer_obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    size_t rows = 0, next = 0;
    volatile int status = DECODE_ERROR;
    volatile int shrank = 0;
    sigjmp_buf escape;
    Py_BEGIN_ALLOW_THREADS if (sigsetjmp(escape, 1) == 0) {
        walk_escape = &escape;
        status = decode_walk(st, (const uint8_t *)view.buf, (size_t)view.len, (size_t)offset, counting ? NULL : &cols,
                             (size_t)max_packets, &rows, &next);
    }
    else { shrank = 1; }
    walk_escape = NULL;
    Py_END_ALLOW_THREADS if (shrank) {
        status = DECODE_ERROR;
        rows = 0;
        st->error_offset = (size_t)offset;
        snprintf(st->error_message, sizeof st->error_message, "%s", SHRANK_MESSAGE);
    }
    PyBuffer_Release(&view);
    unsigned long long where = status == DECODE_CUT ? st->cut_offset : status == DECODE_ERROR ? st->error_offset : next;
    return Py_BuildValue("(iKns)", status, where, (Py_ssize_t)rows, st->error_message);
}

/* interfaces(state) -> list of dicts */
static PyObject *py_interfaces(PyObject *self, PyObject *args) {
    PyObject *state_obj;
    if (!PyArg_ParseTuple(args, "O", &state_obj)) return NULL;
    decode_state *st = state_from(state_obj);
    if (!st) return NULL;
    uint32_t count = st->interface_count > DECODE_MAX_INTERFACES ? DECODE_MAX_INTERFACES : st->interface_count;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (uint32_t i = 0; i < count; i++) {
        const decode_interface *ifc = &st->interfaces[i];
        PyObject *name = PyUnicode_DecodeUTF8(ifc->name, (Py_ssize_t)strnlen(ifc->name, sizeof ifc->name), "replace");
        if (!name) {
            Py_DECREF(list);
            return NULL;
        }
        PyObject *item = Py_BuildValue(
            "{s:i,s:k,s:i,s:L,s:N,s:O,s:K,s:O,s:K,s:k}", "link_type", (int)ifc->link_type, "snaplen",
            (unsigned long)ifc->snaplen, "tsresol", (int)ifc->tsresol, "tsoffset_s", (long long)ifc->tsoffset_s, "name",
            name, "has_ifdrop", ifc->has_ifdrop ? Py_True : Py_False, "isb_ifdrop", (unsigned long long)ifc->isb_ifdrop,
            "has_osdrop", ifc->has_osdrop ? Py_True : Py_False, "isb_osdrop", (unsigned long long)ifc->isb_osdrop,
            "isb_count", (unsigned long)ifc->isb_count);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

static PyObject *py_counters(PyObject *self, PyObject *args) {
    PyObject *state_obj;
    if (!PyArg_ParseTuple(args, "O", &state_obj)) return NULL;
    decode_state *st = state_from(state_obj);
    if (!st) return NULL;
    /* Sums over section-local interface ids of their last ISB's counters (None = no ISB had it). */
    unsigned long long ifdrop = 0, osdrop = 0;
    int has_ifdrop = 0, has_osdrop = 0;
    for (size_t i = 0; i < DECODE_MAX_INTERFACES; i++) {
        const decode_isb_by_local_id *last = &st->isb_by_local_id[i];
        if (!last->seen) continue;
        if (last->has_ifdrop) {
            has_ifdrop = 1;
            ifdrop += last->isb_ifdrop;
        }
        if (last->has_osdrop) {
            has_osdrop = 1;
            osdrop += last->isb_osdrop;
        }
    }
    PyObject *ifdrop_obj = has_ifdrop ? PyLong_FromUnsignedLongLong(ifdrop) : (Py_INCREF(Py_None), Py_None);
    PyObject *osdrop_obj = has_osdrop ? PyLong_FromUnsignedLongLong(osdrop) : (Py_INCREF(Py_None), Py_None);
    if (!ifdrop_obj || !osdrop_obj) {
        Py_XDECREF(ifdrop_obj);
        Py_XDECREF(osdrop_obj);
        return NULL;
    }
    return Py_BuildValue("{s:K,s:k,s:i,s:N,s:N}", "nonpacket_records", (unsigned long long)st->nonpacket_records,
                         "sections", (unsigned long)st->section_count, "big_endian", st->big_endian,
                         "isb_ifdrop_by_local_id", ifdrop_obj, "isb_osdrop_by_local_id", osdrop_obj);
}

static PyMethodDef METHODS[] = {
    {"new_state", py_new_state, METH_NOARGS, "A zeroed walker state (bytearray)."},
    {"open", py_open, METH_VARARGS, "open(state, buffer) -> (status, first_offset, format, message, offset)"},
    {"allocate", py_allocate, METH_VARARGS, "allocate(rows) -> tuple of column bytearrays"},
    {"walk", py_walk, METH_VARARGS,
     "walk(state, buffer, offset, max_packets, columns=None, first_row=0) -> (status, offset, rows, message)"},
    {"interfaces", py_interfaces, METH_VARARGS, "interfaces(state) -> list of interface dicts"},
    {"counters", py_counters, METH_VARARGS, "counters(state) -> dict"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_decode", "Capture walker (C).", -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__decode(void) {
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    if (install_sigbus_handler() != 0) {
        Py_DECREF(m);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *specs = PyTuple_New((Py_ssize_t)N_COLUMNS);
    if (!specs) {
        Py_DECREF(m);
        return NULL;
    }
    for (size_t c = 0; c < N_COLUMNS; c++)
        PyTuple_SET_ITEM(specs, (Py_ssize_t)c,
                         Py_BuildValue("(sn)", COLUMNS[c].name, (Py_ssize_t)COLUMNS[c].row_bytes));
    PyModule_AddObject(m, "COLUMNS", specs);
    PyModule_AddIntConstant(m, "MORE", DECODE_MORE);
    PyModule_AddIntConstant(m, "END", DECODE_END);
    PyModule_AddIntConstant(m, "CUT", DECODE_CUT);
    PyModule_AddIntConstant(m, "ERROR", DECODE_ERROR);
    PyModule_AddIntConstant(m, "FORMAT_PCAP", DECODE_FORMAT_PCAP);
    PyModule_AddIntConstant(m, "FORMAT_PCAPNG", DECODE_FORMAT_PCAPNG);
    return m;
}
