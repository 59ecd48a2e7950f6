#!/usr/bin/env bash
# setup.sh: prepare a fresh Debian/Ubuntu machine for the Spline toolkit.
#
#   ./setup.sh            system packages for capture and analysis, a venv in .venv with the package
#   ./setup.sh --test     also everything the whole test suite needs (tshark for the oracle,
#                         clang/bpftool for the eBPF build, kernel headers + a stock kernel + QEMU
#                         for the module's VM test), the Python test dependencies and the pinned
#                         checkers (ruff, mypy, shellcheck, clang-format); the package is installed
#                         editable, so pytest tests the analysis/ you edit
#
# Idempotent: run it again after a pull. System packages come from apt (as root, or through
# sudo when it is there); Python packages go into .venv only, never into the system.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

want_test=0
for arg in "$@"; do
    case "$arg" in
        --test) want_test=1 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

say() { printf '==> %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "setup.sh: installing system packages needs root; run as root or install sudo" >&2
        exit 1
    fi
}

# Kernel packages are named differently on Debian and Ubuntu. On Debian 12 (bookworm) the
# module's VM test runs on both kernels the release ships: 6.1 (linux-image-amd64) and 6.12
# (linux-image-6.12-amd64, which pulls the newest linux-image-6.12.*+deb12-amd64), each with
# its headers: the module has a code path for kernels >= 6.10 that only 6.12 exercises.
kernel_packages() {
    local id="" version_id=""
    if [ -r /etc/os-release ]; then
        # shellcheck source=/dev/null
        id="$(. /etc/os-release && echo "${ID:-}")"
        # shellcheck source=/dev/null
        version_id="$(. /etc/os-release && echo "${VERSION_ID:-}")"
    fi
    if [ "$id" = "ubuntu" ]; then
        echo "linux-image-generic linux-headers-generic"
    elif [ "$id" = "debian" ] && [ "$version_id" = "12" ]; then
        echo "linux-image-amd64 linux-headers-amd64 linux-image-6.12-amd64 linux-headers-6.12-amd64"
    else
        echo "linux-image-amd64 linux-headers-amd64"
    fi
}

base_packages="python3 python3-venv python3-dev gcc make libc6-dev tcpdump iperf3 iproute2 ethtool iptables procps"
test_packages="tshark tcptrace nftables kmod clang llvm libbpf-dev bpftool pkg-config
    $(kernel_packages) tiny-initramfs busybox-static qemu-system-x86 cpio jq"

packages="$base_packages"
[ "$want_test" -eq 1 ] && packages="$packages $test_packages"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing system packages:$missing"
    # tiny-initramfs goes in with the kernel so apt does not pull initramfs-tools (and udev).
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 $missing >&2
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    say "creating .venv with $($python --version 2>&1)"
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >&2
# setuptools builds in ./build and reuses what it finds there (copies in a regular install,
# links in an editable one): a module an update moved or removed would stay installed and
# importable beside the new ones unless build/ goes first.
rm -rf build
if [ "$want_test" -eq 1 ]; then
    # Editable, so pytest tests the analysis/ being edited: the C extensions are built into
    # analysis/ and build/__editable__.*/spline_analysis/ links to every file of it. "strict":
    # a path in a .pth file, not the default mode's import hook, which costs every Python
    # start-up ~10-30 ms. A new module needs this command again; tests/conftest.py stops
    # the run, naming what to do, when one is missing or a C source is newer than its build.
    say "installing the toolkit editable into .venv, with the test tools (builds the C extensions)"
    .venv/bin/python -m pip install -q -e ".[dataframe,plot,test,check]" --config-settings editable_mode=strict >&2
else
    # A regular install, as users get it: an editable one adds an import hook to every
    # Python start (~8 ms of spline-analyze's ~0.3 s on 1M packets).
    say "installing the toolkit into .venv (builds the C extensions)"
    .venv/bin/python -m pip install -q ".[dataframe,plot]" >&2
fi
say "ready: .venv/bin/spline-analyze, .venv/bin/spline-testbed"
