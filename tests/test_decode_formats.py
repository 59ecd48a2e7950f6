"""Container formats: classic pcap (us/ns, byte orders, versions) and pcapng (sections, interfaces,
timestamp resolutions, block kinds, ISB drop counters)."""

from __future__ import annotations

import numpy as np
import pytest

import pcapbuild as pb
from spline_analysis import _decode
from spline_analysis._core import columns
from spline_analysis._core.decode import read
from spline_analysis._core.errors import CaptureError

T0_NS = 1_700_000_000_123_456_789


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_c_columns_match_the_packet_table_contract():
    spec = [(c.name, np.dtype(c.dtype).itemsize * int(np.prod(c.shape, dtype=int))) for c in columns.PACKET_COLUMNS]
    assert list(_decode.COLUMNS) == spec


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_pcap_reads_timestamps_in_either_byte_order_and_resolution(tmp_path, big_endian, nanosecond):
    flow = pb.tcp_flow_frames(3, start_ns=T0_NS, step_ns=1_234_567)
    data = pb.pcap_file([(t, pb.ethernet(p)) for t, p in flow], nanosecond=nanosecond, big_endian=big_endian)
    cap = read(write(tmp_path, "f.pcap", data))
    assert cap.format == "pcap" and len(cap.packets) == len(flow)
    expected = np.array([t if nanosecond else t // 1000 * 1000 for t, _ in flow])
    assert np.array_equal(cap.packets["ts_ns"], expected)
    assert cap.interfaces[0]["ts_resolution_s"] == (1e-9 if nanosecond else 1e-6)


@pytest.mark.parametrize("version", [(2, 5), (3, 0), (1, 0)])
def test_pcap_rejects_unsupported_version_with_offset(tmp_path, version):
    data = pb.pcap_file([(T0_NS, pb.ethernet(b""))], version=version)
    with pytest.raises(CaptureError) as err:
        read(write(tmp_path, "v.pcap", data))
    assert err.value.offset == 4
    assert f"{version[0]}.{version[1]}" in str(err.value)


def test_unknown_magic_is_an_error_at_offset_zero(tmp_path):
    with pytest.raises(CaptureError) as err:
        read(write(tmp_path, "x.pcap", b"GIF89a" + b"\x00" * 40))
    assert err.value.offset == 0 and "magic" in str(err.value)


def test_empty_file_is_an_error(tmp_path):
    with pytest.raises(CaptureError):
        read(write(tmp_path, "empty.pcap", b""))


def test_pcap_snaplen_cut_measures_payload_from_ip_length(tmp_path):
    flow = pb.tcp_flow_frames(4, mss=1448)
    data = pb.pcap_file([(t, pb.ethernet(p)) for t, p in flow], snaplen=96)
    packets = read(write(tmp_path, "s.pcap", data)).packets
    assert packets["cap_len"].max() == 96
    assert int(packets["tcp_payload_len"].sum()) == 4 * 1448
    assert set(packets["opt_tsval"][packets["tcp_payload_len"] > 0]) == {3, 4, 5, 6}


def test_pcap_with_record_captured_length_over_limit_is_damaged(tmp_path):
    data = bytearray(pb.pcap_file([(T0_NS, pb.ethernet(b"x" * 100))] * 2))
    second = 24 + 16 + len(pb.ethernet(b"x" * 100))
    data[second + 8 : second + 12] = (10_000_000).to_bytes(4, "little")
    with pytest.raises(CaptureError) as err:
        read(write(tmp_path, "d.pcap", bytes(data)))
    assert err.value.offset == second


def _two_section_file(second_big_endian: bool) -> bytes:
    flow = pb.tcp_flow_frames(2, start_ns=T0_NS)
    s1 = pb.Section(
        [
            pb.Interface(pb.LINKTYPE_ETHERNET, tsresol=9, name="eth0"),
            pb.Interface(pb.LINKTYPE_RAW, tsresol=0x80 | 24, tsoffset_s=1000),
        ],
        [pb.Packet(k % 2, t, pb.ethernet(p) if k % 2 == 0 else p) for k, (t, p) in enumerate(flow)],
        [
            pb.Statistics(0, T0_NS, ifdrop=1, osdrop=9),
            pb.Statistics(0, T0_NS + 5, ifdrop=7, osdrop=2),
            pb.Statistics(1, T0_NS, ifdrop=3),
        ],
    )
    s2 = pb.Section(
        [pb.Interface(pb.LINKTYPE_LINUX_SLL, tsresol=3)],
        [pb.Packet(0, t, pb.sll(p)) for t, p in flow],
        [pb.Statistics(0, T0_NS, ifdrop=10)],
        big_endian=second_big_endian,
    )
    return pb.pcapng_file([s1, s2])


@pytest.mark.parametrize("second_big_endian", [False, True])
def test_pcapng_sections_interfaces_and_resolutions(tmp_path, second_big_endian):
    flow = pb.tcp_flow_frames(2, start_ns=T0_NS)
    cap = read(write(tmp_path, "m.pcapng", _two_section_file(second_big_endian)))
    p = cap.packets
    assert cap.format == "pcapng" and len(p) == 2 * len(flow)
    # Linux cooked frames say themselves where they were seen: v1 only whether going out
    # (0xFF00 + 1), so the interface column is that rather than the pcapng interface index
    assert list(p["interface"]) == [k % 2 for k in range(len(flow))] + [0xFF00] * len(flow)
    assert list(p["link_type"][:2]) == [1, 101] and set(p["link_type"][len(flow) :]) == {113}
    assert cap.link_types == ["Ethernet", "Raw IP", "Linux cooked-mode capture v1"]
    assert cap.interfaces[0]["name"] == "eth0"
    truth = np.array([t for t, _ in flow])
    got = p["ts_ns"][: len(flow)]
    assert np.all(np.abs(got - truth) < 60)  # within one 2^-24 s tick (59.6 ns); tsoffset applied
    assert np.array_equal(p["ts_ns"][len(flow) :], truth // 1_000_000 * 1_000_000)  # milliseconds
    assert (p["tcp_header_len"] > 0).all()


def test_pcapng_drops_take_last_isb_per_interface_id_like_the_oracle(tmp_path):
    cap = read(write(tmp_path, "m.pcapng", _two_section_file(True)))
    # Section 2's interface 0 (ifdrop 10, no osdrop) replaces section 1's interface 0 under the oracle's rule.
    assert cap.capture_drops["kernel"] == 10 + 3
    assert cap.capture_drops["interface"] is None
    assert cap.capture_drops["source"] == "pcapng-isb"
    # Every interface of every section, each with its last ISB:
    assert cap.capture_drops["isb_ifdrop_per_interface"] == 7 + 3 + 10
    assert cap.capture_drops["isb_osdrop_per_interface"] == 2


def test_pcap_drops_are_unknown_not_zero(tmp_path):
    cap = read(write(tmp_path, "a.pcap", pb.pcap_file([(T0_NS, pb.ethernet(b""))])))
    assert cap.capture_drops == {
        "kernel": None,
        "interface": None,
        "source": "none",
        "isb_ifdrop": None,
        "isb_osdrop": None,
        "isb_ifdrop_per_interface": None,
        "isb_osdrop_per_interface": None,
    }


def test_pcapng_simple_and_obsolete_packet_blocks(tmp_path):
    flow = pb.tcp_flow_frames(2, start_ns=T0_NS)
    section = pb.Section(
        [pb.Interface(pb.LINKTYPE_ETHERNET, snaplen=70)],
        [pb.Packet(0, t, pb.ethernet(p), block=("spb", "pb", "epb")[k % 3]) for k, (t, p) in enumerate(flow)],
    )
    cap = read(write(tmp_path, "b.pcapng", pb.pcapng_file([section])))
    p = cap.packets
    assert len(p) == len(flow)
    assert list(p["ts_valid"]) == [k % 3 != 0 for k in range(len(flow))]
    assert p["cap_len"].max() == 70
    assert int(p["tcp_payload_len"].sum()) == 2 * 1448


def test_pcapng_skips_unknown_blocks_and_counts_custom_blocks_as_frames(tmp_path):
    flow = pb.tcp_flow_frames(1)
    section = pb.Section(
        [pb.Interface(pb.LINKTYPE_ETHERNET)],
        [pb.Packet(0, t, pb.ethernet(p)) for t, p in flow],
        extra_blocks=[
            pb.pcapng_block(0x12345678, b"abcd"),
            pb.pcapng_custom(),
            pb.pcapng_custom(copyable=False),
            pb.pcapng_block(4, b"\x00" * 4),
        ],
    )
    cap = read(write(tmp_path, "c.pcapng", pb.pcapng_file([section])))
    assert len(cap.packets) == len(flow) and cap.nonpacket_records == 2


def test_pcapng_damaged_block_length_is_an_error_with_its_offset(tmp_path):
    flow = pb.tcp_flow_frames(1)
    data = bytearray(
        pb.pcapng_file([pb.Section([pb.Interface(1)], [pb.Packet(0, t, pb.ethernet(p)) for t, p in flow])])
    )
    first_epb = data.index(b"\x06\x00\x00\x00")
    data[first_epb + 4] = 0x0D  # length 13: not a multiple of 4
    with pytest.raises(CaptureError) as err:
        read(write(tmp_path, "d.pcapng", bytes(data)))
    assert err.value.offset == first_epb and "damaged block header" in str(err.value)


def test_pcapng_trailer_mismatch_is_an_error(tmp_path):
    flow = pb.tcp_flow_frames(1)
    data = bytearray(
        pb.pcapng_file([pb.Section([pb.Interface(1)], [pb.Packet(0, t, pb.ethernet(p)) for t, p in flow])])
    )
    first_epb = data.index(b"\x06\x00\x00\x00")
    length = int.from_bytes(data[first_epb + 4 : first_epb + 8], "little")
    data[first_epb + length - 4] ^= 0x04
    with pytest.raises(CaptureError) as err:
        read(write(tmp_path, "t.pcapng", bytes(data)))
    assert err.value.offset == first_epb


def test_pcapng_packet_on_undefined_interface_is_an_error(tmp_path):
    flow = pb.tcp_flow_frames(1)
    section = pb.Section([pb.Interface(1)], [pb.Packet(3, flow[0][0], pb.ethernet(flow[0][1]))])
    with pytest.raises(CaptureError, match="interface 3"):
        read(write(tmp_path, "u.pcapng", pb.pcapng_file([section])))


def test_pcapng_unsupported_version_rejected(tmp_path):
    data = pb.pcapng_shb(version=(2, 0)) + pb.pcapng_idb(1)
    with pytest.raises(CaptureError, match="version 2.0"):
        read(write(tmp_path, "v.pcapng", data))


def test_decoding_spans_chunks_without_losing_rows(tmp_path, monkeypatch):
    from spline_analysis._core import decode

    monkeypatch.setattr(decode, "CHUNK_PACKETS", 7)
    flow = pb.tcp_flow_frames(20)
    data = pb.pcap_file([(t, pb.ethernet(p)) for t, p in flow])
    seen = []
    cap = read(write(tmp_path, "c.pcap", data), progress=lambda done, total: seen.append((done, total)))
    assert len(cap.packets) == len(flow)
    assert np.array_equal(cap.packets["ts_ns"], [t for t, _ in flow])
    assert seen[-1] == (len(data), len(data)) and len(seen) >= len(flow) // 7


def test_packet_table_renders_dataframe_with_address_strings(tmp_path):
    pytest.importorskip("pandas")
    flow = pb.tcp_flow_frames(1, src="192.0.2.1", dst="192.0.2.2")
    flow6 = pb.tcp_flow_frames(1, src="2001:db8::1", dst="2001:db8::2", ip_version=6)
    frames = [(t, pb.ethernet(p)) for t, p in flow] + [(t, pb.ethernet(p, ethertype=0x86DD)) for t, p in flow6]
    frames.append((T0_NS, pb.ethernet(b"\x00" * 46, ethertype=0x0806)))  # ARP: no IP
    df = read(write(tmp_path, "a.pcap", pb.pcap_file(frames))).packets.to_dataframe()
    assert df["src_addr"].iloc[0] == "192.0.2.1" and df["dst_addr"].iloc[len(flow)] == "2001:db8::2"
    assert df["src_addr"].iloc[-1] == "" and "time_s" in df and "sack_left_3" in df


@pytest.mark.parametrize("big_endian", [False, True])
def test_modified_pcap_with_24_byte_record_headers(tmp_path, big_endian):
    e = ">" if big_endian else "<"
    import struct

    flow = pb.tcp_flow_frames(2, start_ns=T0_NS)
    out = struct.pack(e + "IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    for t, p in flow:
        frame = pb.ethernet(p)
        seconds, ns = divmod(t, 10**9)
        out += struct.pack(e + "IIII", seconds, ns // 1000, len(frame), len(frame)) + struct.pack(
            e + "iHBx", 2, 0x0800, 0
        )
        out += frame
    cap = read(write(tmp_path, "k.pcap", out))
    assert len(cap.packets) == len(flow) and int(cap.packets["tcp_payload_len"].sum()) == 2 * 1448


def test_pcapng_power_of_two_resolution_and_offset_convert_exactly(tmp_path):
    ts_ns = 1_600_000_000_500_000_000  # .5 s: exact in 2^-1 s ticks
    section = pb.Section(
        [pb.Interface(pb.LINKTYPE_RAW, tsresol=0x81, tsoffset_s=1_000_000_000)],
        [pb.Packet(0, ts_ns, pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp()))],
    )
    cap = read(write(tmp_path, "p2.pcapng", pb.pcapng_file([section])))
    assert cap.packets["ts_ns"][0] == ts_ns and cap.interfaces[0]["ts_resolution_s"] == 0.5


def test_importing_the_decoder_does_not_import_pandas():
    import subprocess
    import sys

    code = "import sys, spline_analysis._core.decode, spline_analysis.report; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False"
