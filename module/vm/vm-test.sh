#!/usr/bin/env bash
# Test the Spline kernel module on a stock Debian kernel, under QEMU.
#
# Builds module/tcp_spline.ko against the installed Debian linux-headers, builds a small
# initramfs (busybox, iperf3, tcpdump, iproute2, ethtool, kernel modules), boots the stock
# kernel in QEMU (KVM when it can boot a stock kernel, TCG otherwise), runs iperf3 with
# each CCA through a shaped path (tbf + netem) between network namespaces, captures with
# tcpdump, brings pcaps, iperf3 JSON and dmesg back over 9p, and unloads the module.
#
# The last line on stdout is one JSON object (see summarize.py). Exit status is non-zero
# when spline is not available, a run failed, the module did not unload, or the guest
# kernel logged warnings. Run with --help for the options.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODULE_DIR_DEFAULT=$(dirname "$SCRIPT_DIR")

RATE_MBIT=${VM_RATE_MBIT:-10}
DELAY_MS=${VM_DELAY_MS:-50}
JITTER_MS=${VM_JITTER_MS:-0}
JITTER_KEEPS_ORDER=${VM_JITTER_KEEPS_ORDER:-0}
LOSS_PCT=${VM_LOSS_PCT:-2}
DURATION_S=${VM_DURATION_S:-10}
CCAS=${VM_CCAS:-spline bbr cubic}
RUNS=${VM_RUNS:-1}
QUEUE_BYTES=${VM_QUEUE_BYTES:-}
RATE_STEPS=${VM_RATE_STEPS:-}
SAMPLE_MS=${VM_SAMPLE_MS:-0}
OUT_DIR=${VM_OUT_DIR:-$SCRIPT_DIR/out}
MODULE_DIR=${VM_MODULE_DIR:-$MODULE_DIR_DEFAULT}
PREBUILT_KO=${VM_KO:-}
NO_MODULE=${VM_NO_MODULE:-0}
MEM_MB=${VM_MEM_MB:-1024}
ACCEL=${VM_ACCEL:-auto}
QEMU_NICE=${VM_NICE:-0}
TIMEOUT_S=${VM_TIMEOUT_S:-}
KEEP_TMP=${VM_KEEP_TMP:-0}
KERNEL=${VM_KERNEL:-}
PYTHON=${PYTHON:-python3}
IDLE_WAIT_S=30
REQUIRED_CCA=spline

usage() {
	cat <<EOF
Usage: $(basename "$0") [options]            (each option also has an env variable)
  --rate-mbit N      bottleneck rate, Mbit/s                [VM_RATE_MBIT, 10]
  --delay-ms N       added delay on the data path, ms       [VM_DELAY_MS, 50]
  --jitter-ms N      netem jitter (uniform +-), ms          [VM_JITTER_MS, 0]
  --jitter-keeps-order  the jitter keeps packet order (netem rate: a packet never leaves
                     before the one ahead of it, as on a Wi-Fi link); without it packets
                     pass each other, as in Mininet           [VM_JITTER_KEEPS_ORDER=1]
  --loss-pct P       random loss on the data path, percent  [VM_LOSS_PCT, 2]
  --queue-bytes N    bottleneck (tbf) buffer, bytes         [VM_QUEUE_BYTES, 1 BDP, >= 30000]
  --rate-steps "R@S ..."  during each run, from second S on the rate is R Mbit/s
                     (e.g. "5@10 20@20": 20 -> 5 -> 20)    [VM_RATE_STEPS, none]
  --sample-ms N      every N ms of each run, the sender's ss -tin (cwnd, pacing, the
                     CCA's own estimates) into <run>.ss.txt; 0: none [VM_SAMPLE_MS, 0]
  --duration-s N     iperf3 seconds per run                 [VM_DURATION_S, 10]
  --ccas "A B ..."   congestion controls to run; "A+B" runs an A and a B flow at once
                     through the one bottleneck              [VM_CCAS, "spline bbr cubic"]
  --runs N           rounds (each round runs every CCA)     [VM_RUNS, 1]
  --out DIR          output directory (emptied first)       [VM_OUT_DIR, module/vm/out]
  --module-dir DIR   module source dir to build             [VM_MODULE_DIR, module/]
  --ko FILE          use this prebuilt .ko, do not build    [VM_KO]
  --no-module        load no module (harness check with bbr/cubic) [VM_NO_MODULE=1]
  --mem-mb N         guest RAM                              [VM_MEM_MB, 1024]
  --accel kvm|tcg|auto                                      [VM_ACCEL, auto]
  --nice N           run QEMU at this nice value (negative: root) [VM_NICE, 0]
  --timeout-s N      kill the VM after N s                  [VM_TIMEOUT_S, from the runs]
  --keep-tmp         keep the build directory               [VM_KEEP_TMP=1]
  --kernel VERSION   kernel to boot, e.g. 6.1.0-56-amd64     [VM_KERNEL, the newest installed
                     (a /boot/vmlinuz-VERSION with /lib/modules/VERSION/build and modules)]
EOF
}

die() {
	echo "vm-test: error: $*" >&2
	exit 2
}

log() { echo "vm-test: $*" >&2; }

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--rate-mbit) RATE_MBIT=$2; shift 2 ;;
		--delay-ms) DELAY_MS=$2; shift 2 ;;
		--jitter-ms) JITTER_MS=$2; shift 2 ;;
		--jitter-keeps-order) JITTER_KEEPS_ORDER=1; shift ;;
		--loss-pct) LOSS_PCT=$2; shift 2 ;;
		--queue-bytes) QUEUE_BYTES=$2; shift 2 ;;
		--rate-steps) RATE_STEPS=$2; shift 2 ;;
		--duration-s) DURATION_S=$2; shift 2 ;;
		--sample-ms) SAMPLE_MS=$2; shift 2 ;;
		--ccas) CCAS=$2; shift 2 ;;
		--runs) RUNS=$2; shift 2 ;;
		--out) OUT_DIR=$2; shift 2 ;;
		--module-dir) MODULE_DIR=$2; shift 2 ;;
		--ko) PREBUILT_KO=$2; shift 2 ;;
		--no-module) NO_MODULE=1; shift ;;
		--mem-mb) MEM_MB=$2; shift 2 ;;
		--accel) ACCEL=$2; shift 2 ;;
		--nice) QEMU_NICE=$2; shift 2 ;;
		--timeout-s) TIMEOUT_S=$2; shift 2 ;;
		--keep-tmp) KEEP_TMP=1; shift ;;
		--kernel) KERNEL=$2; shift 2 ;;
		-h | --help) usage; exit 0 ;;
		*) usage >&2; die "unknown option: $1" ;;
		esac
	done
}

is_number() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_integer() { [[ "$1" =~ ^[0-9]+$ ]]; }

validate_args() {
	local name
	for name in RATE_MBIT DELAY_MS JITTER_MS LOSS_PCT; do
		is_number "${!name}" || die "$name must be a number, got '${!name}'"
	done
	for name in DURATION_S RUNS MEM_MB; do
		if ! is_integer "${!name}" || [ "${!name}" -le 0 ]; then
			die "$name must be a positive integer, got '${!name}'"
		fi
	done
	case "$JITTER_KEEPS_ORDER" in 0 | 1) ;; *) die "VM_JITTER_KEEPS_ORDER must be 0 or 1" ;; esac
	[ -z "$QUEUE_BYTES" ] || is_integer "$QUEUE_BYTES" || die "QUEUE_BYTES must be an integer"
	[ -z "$TIMEOUT_S" ] || is_integer "$TIMEOUT_S" || die "TIMEOUT_S must be an integer"
	is_integer "$SAMPLE_MS" || die "SAMPLE_MS must be an integer (0: no sampling), got '$SAMPLE_MS'"
	[[ "$CCAS" =~ ^[a-z0-9_]+(\+[a-z0-9_]+)*(\ +[a-z0-9_]+(\+[a-z0-9_]+)*)*\ *$ ]] \
		|| die "CCAS must be names (or name+name) separated by spaces, got '$CCAS'"
	validate_rate_steps
	case "$ACCEL" in auto | kvm | tcg) ;; *) die "--accel must be auto, kvm or tcg" ;; esac
	if ! [[ "$QEMU_NICE" =~ ^-?[0-9]+$ ]] || [ "$QEMU_NICE" -lt -20 ] || [ "$QEMU_NICE" -gt 19 ]; then
		die "--nice must be an integer from -20 to 19, got '$QEMU_NICE'"
	fi
	[ -z "$KERNEL" ] || [[ "$KERNEL" =~ ^[A-Za-z0-9._+~-]+$ ]] || die "--kernel must be a version such as 6.1.0-56-amd64, got '$KERNEL'"
}

# RATE_STEPS: "R@S ..." with R a rate (Mbit/s) and S whole seconds, rising, within the run.
validate_rate_steps() {
	local step at last=0
	for step in $RATE_STEPS; do
		[[ "$step" =~ ^[0-9]+([.][0-9]+)?@[0-9]+$ ]] || die "--rate-steps wants RATE@SECONDS, got '$step'"
		at=${step#*@}
		[ "$at" -gt "$last" ] || die "--rate-steps: seconds must rise and start after 0, got '$RATE_STEPS'"
		[ "$at" -lt "$DURATION_S" ] || die "--rate-steps: step at $at s is not within the ${DURATION_S} s run"
		last=$at
	done
}

# The most flows any run of CCAS has at once ("a+b": 2).
max_flows() {
	local word n max=1
	for word in $CCAS; do
		n=$(tr -cd + <<< "$word" | wc -c)
		[ $((n + 1)) -le "$max" ] || max=$((n + 1))
	done
	echo "$max"
}

require_tools() {
	local tool missing=()
	for tool in qemu-system-x86_64 busybox iperf3 tcpdump cpio ldd make "$PYTHON"; do
		command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
	done
	for tool in /usr/sbin/ip /usr/sbin/tc /usr/sbin/ethtool /usr/bin/ss; do
		[ -x "$tool" ] || missing+=("$tool")
	done
	[ ${#missing[@]} -eq 0 ] || die "missing tools: ${missing[*]} (packages: qemu-system-x86 busybox-static iperf3 tcpdump cpio iproute2 ethtool make)"
	# grep -q would stop reading early: busybox then dies of SIGPIPE and pipefail fails the check.
	busybox --list | grep -x sh >/dev/null || die "busybox has no sh applet"
	file_is_static "$(command -v busybox)" || die "busybox must be static (package busybox-static)"
}

file_is_static() { ! ldd "$1" >/dev/null 2>&1; }

# A kernel the harness can use: a readable image, its headers and its modules.
kernel_is_usable() { # <version>
	[ -r "/boot/vmlinuz-$1" ] && [ -d "/lib/modules/$1/build" ] && [ -f "/lib/modules/$1/modules.dep" ]
}

# Every usable /boot/vmlinuz-*-amd64, newest first (6.12.117+deb12-amd64 before 6.1.0-56-amd64).
usable_kernel_versions() {
	local image ver
	while read -r image; do
		ver=${image#/boot/vmlinuz-}
		if kernel_is_usable "$ver"; then echo "$ver"; fi
	done < <(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' | sort -V -r)
}

# The kernel asked for with --kernel, else the newest usable one.
find_kernel_version() {
	if [ -n "$KERNEL" ]; then
		kernel_is_usable "$KERNEL" || return 1
		echo "$KERNEL"
		return 0
	fi
	# Not `| head -n 1`: under pipefail its early exit can kill the producer with SIGPIPE.
	local newest
	newest=$(usable_kernel_versions)
	newest=${newest%%$'\n'*}
	[ -n "$newest" ] && echo "$newest"
}

# KVM only when it is a normal kvm_intel/kvm_amd (a PVM /dev/kvm cannot boot a stock kernel).
choose_accel() {
	if [ "$ACCEL" != auto ]; then
		echo "$ACCEL"
	elif [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] \
		&& { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		echo kvm
	else
		echo tcg
	fi
}

# Build the module in a private copy of the module dir, so the build neither races with
# edits in the working tree nor leaves products built for another kernel there.
build_module() { # <kver> <build dir> -> prints the .ko path
	local kver=$1 build_dir=$2
	mkdir -p "$build_dir"
	(cd "$MODULE_DIR" && tar --exclude=./vm --exclude=./build --exclude='*.ko' --exclude='*.o' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' --exclude=Module.symvers \
		--exclude=modules.order -cf - .) | tar -xf - -C "$build_dir"
	log "building the module against /lib/modules/$kver/build"
	if ! make -C "$build_dir" KDIR="/lib/modules/$kver/build" > "$build_dir/build.log" 2>&1; then
		tail -n 30 "$build_dir/build.log" >&2
		die "module build failed (log above)"
	fi
	[ -f "$build_dir/tcp_spline.ko" ] || die "the build produced no tcp_spline.ko"
	echo "$build_dir/tcp_spline.ko"
}

check_vermagic() { # <ko> <kver>
	local vermagic
	vermagic=$(modinfo -F vermagic "$1" 2>/dev/null || /usr/sbin/modinfo -F vermagic "$1")
	[ "${vermagic%% *}" = "$2" ] || die "$1 was built for '${vermagic%% *}', not $2"
}

copy_with_libs() { # <root> <binary...>: the binaries and their shared-library closure
	local root=$1 bin lib
	shift
	for bin in "$@"; do
		cp --parents -L "$bin" "$root/"
		while read -r lib; do
			[ -n "$lib" ] && [ ! -e "$root$lib" ] && cp --parents -L "$lib" "$root/"
		done < <(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*' || true)
	done
}

install_busybox() { # <root>
	local root=$1 applet
	mkdir -p "$root/bin"
	cp "$(command -v busybox)" "$root/bin/busybox"
	while read -r applet; do
		# `busybox --list` includes busybox itself: a self-link would make /init loop.
		[ "$applet" = busybox ] && continue
		ln -sf busybox "$root/bin/$applet"
	done < <(busybox --list)
}

# Kernel module paths (relative to /lib/modules/<kver>) for <name>, dependencies first, each once.
# modules.dep lists a module's whole dependency closure on its line, a module before the
# ones it needs (modprobe loads them from the end), so reversed it is a load order. A module
# may be plain (.ko, Debian 6.1) or compressed (.ko.xz on Debian 6.12); 9p needs fscache and
# netfs on 6.1, netfs alone on 6.12. Built into the kernel: prints nothing, succeeds.
module_with_deps() { # <kver> <name>
	local dir="/lib/modules/$1" line path deps dep i
	local -a order=()
	line=$(grep -E "(^|/)$2\.ko(\.(xz|zst|gz))?:" "$dir/modules.dep" | head -n 1 || true)
	if [ -z "$line" ]; then
		grep -qE "(^|/)$2\.ko\$" "$dir/modules.builtin" 2>/dev/null && return 0
		return 1
	fi
	path=${line%%:*}
	read -r -a deps <<< "${line#*:}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		dep=${deps[i]}
		[[ " ${order[*]} " == *" $dep "* ]] || order+=("$dep")
	done
	order+=("$path")
	printf '%s\n' "${order[@]}"
}

install_kernel_module() { # <kver> <src .ko[.xz|.zst|.gz]> <dest dir>: decompressed
	local src="/lib/modules/$1/$2" dest name
	name=$(basename "${2%%.ko*}").ko
	dest="$3/$name"
	case "$src" in
	*.ko) cp "$src" "$dest" ;;
	*.ko.xz) xz -dc "$src" > "$dest" ;;
	*.ko.zst) zstd -qdc "$src" > "$dest" ;;
	*.ko.gz) gzip -dc "$src" > "$dest" ;;
	*) die "unknown module format: $src" ;;
	esac
	echo "$name"
}

install_kernel_modules() { # <kver> <root>
	local kver=$1 root=$2 name path paths
	local wanted=(virtio_pci 9pnet_virtio 9p veth sch_netem sch_tbf tcp_bbr tcp_diag)
	mkdir -p "$root/lib/modules/vm"
	: > "$root/etc/vm-modules.load"
	for name in "${wanted[@]}"; do
		paths=$(module_with_deps "$kver" "$name") || die "kernel module $name not found for $kver"
		for path in $paths; do
			grep -qx "$(basename "${path%%.ko*}").ko" "$root/etc/vm-modules.load" && continue
			install_kernel_module "$kver" "$path" "$root/lib/modules/vm" >> "$root/etc/vm-modules.load"
		done
	done
}

# One digest of the module's C sources, headers and Makefile in <dir> (names and contents).
sources_sha256() {
	(cd "$1" && find . -maxdepth 2 -path ./vm -prune -o -type f \( -name '*.c' -o -name '*.h' -o -name Makefile \) \
		-print | LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -c1-16)
}

# Which module was tested: the git commit of its sources (dirty or not) and a digest of them.
write_module_info() { # <ko>
	local commit=unknown dirty=unknown
	if command -v git >/dev/null 2>&1 && git -C "$MODULE_DIR" rev-parse >/dev/null 2>&1; then
		commit=$(git -C "$MODULE_DIR" log -1 --format=%h -- . ':!vm' 2>/dev/null || echo unknown)
		dirty=no
		git -C "$MODULE_DIR" diff --quiet HEAD -- . ':!vm' 2>/dev/null || dirty=yes
	fi
	{
		echo "ko=$(basename "$1")"
		echo "sources_sha256=$(sources_sha256 "$(dirname "$1")")"
		echo "source_commit=${commit:-unknown}"
		echo "source_dirty=$dirty"
		echo "prebuilt=$([ -n "$PREBUILT_KO" ] && echo yes || echo no)"
	} > "$OUT_DIR/module-info.txt"
}

write_guest_config() { # <root> <ko file or empty>
	local root=$1 ko=$2 ko_name="" module_name=""
	if [ -n "$ko" ]; then
		ko_name=$(basename "$ko")
		module_name=${ko_name%.ko}
		module_name=${module_name//-/_}
	fi
	cat > "$root/etc/vm-test.conf" <<EOF
RATE_MBIT='$RATE_MBIT'
DELAY_MS='$DELAY_MS'
JITTER_MS='$JITTER_MS'
JITTER_KEEPS_ORDER='$JITTER_KEEPS_ORDER'
LOSS_PCT='$LOSS_PCT'
DURATION_S='$DURATION_S'
CCAS='$CCAS'
RUNS='$RUNS'
QUEUE_BYTES='$QUEUE_BYTES'
RATE_STEPS='$RATE_STEPS'
SAMPLE_MS='$SAMPLE_MS'
MAX_FLOWS='$(max_flows)'
BURST_BYTES='$BURST_BYTES'
CCA_KO='$ko_name'
CCA_MODULE='$module_name'
IDLE_WAIT_S='$IDLE_WAIT_S'
EOF
}

build_initramfs() { # <kver> <work dir> <ko or empty> -> prints the cpio path
	local kver=$1 work=$2 ko=$3 root="$2/root"
	mkdir -p "$root"/{etc,proc,sys,dev,run,tmp,out,root,lib/modules/vm/cca}
	install_busybox "$root"
	copy_with_libs "$root" "$(command -v iperf3)" "$(command -v tcpdump)" \
		/usr/sbin/ip /usr/sbin/tc /usr/sbin/ethtool /usr/bin/ss
	# netem delay distribution tables, used when a distribution is asked for.
	[ -d /usr/lib/x86_64-linux-gnu/tc ] && cp --parents -r /usr/lib/x86_64-linux-gnu/tc "$root/"
	echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
	echo 'root:x:0:' > "$root/etc/group"
	install_kernel_modules "$kver" "$root"
	[ -z "$ko" ] || cp "$ko" "$root/lib/modules/vm/cca/"
	write_guest_config "$root" "$ko"
	install -m 0755 "$SCRIPT_DIR/guest-init.sh" "$root/init"
	(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) > "$work/initramfs.cpio"
	echo "$work/initramfs.cpio"
}

# Worst case: boot + per run (duration + the guest's 30 s per-run guard + copying) + unload wait.
default_timeout_s() {
	local n_ccas
	n_ccas=$(wc -w <<< "$CCAS")
	echo $((120 + RUNS * n_ccas * (DURATION_S + 35) + IDLE_WAIT_S))
}

QEMU_PID=""
TAIL_PID=""
WORK_DIR=""

cleanup() {
	if [ -n "$TAIL_PID" ]; then kill "$TAIL_PID" 2>/dev/null || true; fi
	if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
		log "killing qemu (pid $QEMU_PID)"
		kill -KILL "$QEMU_PID" 2>/dev/null || true
	fi
	if [ -n "$WORK_DIR" ]; then
		if [ "$KEEP_TMP" = 1 ]; then log "kept $WORK_DIR"; else rm -rf "$WORK_DIR"; fi
	fi
}

run_vm() { # <kver> <initramfs> <accel> <timeout s>: returns non-zero on timeout
	local kver=$1 initramfs=$2 accel=$3 timeout_s=$4 waited_s=0
	local console="$OUT_DIR/console.log"
	: > "$console"
	local cpu=qemu64
	[ "$accel" = kvm ] && cpu=host
	nice -n "$QEMU_NICE" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m "$MEM_MB" -smp 2 \
		-kernel "/boot/vmlinuz-$kver" -initrd "$initramfs" \
		-append "console=ttyS0 panic=-1 quiet loglevel=5" \
		-nographic -monitor none -serial "file:$console" -nic none -no-reboot \
		-virtfs "local,path=$OUT_DIR,mount_tag=out,security_model=none,id=out" \
		< /dev/null > "$OUT_DIR/qemu.log" 2>&1 &
	QEMU_PID=$!
	# Guest progress lines (prefixed "vm-test:") go to stderr as they come; tail ends with qemu.
	# (The process substitution comes first: it inherits the redirections made before it.)
	tail --pid="$QEMU_PID" -n +1 -F "$console" > >(grep --line-buffered '^vm-test:' >&2) 2>/dev/null &
	TAIL_PID=$!
	while kill -0 "$QEMU_PID" 2>/dev/null; do
		if [ "$waited_s" -ge "$timeout_s" ]; then
			log "VM still running after $timeout_s s: killing it"
			kill -KILL "$QEMU_PID" 2>/dev/null || true
			wait "$QEMU_PID" 2>/dev/null || true
			QEMU_PID=""
			return 1
		fi
		sleep 1
		waited_s=$((waited_s + 1))
	done
	wait "$QEMU_PID" || log "qemu exited with status $? (see $OUT_DIR/qemu.log)"
	QEMU_PID=""
	wait "$TAIL_PID" 2>/dev/null || true
	TAIL_PID=""
	log "VM ran for $waited_s s"
}

# Analyse each pcap with spline-analyze when it is installed; quiet otherwise.
analyse_pcaps() {
	command -v spline-analyze >/dev/null 2>&1 || return 0
	local pcap
	for pcap in "$OUT_DIR"/*.pcap; do
		[ -e "$pcap" ] || continue
		spline-analyze --json "$pcap" > "${pcap%.pcap}.analysis.json" 2> "${pcap%.pcap}.analysis.err" \
			|| log "spline-analyze failed on $(basename "$pcap") (see ${pcap%.pcap}.analysis.err)"
	done
}

compute_path_defaults() {
	# One BDP at the base delay, at least 30000 bytes (20 full-size packets).
	if [ -z "$QUEUE_BYTES" ]; then
		QUEUE_BYTES=$(awk -v r="$RATE_MBIT" -v d="$DELAY_MS" \
			'BEGIN { b = r * 1e6 / 8 * d / 1e3; if (b < 30000) b = 30000; printf "%d", b }')
	fi
	# tbf bucket: one 4 ms tick at the rate, at least two full-size packets.
	BURST_BYTES=$(awk -v r="$RATE_MBIT" 'BEGIN { b = r * 1e6 / 8 / 250; if (b < 3028) b = 3028; printf "%d", b }')
}

# Remove what an earlier run left, and only that (the directory may hold other files).
prepare_out_dir() {
	local name
	mkdir -p "$OUT_DIR"
	OUT_DIR=$(cd "$OUT_DIR" && pwd)
	rm -f "$OUT_DIR"/iperf3-server-*.log
	for name in available.txt qdisc.txt insmod.txt rmmod.txt dmesg.txt setup-failed.txt module-info.txt \
		iperf3-server.log console.log qemu.log summary.json guest-done; do
		rm -f "${OUT_DIR:?}/$name"
	done
	find "$OUT_DIR" -mindepth 1 -maxdepth 1 -type f -regextype posix-extended \
		-regex '.*/[a-z0-9_+]+-r[0-9]+(\.f[0-9]+)?\.(pcap|json|rc|err|tcpdump\.txt|qdisc\.txt|mib\.txt|analysis\.json|analysis\.err)' -delete
}

main() {
	parse_args "$@"
	validate_args
	require_tools
	local started_s kver accel ko="" initramfs timeout_s status=0
	started_s=$(date +%s)
	if [ -n "$KERNEL" ]; then
		kver=$(find_kernel_version) || die "kernel $KERNEL is not usable: it needs a readable /boot/vmlinuz-$KERNEL, /lib/modules/$KERNEL/build and modules.dep (usable: $(usable_kernel_versions | tr '\n' ' '))"
	else
		kver=$(find_kernel_version) || die "no /boot/vmlinuz-*-amd64 with readable image, /lib/modules/<ver>/build and modules (install linux-image-amd64 linux-headers-amd64)"
	fi
	accel=$(choose_accel)
	compute_path_defaults
	prepare_out_dir
	WORK_DIR=$(mktemp -d /tmp/vm-test.XXXXXX)
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	if [ "$NO_MODULE" != 1 ]; then
		if [ -n "$PREBUILT_KO" ]; then ko=$PREBUILT_KO; else ko=$(build_module "$kver" "$WORK_DIR/module"); fi
		check_vermagic "$ko" "$kver"
		write_module_info "$ko"
	fi
	initramfs=$(build_initramfs "$kver" "$WORK_DIR" "$ko")
	timeout_s=${TIMEOUT_S:-$(default_timeout_s)}
	log "kernel $kver, accel $accel, ${RATE_MBIT} Mbit/s, ${DELAY_MS} ms +-${JITTER_MS} ms$([ "$JITTER_KEEPS_ORDER" = 1 ] && echo " in order"), ${LOSS_PCT}% loss, queue ${QUEUE_BYTES} B${RATE_STEPS:+, rate steps $RATE_STEPS}, ${DURATION_S} s x {$CCAS} x $RUNS, timeout ${timeout_s} s"
	log "initramfs $(du -h "$initramfs" | cut -f1), output in $OUT_DIR"
	run_vm "$kver" "$initramfs" "$accel" "$timeout_s" || status=1
	[ -f "$OUT_DIR/guest-done" ] || { log "the guest did not finish (see $OUT_DIR/console.log)"; status=1; }
	analyse_pcaps
	log "total $(($(date +%s) - started_s)) s"
	"$PYTHON" "$SCRIPT_DIR/summarize.py" --out "$OUT_DIR" --ccas "$CCAS" --runs "$RUNS" \
		--require "$([ "$NO_MODULE" = 1 ] && echo "" || echo "$REQUIRED_CCA")" \
		--module "$([ -n "$ko" ] && basename "${ko%.ko}" | tr - _ || echo "")" || status=1
	return "$status"
}

# Run unless sourced (tests source this file to call its functions).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
