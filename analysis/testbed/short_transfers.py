"""Short connections, one after the other, as a web client's downloads make them (`connections`).

iperf3 cannot make them: with `-n BYTES` its client ends the test once it has written the
bytes, and its server closes the data socket on the end-of-test message, resetting the
connection while its last flight may still be in flight (a dropped segment there is never
repaired). Here the receiver reads each connection to its end (the sender's FIN) and only
then closes, so every byte written is delivered and every drop repaired, as an HTTP server's
response is read by the browser; the handshake, the tail (loss probes) and the FIN of every
connection fall inside the capture.

    python -m spline_analysis.testbed.short_transfers serve ADDRESS PORT COUNT OUT.json
    python -m spline_analysis.testbed.short_transfers send ADDRESS PORT FIRST_CLIENT_PORT COUNT BYTES CCA OUT.json

`serve` accepts COUNT connections in turn, reads each to end of file, closes it, and writes
per connection the bytes read, when it was accepted and when its last data was there to read. `send`
opens COUNT connections in turn from FIRST_CLIENT_PORT upwards (one port each), each with the
congestion control CCA set on its socket (as `iperf3 -C`), writes BYTES, shuts its sending
side, waits for the receiver's close and closes; it writes per connection the port and the
congestion control the socket reported.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

READ_CHUNK_BYTES = 262144
WRITE_CHUNK_BYTES = 131072  # iperf3's default block
CONNECT_TIMEOUT_S = 30.0  # a SYN dropped several times still connects within it (1, 2, 4, 8 s)


def family_of(address: str) -> int:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def read_to_end(connection: socket.socket) -> Tuple[int, float]:
    """(bytes read, when the last data was there to read, time.time(): the captures' clock)
    until end of file. The kernel's receive stamps (SO_TIMESTAMPNS) do not serve: TCP coalesces
    segments in its receive queue and keeps the newest one's stamp, and a repair that fills a
    hole takes the stamps of the segments held behind it (a repair 211 ms after the rest read
    as the rest's time). The process waits in each read, so it is late by its wake-up."""
    total_bytes, last_s = 0, 0.0
    while True:
        chunk = connection.recv(READ_CHUNK_BYTES)
        if not chunk:
            return total_bytes, last_s
        last_s = time.time()
        total_bytes += len(chunk)


def serve(address: str, port: int, count: int) -> List[Dict[str, float]]:
    """Accept `count` connections in turn and read each to its end; per connection the client
    port, bytes read, when it was accepted (`first_read_s`) and when its last data was there to
    read (`last_read_s`, read_to_end)."""
    results: List[Dict[str, float]] = []
    with socket.socket(family_of(address), socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(count)
        for _ in range(count):
            connection, peer = listener.accept()
            # the connection is open: its first data follows at once (the sender writes as its
            # handshake ends), and the receiver is receiving from then on, also where that data
            # was lost and nothing could be read until its repair (the first read came 0.5 s
            # after the first data when a timeout repaired the first segment)
            accepted_s = time.time()
            with connection:
                read_bytes, last_s = read_to_end(connection)
            results.append(
                {"port": int(peer[1]), "bytes": read_bytes, "first_read_s": accepted_s, "last_read_s": last_s}
            )
    return results


def send_one(address: str, port: int, client_port: int, payload: bytes, cca: str) -> Dict[str, object]:
    """One connection from `client_port`: write `payload`, shut the sending side, wait for the
    receiver's close; the congestion control its socket reported."""
    with socket.socket(family_of(address), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
        sock.bind(("::" if family_of(address) == socket.AF_INET6 else "0.0.0.0", client_port))
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect((address, port))
        sock.settimeout(None)
        reported = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
        view = memoryview(payload)
        for offset in range(0, len(payload), WRITE_CHUNK_BYTES):
            sock.sendall(view[offset : offset + WRITE_CHUNK_BYTES])
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(READ_CHUNK_BYTES):
            pass
    return {"port": client_port, "bytes": len(payload), "cca": reported}


def send(address: str, port: int, first_client_port: int, count: int, size_bytes: int, cca: str) -> List[Dict]:
    """`count` connections in turn, each writing `size_bytes`."""
    payload = bytes(size_bytes)
    return [send_one(address, port, first_client_port + i, payload, cca) for i in range(count)]


def main(argv: Sequence[str]) -> int:
    if len(argv) == 5 and argv[0] == "serve":
        results = serve(argv[1], int(argv[2]), int(argv[3]))
        Path(argv[4]).write_text(json.dumps({"connections": results}, indent=2) + "\n", encoding="utf-8")
        return 0
    if len(argv) == 8 and argv[0] == "send":
        sent = send(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]), argv[6])
        Path(argv[7]).write_text(json.dumps({"connections": sent}, indent=2) + "\n", encoding="utf-8")
        return 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
