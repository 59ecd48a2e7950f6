#!/usr/bin/env bash
# Check Spline's published claims on the module, in a stock Debian kernel under QEMU.
#
# Claims (../shared/docs/spline-algorithm.md): under random loss Spline gets more
# throughput than CUBIC and fewer retransmissions than BBR. Scenarios:
#   lossy:   10 Mbit/s, 50 ms, 2% loss
#   jittery: 10 Mbit/s, 200 ms, 1% loss, 50 ms jitter (the published Mininet setup)
# Each scenario is one VM boot (module/vm/vm-test.sh) running spline, bbr and cubic
# interleaved, RUNS rounds. Prints a table per scenario: throughput (Mbit/s, mean and each
# run) and retransmissions (mean and each run) per CCA, then the two claims checked.
#
# Usage: bench/vm_claims.sh [--runs N] [--duration-s N] [--out DIR] [--scenarios "lossy jittery"]
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_TEST="$REPO_DIR/module/vm/vm-test.sh"
RUNS=3
DURATION_S=30
OUT_DIR="$REPO_DIR/bench/data/vm-claims"
SCENARIOS="lossy jittery"
CCAS="spline bbr cubic"
PYTHON=${PYTHON:-python3}

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
		-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
		*) die "unknown option: $1" ;;
		esac
	done
}

# vm-test.sh options for a scenario name.
scenario_args() {
	case "$1" in
	lossy) echo "--rate-mbit 10 --delay-ms 50 --jitter-ms 0 --loss-pct 2" ;;
	jittery) echo "--rate-mbit 10 --delay-ms 200 --jitter-ms 50 --loss-pct 1" ;;
	*) die "unknown scenario: $1 (lossy, jittery)" ;;
	esac
}

run_scenario() { # <name>: one VM boot; returns vm-test's status
	local name=$1 args
	args=$(scenario_args "$name")
	echo "vm_claims: scenario $name ($args), $RUNS x {$CCAS}, ${DURATION_S} s each" >&2
	# TCG guests slow down when the host is busy: keep the load next to the figures.
	echo "start $(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT_DIR/$name.loadavg"
	# shellcheck disable=SC2086
	bash "$VM_TEST" $args --ccas "$CCAS" --runs "$RUNS" --duration-s "$DURATION_S" \
		--out "$OUT_DIR/$name" > "$OUT_DIR/$name.vm-test.out"
	local status=$?
	echo "end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT_DIR/$name.loadavg"
	return "$status"
}

print_table() { # <name>: table and claim checks from the scenario's summary.json
	"$PYTHON" - "$OUT_DIR/$1/summary.json" "$1" "$(scenario_args "$1")" "$OUT_DIR/$1.loadavg" <<'EOF'
import json
import statistics
import sys

path, name, args, loadavg_path = sys.argv[1:5]
summary = json.load(open(path))
by_cca = {}
for run in summary["runs"]:
    by_cca.setdefault(run["cca"], []).append(run)


def mbit(bps):
    return "-" if bps is None else f"{bps / 1e6:.2f}"


def retrans_pct(run):
    """Retransmitted segments as a percentage of data segments sent (iperf3's MSS)."""
    if not run.get("bytes_sent") or not run.get("mss_bytes") or run["retransmits"] is None:
        return None
    return 100.0 * run["retransmits"] / (run["bytes_sent"] / run["mss_bytes"])


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def num(value, fmt=".0f"):
    return "-" if value is None else format(value, fmt)


def router(run, key):
    return run.get("path", {}).get(key) if run["ok"] else None


print(f"\n== {name}: {args}")
print(f"{'cca':8} {'Mbit/s':>6}  {'Mbit/s per run':20} {'retrans':>7}  {'retrans per run':17} {'retrans %':>9}"
      f"  {'loss drops':>10} {'queue drops':>11}")
means = {}
for cca, runs in by_cca.items():
    tput = [r["throughput_bps"] if r["ok"] else None for r in runs]
    retr = [r["retransmits"] if r["ok"] else None for r in runs]
    pct = mean([retrans_pct(r) for r in runs if r["ok"]])
    means[cca] = (mean(tput), mean(retr), pct)
    print(f"{cca:8} {mbit(means[cca][0]):>6}  {' '.join(mbit(t) for t in tput):20} {num(means[cca][1]):>7}  "
          f"{' '.join(num(r) for r in retr):17} {num(pct, '.1f'):>9}  "
          f"{num(mean([router(r, 'random_loss_drops') for r in runs])):>10} "
          f"{num(mean([router(r, 'queue_drops') for r in runs])):>11}")
print("(means over the runs; retrans % = retransmitted / data segments sent; loss/queue drops:"
      " the router's netem random losses and tbf queue overflows, per run)")
failed = [f"{r['cca']} run {r['run']}" for r in summary["runs"] if not r["ok"]]
if failed:
    print(f"failed runs (not in the means): {', '.join(failed)}")
print(f"kernel warnings: {summary['kernel_warnings']}, module unloaded: {summary['module_unloaded']}")
info = summary.get("module_info") or {}
if info:
    print(f"module: sources sha256 {info.get('sources_sha256')}, at commit {info.get('source_commit')}"
          f"{' + uncommitted changes' if info.get('source_dirty') == 'yes' else ''}")
try:
    print("host load average (1/5/15 min): " + ", ".join(open(loadavg_path).read().split("\n")).strip(", "))
except OSError:
    pass


def claim(text, a, b, better):
    if a is None or b is None:
        print(f"claim: {text}: cannot check (missing runs)")
    else:
        print(f"claim: {text}: {'HOLDS' if better(a, b) else 'DOES NOT HOLD'} ({a:.6g} vs {b:.6g})")


if {"spline", "cubic"} <= means.keys():
    claim("spline throughput > cubic (bit/s)", means["spline"][0], means["cubic"][0], lambda a, b: a > b)
if {"spline", "bbr"} <= means.keys():
    claim("spline retransmits < bbr (count)", means["spline"][1], means["bbr"][1], lambda a, b: a < b)
    claim("spline retransmits < bbr (% of segments)", means["spline"][2], means["bbr"][2], lambda a, b: a < b)
EOF
}

main() {
	parse_args "$@"
	[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
	[[ "$DURATION_S" =~ ^[1-9][0-9]*$ ]] || die "--duration-s must be a positive integer"
	mkdir -p "$OUT_DIR"
	local name status=0 started_s=$SECONDS
	for name in $SCENARIOS; do
		scenario_args "$name" > /dev/null
		run_scenario "$name" || { echo "vm_claims: scenario $name: vm-test reported failures" >&2; status=1; }
	done
	for name in $SCENARIOS; do
		if [ -f "$OUT_DIR/$name/summary.json" ]; then print_table "$name"; else status=1; fi
	done
	echo -e "\nvm_claims: $((SECONDS - started_s)) s; data in $OUT_DIR"
	return "$status"
}

main "$@"
