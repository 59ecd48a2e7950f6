/* module.c -- Python glue of spline_analysis._tcp.
 *
 * Columns arrive as objects supporting the buffer protocol (contiguous numpy arrays); their
 * byte sizes are checked against the frame count. Results leave as bytearrays that Python
 * wraps with np.frombuffer. Only the CPython C API is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "tcp_native.h"

#define N_PACKET_COLUMNS 20

/* Column order of the `packets` tuple, with the element size in bytes and elements per row. */
static const struct {
    const char *name;
    Py_ssize_t item_bytes;
    Py_ssize_t per_row;
} PACKET_COLUMNS[N_PACKET_COLUMNS] = {
    {"ts_ns", 8, 1},
    {"decode_flags", 1, 1},
    {"src_addr", 1, 16},
    {"dst_addr", 1, 16},
    {"sport", 2, 1},
    {"dport", 2, 1},
    {"seq", 4, 1},
    {"ack", 4, 1},
    {"tcp_flags", 2, 1},
    {"window", 2, 1},
    {"tcp_header_len", 1, 1},
    {"tcp_payload_len", 4, 1},
    {"opt_mss", 2, 1},
    {"opt_wscale", 1, 1},
    {"opt_sack_permitted", 1, 1},
    {"opt_has_ts", 1, 1},
    {"sack_count", 1, 1},
    {"sack_left", 4, 4},
    {"sack_right", 4, 4},
    {"opt_mptcp", 2, 1},
};
#define N_USED_COLUMNS N_PACKET_COLUMNS

typedef struct {
    Py_buffer views[N_USED_COLUMNS];
    int n_views;
    tcp_packets_t pk;
} packet_views_t;

static void release_views(packet_views_t *v) {
    for (int i = 0; i < v->n_views; i++) PyBuffer_Release(&v->views[i]);
    v->n_views = 0;
}

/* Fills v->pk from a tuple of N_USED_COLUMNS buffers holding n_frames rows. */
static int get_packet_views(PyObject *columns, Py_ssize_t n_frames, packet_views_t *v) {
    v->n_views = 0;
    if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != N_USED_COLUMNS) {
        PyErr_Format(PyExc_TypeError, "packets must be a tuple of %d column buffers", N_USED_COLUMNS);
        return -1;
    }
    const void *ptrs[N_USED_COLUMNS];
    for (int i = 0; i < N_USED_COLUMNS; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(columns, i), &v->views[i], PyBUF_C_CONTIGUOUS) < 0) {
            release_views(v);
            return -1;
        }
        v->n_views++;
        Py_ssize_t want = n_frames * PACKET_COLUMNS[i].item_bytes * PACKET_COLUMNS[i].per_row;
        if (v->views[i].len != want) {
            PyErr_Format(PyExc_ValueError, "column %s holds %zd bytes, expected %zd", PACKET_COLUMNS[i].name,
                         v->views[i].len, want);
            release_views(v);
            return -1;
        }
        ptrs[i] = v->views[i].buf;
    }
    tcp_packets_t *pk = &v->pk;
    pk->n_frames = (size_t)n_frames;
    pk->ts_ns = ptrs[0];
    pk->decode_flags = ptrs[1];
    pk->src_addr = ptrs[2];
    pk->dst_addr = ptrs[3];
    pk->sport = ptrs[4];
    pk->dport = ptrs[5];
    pk->seq = ptrs[6];
    pk->ack = ptrs[7];
    pk->tcp_flags = ptrs[8];
    pk->window = ptrs[9];
    pk->tcp_header_len = ptrs[10];
    pk->tcp_payload_len = ptrs[11];
    pk->opt_mss = ptrs[12];
    pk->opt_wscale = ptrs[13];
    pk->opt_sack_permitted = ptrs[14];
    pk->opt_has_ts = ptrs[15];
    pk->sack_count = ptrs[16];
    pk->sack_left = ptrs[17];
    pk->sack_right = ptrs[18];
    pk->opt_mptcp = ptrs[19];
    return 0;
}

static PyObject *new_bytearray(Py_ssize_t n_bytes, void **data) {
    PyObject *b = PyByteArray_FromStringAndSize(NULL, n_bytes);
    if (b) *data = PyByteArray_AS_STRING(b);
    return b;
}

/* Adds a bytearray copy of `data` under `name` to dict `d`; returns -1 on failure. */
static int put_copy(PyObject *d, const char *name, const void *data, Py_ssize_t n_bytes) {
    void *dst;
    PyObject *b = new_bytearray(n_bytes, &dst);
    if (!b) return -1;
    if (n_bytes) memcpy(dst, data, (size_t)n_bytes);
    int rc = PyDict_SetItemString(d, name, b);
    Py_DECREF(b);
    return rc;
}

static PyObject *py_assign_streams(PyObject *self, PyObject *args) {
    Py_ssize_t n_frames;
    PyObject *columns;
    if (!PyArg_ParseTuple(args, "nO!:assign_streams", &n_frames, &PyTuple_Type, &columns)) return NULL;
    packet_views_t v;
    if (get_packet_views(columns, n_frames, &v) < 0) return NULL;

    PyObject *result = PyDict_New();
    PyObject *stream = NULL, *conversation = NULL, *direction = NULL, *seq64 = NULL, *ack64 = NULL;
    tcp_frame_streams_t fr;
    tcp_streams_t st;
    memset(&st, 0, sizeof(st));
    if (!result) goto fail;
    stream = new_bytearray(n_frames * 4, (void **)&fr.stream);
    conversation = new_bytearray(n_frames * 4, (void **)&fr.conversation);
    direction = new_bytearray(n_frames, (void **)&fr.direction);
    seq64 = new_bytearray(n_frames * 8, (void **)&fr.seq64);
    ack64 = new_bytearray(n_frames * 8, (void **)&fr.ack64);
    if (!stream || !conversation || !direction || !seq64 || !ack64) goto fail;

    int rc;
    Py_BEGIN_ALLOW_THREADS rc = tcp_assign_streams(&v.pk, &fr, &st);
    Py_END_ALLOW_THREADS if (rc < 0) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t c = (Py_ssize_t)st.count;
    if (PyDict_SetItemString(result, "stream", stream) < 0 ||
        PyDict_SetItemString(result, "conversation", conversation) < 0 ||
        PyDict_SetItemString(result, "direction", direction) < 0 || PyDict_SetItemString(result, "seq64", seq64) < 0 ||
        PyDict_SetItemString(result, "ack64", ack64) < 0 || put_copy(result, "a_addr", st.a_addr, c * 16) < 0 ||
        put_copy(result, "b_addr", st.b_addr, c * 16) < 0 || put_copy(result, "a_port", st.a_port, c * 2) < 0 ||
        put_copy(result, "b_port", st.b_port, c * 2) < 0 ||
        put_copy(result, "first_frame", st.first_frame, c * 8) < 0 ||
        put_copy(result, "last_frame", st.last_frame, c * 8) < 0 ||
        put_copy(result, "packets", st.packets, c * 16) < 0 ||
        put_copy(result, "payload_bytes", st.payload_bytes, c * 16) < 0 ||
        put_copy(result, "syn_seen", st.syn_seen, c) < 0 ||
        put_copy(result, "window_scale", st.window_scale, c * 2) < 0 || put_copy(result, "mss", st.mss, c * 8) < 0 ||
        put_copy(result, "sack_permitted", st.sack_permitted, c * 2) < 0 ||
        put_copy(result, "timestamps", st.timestamps, c * 2) < 0)
        goto fail;
    PyObject *count = PyLong_FromSsize_t(c);
    if (!count || PyDict_SetItemString(result, "count", count) < 0) {
        Py_XDECREF(count);
        goto fail;
    }
    Py_DECREF(count);
    tcp_streams_free(&st);
    release_views(&v);
    Py_DECREF(stream);
    Py_DECREF(conversation);
    Py_DECREF(direction);
    Py_DECREF(seq64);
    Py_DECREF(ack64);
    return result;
fail:
    tcp_streams_free(&st);
    release_views(&v);
    Py_XDECREF(result);
    Py_XDECREF(stream);
    Py_XDECREF(conversation);
    Py_XDECREF(direction);
    Py_XDECREF(seq64);
    Py_XDECREF(ack64);
    return NULL;
}

static PyObject *py_wireshark_analyze(PyObject *self, PyObject *args) {
    Py_ssize_t n_frames, n_conversations;
    PyObject *columns, *conversation_obj, *direction_obj;
    if (!PyArg_ParseTuple(args, "nO!OOn:wireshark_analyze", &n_frames, &PyTuple_Type, &columns, &conversation_obj,
                          &direction_obj, &n_conversations))
        return NULL;
    packet_views_t v;
    if (get_packet_views(columns, n_frames, &v) < 0) return NULL;
    Py_buffer conv_view, dir_view;
    if (PyObject_GetBuffer(conversation_obj, &conv_view, PyBUF_C_CONTIGUOUS) < 0) {
        release_views(&v);
        return NULL;
    }
    if (PyObject_GetBuffer(direction_obj, &dir_view, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&conv_view);
        release_views(&v);
        return NULL;
    }
    PyObject *result = NULL, *flags = NULL, *rtt = NULL, *acked = NULL, *bif = NULL, *dupnum = NULL;
    if (conv_view.len != n_frames * 4 || dir_view.len != n_frames) {
        PyErr_SetString(PyExc_ValueError, "conversation/direction do not match the frame count");
        goto done;
    }
    tcp_analysis_out_t out;
    flags = new_bytearray(n_frames * 4, (void **)&out.flags);
    rtt = new_bytearray(n_frames * 8, (void **)&out.ack_rtt_ns);
    acked = new_bytearray(n_frames * 8, (void **)&out.acked_frame);
    bif = new_bytearray(n_frames * 8, (void **)&out.bytes_in_flight);
    dupnum = new_bytearray(n_frames * 4, (void **)&out.dupack_num);
    if (!flags || !rtt || !acked || !bif || !dupnum) goto done;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc =
        tcp_wireshark_analyze(&v.pk, conv_view.buf, dir_view.buf, (size_t)n_conversations, &out);
    Py_END_ALLOW_THREADS if (rc < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("{sOsOsOsOsO}", "flags", flags, "ack_rtt_ns", rtt, "acked_frame", acked, "bytes_in_flight",
                           bif, "dupack_num", dupnum);
done:
    Py_XDECREF(flags);
    Py_XDECREF(rtt);
    Py_XDECREF(acked);
    Py_XDECREF(bif);
    Py_XDECREF(dupnum);
    PyBuffer_Release(&conv_view);
    PyBuffer_Release(&dir_view);
    release_views(&v);
    return result;
}

static PyMethodDef methods[] = {
    {"assign_streams", py_assign_streams, METH_VARARGS,
     "assign_streams(n_frames, columns) -> dict of bytearrays: tshark tcp.stream per frame and the stream table"},
    {"wireshark_analyze", py_wireshark_analyze, METH_VARARGS,
     "wireshark_analyze(n_frames, columns, conversation, direction, n_conversations) -> dict of bytearrays"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_tcp",
    "TCP streams and Wireshark 4.0-compatible sequence analysis (C passes over the packet table).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__tcp(void) { return PyModule_Create(&module); }
