"""The host side of the VM harness (module/vm/vm-test.sh) without booting: options, kernel
choice, module dependency order and the initramfs it builds. Seconds, not minutes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VM_TEST = REPO / "module" / "vm" / "vm-test.sh"


def bash_with_harness(script: str, **kwargs) -> subprocess.CompletedProcess:
    """Run `script` in bash after sourcing vm-test.sh (which then defines its functions only)."""
    return subprocess.run(
        ["bash", "-c", f'source "{VM_TEST}"; set +e; {script}'], capture_output=True, text=True, timeout=120, **kwargs
    )


def installed_kernel() -> str | None:
    proc = bash_with_harness("find_kernel_version")
    return proc.stdout.strip() or None


def usable_kernels() -> list[str]:
    """Every kernel the harness can boot here (image, headers, modules), newest first."""
    return bash_with_harness("usable_kernel_versions").stdout.split()


def builtin(version: str, name: str) -> bool:
    return any(
        line.rsplit("/", 1)[-1] == f"{name}.ko"
        for line in Path(f"/lib/modules/{version}/modules.builtin").read_text().splitlines()
    )


needs_kernel = pytest.mark.skipif(
    installed_kernel() is None, reason="no readable /boot/vmlinuz-*-amd64 with headers and modules"
)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--no-such-option"], "unknown option"),
        (["--duration-s", "ten"], "DURATION_S must be a positive integer"),
        (["--loss-pct", "2%"], "LOSS_PCT must be a number"),
        (["--ccas", "spline;reboot"], "CCAS must be names"),
        (["--ccas", "spline+"], "CCAS must be names"),
        (["--duration-s", "30", "--rate-steps", "5@10 20@5"], "seconds must rise"),
        (["--rate-steps", "5mbit@10"], "--rate-steps wants RATE@SECONDS"),
        (["--duration-s", "10", "--rate-steps", "5@10"], "not within the 10 s run"),
        (["--accel", "hvf"], "--accel must be"),
        (["--sample-ms", "0.2"], "SAMPLE_MS must be an integer"),
        (["--kernel", "6.1;reboot"], "--kernel must be a version"),
        (["--nice", "-21"], "--nice must be an integer from -20 to 19"),
        (["--nice", "high"], "--nice must be an integer from -20 to 19"),
        (["--kernel", "0.0.0-no-such-amd64"], "kernel 0.0.0-no-such-amd64 is not usable"),
    ],
)
def test_bad_options_stop_before_anything_is_built(args, message):
    proc = subprocess.run(["bash", str(VM_TEST), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr


@needs_kernel
def test_the_chosen_kernel_is_the_newest_with_image_headers_and_modules():
    version = installed_kernel()
    assert Path(f"/boot/vmlinuz-{version}").is_file()
    assert Path(f"/lib/modules/{version}/build").is_dir()
    newer = [
        p
        for p in Path("/boot").glob("vmlinuz-*-amd64")
        if (Path("/lib/modules") / p.name[len("vmlinuz-") :] / "build").is_dir()
        and subprocess.run(["dpkg", "--compare-versions", p.name[len("vmlinuz-") :], "gt", version]).returncode == 0
    ]
    assert newer == []


@needs_kernel
def test_kernel_option_picks_that_kernel_over_the_newest():
    for version in usable_kernels():
        proc = bash_with_harness(f"KERNEL={version} find_kernel_version")
        assert proc.stdout.strip() == version


@pytest.mark.parametrize("version", usable_kernels() or [pytest.param("none", marks=pytest.mark.skip("no kernel"))])
def test_kernel_modules_come_after_every_module_they_depend_on(version):
    """Plain .ko (6.1) and .ko.xz (6.12) modules alike; builtins need nothing loaded."""
    deps = {}
    for line in Path(f"/lib/modules/{version}/modules.dep").read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
    for name in ("9p", "9pnet_virtio", "virtio_pci", "sch_netem", "tcp_bbr"):
        proc = bash_with_harness(f"module_with_deps {version} {name}")
        order = proc.stdout.split()
        assert proc.returncode == 0
        if builtin(version, name):
            assert order == []
            continue
        assert order and order[-1].split("/")[-1].startswith(name + ".ko")
        assert len(order) == len(set(order)), "a module listed twice"
        for i, path in enumerate(order):
            assert set(deps[path]) <= set(order[:i]), f"{path} loaded before one of {deps[path]}"


@needs_kernel
def test_an_unknown_module_is_an_error_not_an_empty_list():
    assert bash_with_harness(f"module_with_deps {installed_kernel()} no_such_module_xyz").returncode == 1


@pytest.mark.parametrize("version", usable_kernels() or [pytest.param("none", marks=pytest.mark.skip("no kernel"))])
@pytest.mark.skipif(
    shutil.which("busybox") is None or shutil.which("iperf3") is None or shutil.which("tcpdump") is None,
    reason="busybox-static, iperf3 or tcpdump missing",
)
def test_initramfs_holds_init_tools_their_libraries_and_modules_in_load_order(tmp_path, version):
    proc = bash_with_harness(f'compute_path_defaults; build_initramfs {version} "{tmp_path}" ""')
    assert proc.returncode == 0, proc.stderr
    cpio = Path(proc.stdout.strip().splitlines()[-1])
    listing = subprocess.run(
        ["cpio", "-t", "--quiet"], stdin=cpio.open("rb"), capture_output=True, text=True, check=True
    ).stdout.split()
    for member in (
        "init",
        "bin/busybox",
        "bin/sh",
        "usr/bin/iperf3",
        "usr/bin/tcpdump",
        "usr/sbin/ip",
        "usr/sbin/tc",
        "usr/sbin/ethtool",
        "usr/bin/ss",
        "etc/passwd",
        "etc/vm-test.conf",
        "lib64/ld-linux-x86-64.so.2",
        "lib/modules/vm/9p.ko",
        "lib/modules/vm/sch_netem.ko",
        "lib/modules/vm/tcp_bbr.ko",
        "lib/modules/vm/tcp_diag.ko",
    ):
        assert member in listing, f"{member} missing from the initramfs"
    root = tmp_path / "root"
    assert not (root / "bin" / "busybox").is_symlink(), "a busybox -> busybox link makes /init loop"
    load_order = (root / "etc" / "vm-modules.load").read_text().split()
    assert len(load_order) == len(set(load_order))
    # 9p needs netfs on every kernel here, and fscache too before 6.12 (which has none).
    assert load_order.index("netfs.ko") < load_order.index("9p.ko")
    assert load_order.index("9pnet.ko") < load_order.index("9p.ko")
    if "fscache.ko" in load_order:
        assert load_order.index("netfs.ko") < load_order.index("fscache.ko") < load_order.index("9p.ko")
    assert load_order.index("9pnet.ko") < load_order.index("9pnet_virtio.ko")
    # ss reads the sockets (and the CCA's get_info) through inet_diag
    assert load_order.index("inet_diag.ko") < load_order.index("tcp_diag.ko")
    for binary in ("usr/bin/iperf3", "usr/bin/tcpdump", "usr/sbin/tc", "usr/bin/ss"):
        libs = subprocess.run(["ldd", f"/{binary}"], capture_output=True, text=True).stdout
        for lib in (word for word in libs.split() if word.startswith("/")):
            assert (root / lib.lstrip("/")).exists(), f"{lib} (needed by {binary}) missing"


def test_the_guest_gets_one_iperf3_server_per_flow_of_the_widest_run():
    proc = bash_with_harness('CCAS="spline bbr+cubic spline+spline+cubic"; max_flows; CCAS=cubic; max_flows')
    assert proc.stdout.split() == ["3", "1"]


def test_guest_netem_keeps_order_with_a_rate_only_when_asked():
    guest = REPO / "module" / "vm" / "guest-init.sh"
    script = (
        f'GUEST_INIT_SOURCED=1; . "{guest}"; DELAY_MS=200; JITTER_MS=50; LOSS_PCT=1; '
        "JITTER_KEEPS_ORDER=1; netem_args; JITTER_KEEPS_ORDER=0; netem_args; JITTER_MS=0; JITTER_KEEPS_ORDER=1; netem_args"
    )
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert proc.stdout.splitlines() == [
        "delay 200ms 50ms rate 100gbit loss 1%",
        "delay 200ms 50ms loss 1%",
        "delay 200ms loss 1%",
    ]


def test_the_order_kept_jitter_reaches_the_guest_config(tmp_path):
    script = 'BURST_BYTES=3028; mkdir -p "$R/etc"; write_guest_config "$R" ""; cat "$R/etc/vm-test.conf"'
    kept = bash_with_harness(f'R="{tmp_path}/a"; JITTER_KEEPS_ORDER=1; {script}')
    assert "JITTER_KEEPS_ORDER='1'" in kept.stdout
    reordering = bash_with_harness(f'R="{tmp_path}/b"; {script}')
    assert "JITTER_KEEPS_ORDER='0'" in reordering.stdout


def test_an_order_flag_other_than_0_or_1_is_refused():
    proc = subprocess.run(
        ["bash", str(VM_TEST)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "VM_JITTER_KEEPS_ORDER": "yes"},
    )
    assert proc.returncode == 2
    assert "VM_JITTER_KEEPS_ORDER must be 0 or 1" in proc.stderr


def test_every_function_the_guest_init_calls_is_defined_in_it():
    import re

    text = (REPO / "module" / "vm" / "guest-init.sh").read_text()
    defined = set(re.findall(r"^([a-z_]+)\(\) \{", text, re.M))
    called = {m for m in re.findall(r"^\s+(?:if !? *)?([a-z]+(?:_[a-z]+)+)\b(?!=)", text, re.M) if not m.isupper()}
    assert called - defined == set()
