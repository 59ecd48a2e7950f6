"""The packet table: one numpy array per column of `columns.PACKET_COLUMNS`.

`PacketTable` is a read-only mapping name -> array (all of one length);
`to_dataframe()` renders it for people (pandas, imported only then):
addresses as strings, time as float seconds `time_s`.
"""

from __future__ import annotations

import ipaddress
from typing import Dict, Iterator, Mapping

import numpy as np

from .columns import COLUMN_NAMES, DECODE_IP_FRAGMENT, DECODE_IP_MORE_FRAGMENTS, PACKET_COLUMNS


class PacketTable(Mapping[str, np.ndarray]):
    """Columns of decoded packets; `table["seq"]`, `len(table)`, `table.to_dataframe()`."""

    def __init__(self, columns: Dict[str, np.ndarray]) -> None:
        missing = [n for n in COLUMN_NAMES if n not in columns]
        if missing:
            raise ValueError(f"packet table lacks columns {missing}")
        lengths = {len(a) for a in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"packet table columns differ in length: {sorted(lengths)}")
        self._columns = dict(columns)
        self._rows = lengths.pop() if lengths else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return self._rows

    def __repr__(self) -> str:
        return f"PacketTable({self._rows} packets, {len(self._columns)} columns)"

    def to_dataframe(self):
        """A pandas DataFrame: one row per packet; `time_s`, addresses as strings, SACK blocks split."""
        import pandas as pd  # imported here: the CLI and library stay pandas-free until asked

        data: Dict[str, np.ndarray] = {"time_s": self._columns["ts_ns"] / 1e9}
        for name, array in self._columns.items():
            if name in ("src_addr", "dst_addr"):
                data[name] = addresses_to_strings(array, self._columns["ip_version"])
            elif array.ndim == 2:
                for k in range(array.shape[1]):
                    data[f"{name}_{k}"] = array[:, k]
            else:
                data[name] = array
        return pd.DataFrame(data)


def empty_columns() -> Dict[str, np.ndarray]:
    """Zero-row arrays of every packet column."""
    return {c.name: np.zeros((0,) + c.shape, dtype=c.dtype) for c in PACKET_COLUMNS}


def addresses_to_strings(addresses: np.ndarray, ip_version: np.ndarray) -> np.ndarray:
    """Render 16-byte addresses (IPv4-mapped for version 4) as text; '' where no IP."""
    out = np.full(len(addresses), "", dtype=object)
    if len(addresses) == 0:
        return out
    keyed = np.ascontiguousarray(addresses).view(np.dtype((np.void, 16))).ravel()
    unique, inverse = np.unique(keyed, return_inverse=True)
    rendered = []
    for raw in unique:
        b = bytes(raw)
        if b[:12] == b"\x00" * 10 + b"\xff\xff":
            rendered.append(str(ipaddress.IPv4Address(b[12:])))
        else:
            rendered.append(str(ipaddress.IPv6Address(b)))
    rendered_array = np.array(rendered, dtype=object)[inverse.ravel()]
    has_ip = ip_version != 0
    out[has_ip] = rendered_array[has_ip]
    return out


def join_ip_fragments(columns: Dict[str, np.ndarray]) -> None:
    """Give a fragmented TCP segment its whole length, as tshark's reassembly does.

    The C walker decodes the TCP header of a datagram's first fragment and
    counts only that fragment's bytes. When every fragment up to the last
    one (more-fragments clear) is in the capture, the first fragment's row
    gets tcp_payload_len = datagram transport length - TCP header length.
    Incomplete datagrams keep the first fragment's bytes. (tshark shows the
    reassembled segment on the frame that completed it; we keep it on the
    first fragment's row so the row order of TCP headers stays file order.)
    Modifies `columns` in place; cost is only over fragment rows.
    """
    flags = columns["decode_flags"]
    fragment_rows = np.flatnonzero(flags & DECODE_IP_FRAGMENT)
    if len(fragment_rows) == 0:
        return
    groups: Dict[tuple, list] = {}
    for i in fragment_rows:
        key = (
            int(columns["ip_version"][i]),
            bytes(columns["src_addr"][i]),
            bytes(columns["dst_addr"][i]),
            int(columns["ip_id"][i]),
            int(columns["ip_proto"][i]),
        )
        groups.setdefault(key, []).append(int(i))
    for rows in groups.values():
        first = [i for i in rows if columns["ip_frag_offset"][i] == 0 and columns["tcp_header_len"][i] > 0]
        last = [i for i in rows if not flags[i] & DECODE_IP_MORE_FRAGMENTS]
        if not first or not last:
            continue
        end = max(int(columns["ip_frag_offset"][i]) + int(columns["ip_payload_len"][i]) for i in rows)
        head = first[0]
        columns["tcp_payload_len"][head] = max(0, end - int(columns["tcp_header_len"][head]))
