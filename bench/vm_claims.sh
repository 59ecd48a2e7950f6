#!/usr/bin/env bash
# Spline's scenario suite in the VM: every scenario of bench/scenarios.tsv (or those named),
# each one VM boot (module/vm/vm-test.sh) running the scenario's runs (spline, bbr, cubic; or
# flows sharing the bottleneck, spline+cubic) interleaved, RUNS rounds. Then bench/vm_suite.py
# prints per scenario and run the mean and spread of goodput, retransmissions, retransmissions
# per delivered segment, p95 RTT (from each run's sender capture, read by spline-analyze), the
# share and Jain's index of runs of several flows, and checks the issue's acceptance bounds.
#
# Usage: bench/vm_claims.sh [--runs N] [--duration-s N] [--out DIR] [--scenarios "a b"]
#                           [--scenario-file FILE] [--commit REV]
# --commit REV builds module/ as committed in REV (default: the working tree, as it is when the
# suite starts). VM_LOCK=FILE serialises the VM boots with other users of the machine (flock);
# VM_NICE=N runs each QEMU at that nice value (module/vm/vm-test.sh --nice); as root the suite's
# default is -10: a TCG guest's CPU share caps the rate its paths carry, and at nice -10 it
# takes more of a busy host (clean 10 Mbit/s at load 8-9, 2 rounds: BBR's link utilisation
# 0.65-0.68 at nice 0 and 0.76 at -10, CUBIC's 0.65-0.76 and 0.84). It narrows the load's
# effect, it does not remove it: keep the load next to the figures.
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_TEST="$REPO_DIR/module/vm/vm-test.sh"
RUNS=3
DURATION_S=30
OUT_DIR="$REPO_DIR/bench/data/vm-claims"
SCENARIOS=""
SCENARIO_FILE="$REPO_DIR/bench/scenarios.tsv"
COMMIT=""
SUITE="$REPO_DIR/bench/vm_suite.py"
PYTHON=${PYTHON:-python3}
if [ "$(id -u)" = 0 ]; then export VM_NICE=${VM_NICE:--10}; fi

die() {
	echo "vm_claims: error: $*" >&2
	exit 2
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--runs) RUNS=$2; shift 2 ;;
		--duration-s) DURATION_S=$2; shift 2 ;;
		--out) OUT_DIR=$2; shift 2 ;;
		--scenarios) SCENARIOS=$2; shift 2 ;;
		--scenario-file) SCENARIO_FILE=$2; shift 2 ;;
		--commit) COMMIT=$2; shift 2 ;;
		-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
		*) die "unknown option: $1" ;;
		esac
	done
}

# vm-test.sh options for a scenario name, one a line (an option's value may hold spaces).
scenario_args() {
	"$PYTHON" "$SUITE" args "$1" --scenarios "$SCENARIO_FILE" || die "unknown scenario: $1"
}

# spline-analyze: on PATH, else the repository's .venv.
find_analyzer() {
	command -v spline-analyze 2>/dev/null || { [ -x "$REPO_DIR/.venv/bin/spline-analyze" ] && echo "$REPO_DIR/.venv/bin/spline-analyze"; } || true
}

analyse_scenario() { # <dir>: each run's capture -> .analysis.json (for the p95 RTT)
	local analyzer pcap
	analyzer=$(find_analyzer)
	[ -n "$analyzer" ] || { echo "vm_claims: spline-analyze not found: no p95 RTT" >&2; return 0; }
	for pcap in "$1"/*-r*.pcap; do
		[ -e "$pcap" ] || continue
		[ -s "${pcap%.pcap}.analysis.json" ] && continue
		nice -n 10 "$analyzer" --json --quiet "$pcap" > "${pcap%.pcap}.analysis.json" 2>/dev/null \
			|| echo "vm_claims: spline-analyze failed on $pcap" >&2
	done
}

# Every scenario of a suite run builds the same module: module/ as committed in --commit REV,
# or else a copy of the working tree taken once, before the first boot (edits made while the
# suite runs must not reach its later scenarios). The copy is named by the digest of its
# sources (OUT_DIR/module-src-DIGEST), so a second suite run into the same OUT_DIR keeps the
# first one's copy; each scenario's directory names the copy it ran (module-source.txt), and
# OUT_DIR/module-source.txt lists every suite run's.
snapshot_module() {
	local tmp digest source
	tmp=$(mktemp -d "$OUT_DIR/.module-src.XXXXXX")
	if [ -n "$COMMIT" ]; then
		git -C "$REPO_DIR" rev-parse --verify --quiet "$COMMIT^{commit}" > /dev/null \
			|| die "--commit $COMMIT: no such commit"
		git -C "$REPO_DIR" archive "$COMMIT" module | tar -xf - -C "$tmp" --strip-components=1 \
			--exclude=module/vm
		source="commit=$(git -C "$REPO_DIR" rev-parse --short "$COMMIT") dirty=no"
	else
		(cd "$REPO_DIR/module" && tar --exclude=./vm --exclude=./build --exclude='*.ko' --exclude='*.o' \
			--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' --exclude=Module.symvers \
			--exclude=modules.order -cf - .) | tar -xf - -C "$tmp"
		source="commit=$(git -C "$REPO_DIR" log -1 --format=%h -- module ':!module/vm' 2>/dev/null || echo unknown)"
		git -C "$REPO_DIR" diff --quiet HEAD -- module ':!module/vm' 2>/dev/null \
			&& source+=" dirty=no" || source+=" dirty=yes-or-unknown"
	fi
	digest=$(cd "$tmp" && find . -type f -print | LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -c1-16)
	MODULE_SNAPSHOT="$OUT_DIR/module-src-$digest"
	if [ -d "$MODULE_SNAPSHOT" ]; then rm -rf "$tmp"; else mv "$tmp" "$MODULE_SNAPSHOT"; fi
	MODULE_SOURCE="$source sources=$digest taken=$(date -u +%FT%TZ)"
	echo "$MODULE_SOURCE scenarios=$SCENARIOS" >> "$OUT_DIR/module-source.txt"
}

run_scenario() { # <name>: one VM boot; returns vm-test's status
	local name=$1 args=()
	mapfile -t args < <(scenario_args "$name")
	[ ${#args[@]} -gt 0 ] || die "no vm-test options for $name"
	echo "vm_claims: scenario $name (${args[*]}), $RUNS rounds, ${DURATION_S} s each" >&2
	# TCG guests slow down when the host is busy: keep the load next to the figures.
	echo "start $(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT_DIR/$name.loadavg"
	local lock=()
	[ -z "${VM_LOCK:-}" ] || lock=(flock "$VM_LOCK")
	"${lock[@]}" bash "$VM_TEST" "${args[@]}" --runs "$RUNS" --duration-s "$DURATION_S" \
		--module-dir "$MODULE_SNAPSHOT" --out "$OUT_DIR/$name" > "$OUT_DIR/$name.vm-test.out"
	local status=$?
	mkdir -p "$OUT_DIR/$name" && echo "$MODULE_SOURCE qemu_nice=${VM_NICE:-0}" > "$OUT_DIR/$name/module-source.txt"
	analyse_scenario "$OUT_DIR/$name"
	echo "end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT_DIR/$name.loadavg"
	return "$status"
}

print_table() { # <name>...: tables and checks (vm_suite.py), host load next to them
	local name
	"$PYTHON" "$SUITE" table "$OUT_DIR" "$@" --scenarios "$SCENARIO_FILE" || return 1
	for name in "$@"; do
		echo "$name: host load average (1/5/15 min): $(paste -sd' ' "$OUT_DIR/$name.loadavg" 2>/dev/null)"
	done
}

main() {
	parse_args "$@"
	[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
	[[ "$DURATION_S" =~ ^[1-9][0-9]*$ ]] || die "--duration-s must be a positive integer"
	mkdir -p "$OUT_DIR"
	[ -n "$SCENARIOS" ] || SCENARIOS=$("$PYTHON" "$SUITE" list --scenarios "$SCENARIO_FILE") \
		|| die "cannot read $SCENARIO_FILE"
	local name status=0 started_s=$SECONDS done_names=()
	snapshot_module
	for name in $SCENARIOS; do
		scenario_args "$name" > /dev/null
		run_scenario "$name" || { echo "vm_claims: scenario $name: vm-test reported failures" >&2; status=1; }
	done
	for name in $SCENARIOS; do
		if [ -f "$OUT_DIR/$name/summary.json" ]; then done_names+=("$name"); else status=1; fi
	done
	[ ${#done_names[@]} -eq 0 ] || print_table "${done_names[@]}" || status=1
	echo -e "\nvm_claims: $((SECONDS - started_s)) s; data in $OUT_DIR"
	return "$status"
}

# Run unless sourced (tests source this file to call its functions).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
