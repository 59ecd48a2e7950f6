"""Cut, damaged and compressed files; drop counters from meta.json."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import pcapbuild as pb
from spline_analysis._core.decode import read
from spline_analysis._core.errors import CaptureCutError, CaptureError

FLOW = pb.tcp_flow_frames(5)


def pcap_bytes() -> bytes:
    return pb.pcap_file([(t, pb.ethernet(p)) for t, p in FLOW])


def pcapng_bytes() -> bytes:
    return pb.pcapng_file(
        [
            pb.Section(
                [pb.Interface(1)],
                [pb.Packet(0, t, pb.ethernet(p)) for t, p in FLOW],
                [pb.Statistics(0, FLOW[-1][0], ifdrop=5, osdrop=6)],
            )
        ]
    )


@pytest.mark.parametrize("make", [pcap_bytes, pcapng_bytes], ids=["pcap", "pcapng"])
@pytest.mark.parametrize("cut_bytes", [1, 7, 30])
def test_file_cut_mid_record_keeps_complete_records_and_warns_with_offset(tmp_path, make, cut_bytes):
    data = make()
    full = read(_write(tmp_path / "full", data))
    path = _write(tmp_path / "cut", data[:-cut_bytes])
    cap = read(path)
    assert cap.truncated_at is not None and 0 < cap.truncated_at < len(data)
    assert len(cap.packets) in (len(full.packets), len(full.packets) - 1)
    assert np.array_equal(cap.packets["seq"], full.packets["seq"][: len(cap.packets)])
    assert len(cap.warnings) == 1 and f"byte offset {cap.truncated_at}" in cap.warnings[0]
    with pytest.raises(CaptureCutError) as err:
        read(path, strict=True)
    assert err.value.offset == cap.truncated_at


def test_file_cut_inside_its_header_is_unreadable(tmp_path):
    with pytest.raises(CaptureError):
        read(_write(tmp_path / "h.pcap", pcap_bytes()[:10]))


@pytest.mark.parametrize("make", [pcap_bytes, pcapng_bytes], ids=["pcap", "pcapng"])
def test_gzip_files_are_read_transparently(tmp_path, make):
    plain = read(_write(tmp_path / "plain", make()))
    cap = read(_write(tmp_path / "c.gz", gzip.compress(make())))
    assert cap.compressed and not plain.compressed
    assert cap.format == plain.format and not cap.warnings
    for name in plain.packets:
        assert np.array_equal(cap.packets[name], plain.packets[name])


def test_truncated_gzip_is_a_warning_and_decodes_what_arrived(tmp_path):
    data = pcap_bytes() * 1
    compressed = gzip.compress(data)
    cap = read(_write(tmp_path / "t.gz", compressed[:-12]))  # cuts the CRC/size trailer and some data
    assert cap.compressed and any("gzip" in w for w in cap.warnings)
    assert 0 < len(cap.packets) <= len(FLOW)
    with pytest.raises(CaptureError):
        read(_write(tmp_path / "t2.gz", compressed[:-12]), strict=True)


def test_damaged_gzip_is_an_error(tmp_path):
    compressed = bytearray(gzip.compress(pcap_bytes()))
    compressed[20:40] = b"\xff" * 20
    with pytest.raises(CaptureError, match="gzip"):
        read(_write(tmp_path / "d.gz", bytes(compressed)))


def test_meta_json_drops_win_over_isb(tmp_path):
    _write(tmp_path / "x.pcapng", pcapng_bytes())
    (tmp_path / "meta.json").write_text(json.dumps({"capture": {"kernel_drops": 12, "interface_drops": None}}))
    drops = read(tmp_path / "x.pcapng").capture_drops
    assert (drops["kernel"], drops["interface"], drops["source"]) == (12, None, "meta.json")
    assert (drops["isb_ifdrop"], drops["isb_osdrop"]) == (5, 6)


def test_isb_drops_when_no_sidecar(tmp_path):
    drops = read(_write(tmp_path / "x.pcapng", pcapng_bytes())).capture_drops
    assert (drops["kernel"], drops["interface"], drops["source"]) == (5, 6, "pcapng-isb")


def test_unreadable_meta_json_is_a_warning_not_a_failure(tmp_path):
    _write(tmp_path / "x.pcap", pcap_bytes())
    (tmp_path / "meta.json").write_text("{not json")
    cap = read(tmp_path / "x.pcap")
    assert cap.capture_drops["source"] == "none" and any("meta.json" in w for w in cap.warnings)


def test_meta_json_without_capture_counters_is_ignored(tmp_path):
    _write(tmp_path / "x.pcap", pcap_bytes())
    (tmp_path / "meta.json").write_text(json.dumps({"testbed": {"rate": "10mbit"}}))
    assert read(tmp_path / "x.pcap").capture_drops["source"] == "none"


def test_random_damage_never_crashes_the_reader(tmp_path):
    rng = np.random.default_rng(7)
    originals = [pcap_bytes(), pcapng_bytes()]
    for k in range(300):
        data = bytearray(originals[k % 2])
        for _ in range(int(rng.integers(1, 8))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        data = bytes(data[: int(rng.integers(1, len(data) + 1))])
        try:
            read(_write(tmp_path / f"r{k}", data))
        except CaptureError:
            pass


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_multi_member_gzip_is_read_whole(tmp_path):
    data = pcap_bytes()
    cap = read(_write(tmp_path / "m.gz", gzip.compress(data[:100]) + gzip.compress(data[100:])))
    assert len(cap.packets) == len(FLOW) and not cap.warnings


def test_offsets_in_gzip_files_say_they_count_decompressed_bytes(tmp_path):
    with pytest.raises(CaptureError) as err:
        read(_write(tmp_path / "g.gz", gzip.compress(b"not a capture at all")))
    assert str(err.value).endswith("at byte offset 0 of the decompressed data")
    cap = read(_write(tmp_path / "c.gz", gzip.compress(pcap_bytes()[:-3])))
    assert f"byte offset {cap.truncated_at} of the decompressed data" in cap.warnings[0]
