/*
 * module.c -- Python glue for the truth-seeking pass (truth_core.h): the packet
 * table's columns arrive through the buffer protocol, the outputs leave as
 * bytearrays that truth.py wraps with numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "truth_core.h"

#define N_INPUTS  20
#define N_OUTPUTS 8

/*
 * analyze(n_directions, direction, ts_ns, seq, ack, tcp_flags, payload_len, window,
 *         ip_id, decode_flags, ttl, has_ts, tsval, tsecr, sack_count,
 *         sack_left, sack_right, mode, mss, id_per_packet, sack_negotiated)
 * -> (kind u8[N], rtt_us f64[N], rtt_direction i32[N], in_flight i64[N],
 *     id64 i64[N], hole_age_ns i64[N], stats i64[n_directions, S_N_FIELDS], lost_repairs i32[N])
 */
static PyObject *analyze(PyObject *self, PyObject *args) {
    Py_ssize_t n_directions;
    PyObject *o[N_INPUTS];
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOOOOOOOOOO", &n_directions, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18],
                          &o[19]))
        return NULL;
    if (n_directions < 0 || n_directions % 2 != 0) {
        PyErr_SetString(PyExc_ValueError, "n_directions must be even and not negative (pairs d, d ^ 1)");
        return NULL;
    }
    static const Py_ssize_t item_bytes[N_INPUTS] = {
        4, 8, 4, 4, 2, 4, 2, 4, 1, 1, 1, 4, 4, 1, 4 * TRUTH_MAX_SACK, 4 * TRUTH_MAX_SACK, 1, 8, 1, 1};
    static const char *names[N_INPUTS] = {"direction",   "ts_ns",  "seq",   "ack",           "tcp_flags",
                                          "payload_len", "window", "ip_id", "decode_flags",  "ttl",
                                          "has_ts",      "tsval",  "tsecr", "sack_count",    "sack_left",
                                          "sack_right",  "mode",   "mss",   "id_per_packet", "sack_negotiated"};
    Py_buffer b[N_INPUTS];
    int held = 0;
    PyObject *result = NULL, *outs[N_OUTPUTS] = {NULL};
    Py_ssize_t n = 0;
    for (; held < N_INPUTS; held++) {
        if (PyObject_GetBuffer(o[held], &b[held], PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (held == 0) n = b[0].len / 4;
        Py_ssize_t rows = held >= 16 ? n_directions : n;
        if (b[held].len != item_bytes[held] * rows) {
            PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", names[held], item_bytes[held] * rows,
                         b[held].len);
            held++;
            goto done;
        }
    }
    static const Py_ssize_t out_bytes[6] = {1, 8, 4, 8, 8, 8};
    for (int j = 0; j < 6; j++)
        if (!(outs[j] = PyByteArray_FromStringAndSize(NULL, n * out_bytes[j]))) goto done;
    if (!(outs[6] = PyByteArray_FromStringAndSize(NULL, n_directions * S_N_FIELDS * 8))) goto done;
    if (!(outs[7] = PyByteArray_FromStringAndSize(NULL, n * 4))) goto done;

    truth_input in = {
        .n_packets = n,
        .n_directions = n_directions,
        .direction = b[0].buf,
        .ts_ns = b[1].buf,
        .seq = b[2].buf,
        .ack = b[3].buf,
        .tcp_flags = b[4].buf,
        .payload_len = b[5].buf,
        .window = b[6].buf,
        .ip_id = b[7].buf,
        .decode_flags = b[8].buf,
        .ttl = b[9].buf,
        .has_ts = b[10].buf,
        .tsval = b[11].buf,
        .tsecr = b[12].buf,
        .sack_count = b[13].buf,
        .sack_left = b[14].buf,
        .sack_right = b[15].buf,
        .mode = b[16].buf,
        .mss = b[17].buf,
        .id_per_packet = b[18].buf,
        .sack_negotiated = b[19].buf,
    };
    truth_output out = {
        .kind = (uint8_t *)PyByteArray_AS_STRING(outs[0]),
        .rtt_us = (double *)PyByteArray_AS_STRING(outs[1]),
        .rtt_direction = (int32_t *)PyByteArray_AS_STRING(outs[2]),
        .in_flight = (int64_t *)PyByteArray_AS_STRING(outs[3]),
        .id64 = (int64_t *)PyByteArray_AS_STRING(outs[4]),
        .hole_age_ns = (int64_t *)PyByteArray_AS_STRING(outs[5]),
        .stats = (int64_t *)PyByteArray_AS_STRING(outs[6]),
        .lost_repairs = (int32_t *)PyByteArray_AS_STRING(outs[7]),
    };
    int status;
    Py_BEGIN_ALLOW_THREADS status = truth_analyze(&in, &out);
    Py_END_ALLOW_THREADS if (status == -2) {
        PyErr_SetString(PyExc_ValueError, "n_directions must be even");
        goto done;
    }
    if (status != 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyTuple_New(N_OUTPUTS);
    if (!result) goto done;
    for (int j = 0; j < N_OUTPUTS; j++) {
        PyTuple_SET_ITEM(result, j, outs[j]);
        outs[j] = NULL;
    }
done:
    for (int j = 0; j < held; j++) PyBuffer_Release(&b[j]);
    for (int j = 0; j < N_OUTPUTS; j++) Py_XDECREF(outs[j]);
    return result;
}

static PyMethodDef METHODS[] = {{"analyze", analyze, METH_VARARGS,
                                 "One pass of truth-seeking TCP classification over a packet table (see truth.py)."},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_truth", "Truth-seeking pass (C).", -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__truth(void) { return PyModule_Create(&MODULE); }
