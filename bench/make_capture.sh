#!/usr/bin/env bash
# make_capture.sh [OUT] [PACKETS] -- make a real ~1M-packet TCP capture for the benchmarks.
#
# Topology (three network namespaces joined by veth, offloads off so every
# packet on the wire is one MSS-sized segment, not a 64 KB super-segment):
#
#   sender  --veth--  router  --veth--  receiver
#   10.77.1.1     10.77.1.2 | 10.77.2.1     10.77.2.2
#                  tbf RATE_MBIT on the egress toward the receiver,
#                  iptables statistic drop LOSS_PROB in FORWARD (data direction)
#
# Traffic: two iperf3 clients at once, one with PARALLEL_FLOWS cubic flows, one
# with PARALLEL_FLOWS bbr flows. tcpdump at the receiver (snaplen 128) writes the
# first PACKETS packets, then everything is torn down (also on failure/^C).
# An existing OUT with at least PACKETS packets is reused.
#
# Environment knobs: RATE_MBIT (300), LOSS_PROB (0.015), PARALLEL_FLOWS (4),
# SNAPLEN (128), MAX_SECONDS (240: give up waiting for tcpdump after this long).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE/data/1m.pcap}"
PACKETS="${2:-1000000}"
RATE_MBIT="${RATE_MBIT:-300}"
LOSS_PROB="${LOSS_PROB:-0.015}"
PARALLEL_FLOWS="${PARALLEL_FLOWS:-4}"
SNAPLEN="${SNAPLEN:-128}"
MAX_SECONDS="${MAX_SECONDS:-240}"

packet_count() {  # number of packets in a capture file (0 if unreadable)
    capinfos -M -c "$1" 2>/dev/null | awk -F: '/Number of packets/ {gsub(/ /, "", $2); print $2; exit}' || true
}

if [[ -s "$OUT" ]]; then
    have="$(packet_count "$OUT")"
    if [[ -n "$have" && "$have" -ge "$PACKETS" ]]; then
        echo "reusing $OUT"
        echo "packets: $have"
        exit 0
    fi
fi

[[ $EUID -eq 0 ]] || { echo "make_capture.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip iperf3 tcpdump tc iptables ethtool capinfos; do
    command -v "$tool" >/dev/null || { echo "make_capture.sh: missing $tool" >&2; exit 2; }
done

PREFIX="bch-$$"
NS_SND="$PREFIX-s"; NS_RTR="$PREFIX-r"; NS_RCV="$PREFIX-c"
IF_SR="b$$sr"; IF_RS="b$$rs"; IF_RC="b$$rc"; IF_CR="b$$cr"   # <= 15 chars
PIDS=()

cleanup() {
    local pid ns
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    # anything still running inside our namespaces (deleting a namespace does not stop its processes)
    for ns in "$NS_SND" "$NS_RTR" "$NS_RCV"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    sleep 0.2
    for ns in "$NS_SND" "$NS_RTR" "$NS_RCV"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -f "$OUT.partial" "$OUT.tcpdump.log"   # only left behind when interrupted
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

offloads_off() {  # ns dev
    in_ns "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
    in_ns "$1" ethtool -K "$2" tx off rx off >/dev/null 2>&1 || true
}

setup_topology() {
    for ns in "$NS_SND" "$NS_RTR" "$NS_RCV"; do ip netns add "$ns"; in_ns "$ns" ip link set lo up; done
    ip link add "$IF_SR" netns "$NS_SND" type veth peer name "$IF_RS" netns "$NS_RTR"
    ip link add "$IF_RC" netns "$NS_RTR" type veth peer name "$IF_CR" netns "$NS_RCV"
    in_ns "$NS_SND" ip addr add 10.77.1.1/24 dev "$IF_SR"
    in_ns "$NS_RTR" ip addr add 10.77.1.2/24 dev "$IF_RS"
    in_ns "$NS_RTR" ip addr add 10.77.2.1/24 dev "$IF_RC"
    in_ns "$NS_RCV" ip addr add 10.77.2.2/24 dev "$IF_CR"
    for pair in "$NS_SND:$IF_SR" "$NS_RTR:$IF_RS" "$NS_RTR:$IF_RC" "$NS_RCV:$IF_CR"; do
        offloads_off "${pair%%:*}" "${pair##*:}"
        in_ns "${pair%%:*}" ip link set "${pair##*:}" up
    done
    in_ns "$NS_SND" ip route add default via 10.77.1.2
    in_ns "$NS_RCV" ip route add default via 10.77.2.1
    in_ns "$NS_RTR" sysctl -qw net.ipv4.ip_forward=1
    # bottleneck: token bucket toward the receiver; burst and queue sized for ~RATE_MBIT
    in_ns "$NS_RTR" tc qdisc add dev "$IF_RC" root tbf rate "${RATE_MBIT}mbit" burst 64kb latency 20ms
    # random loss on the data direction only (sender -> receiver)
    in_ns "$NS_RTR" iptables -A FORWARD -i "$IF_RS" -m statistic --mode random \
        --probability "$LOSS_PROB" -j DROP
}

run_traffic_and_capture() {
    mkdir -p "$(dirname "$OUT")"
    local tmp="$OUT.partial"
    rm -f "$tmp"
    # background jobs start `ip netns exec` directly (not the in_ns function, which would put a
    # subshell between): ip execs the tool, so $! is the tool's own pid and kill reaches it
    ip netns exec "$NS_RCV" iperf3 -s -p 5201 >/dev/null 2>&1 & PIDS+=($!)
    ip netns exec "$NS_RCV" iperf3 -s -p 5202 >/dev/null 2>&1 & PIDS+=($!)
    ip netns exec "$NS_RCV" tcpdump -i "$IF_CR" -s "$SNAPLEN" -B 65536 -n -c "$PACKETS" -w "$tmp" tcp \
        2>"$OUT.tcpdump.log" &
    local tcpdump_pid=$!; PIDS+=("$tcpdump_pid")
    sleep 1   # servers listening, tcpdump attached
    ip netns exec "$NS_SND" iperf3 -c 10.77.2.2 -p 5201 -P "$PARALLEL_FLOWS" -C cubic -t "$MAX_SECONDS" >/dev/null 2>&1 &
    PIDS+=($!)
    ip netns exec "$NS_SND" iperf3 -c 10.77.2.2 -p 5202 -P "$PARALLEL_FLOWS" -C bbr -t "$MAX_SECONDS" >/dev/null 2>&1 &
    PIDS+=($!)
    local waited_s=0
    while kill -0 "$tcpdump_pid" 2>/dev/null; do
        sleep 1; waited_s=$((waited_s + 1))
        if (( waited_s > MAX_SECONDS + 5 )); then
            echo "make_capture.sh: tcpdump did not reach $PACKETS packets in ${MAX_SECONDS}s" >&2
            kill -INT "$tcpdump_pid" 2>/dev/null || true
            break
        fi
    done
    wait "$tcpdump_pid" 2>/dev/null || true
    echo "capture took ${waited_s}s; tcpdump: $(tr '\n' ' ' <"$OUT.tcpdump.log" | sed 's/  */ /g')" >&2
    rm -f "$OUT.tcpdump.log"
    mv "$tmp" "$OUT"
}

setup_topology
echo "capturing $PACKETS packets: ${PARALLEL_FLOWS}x cubic + ${PARALLEL_FLOWS}x bbr, ${RATE_MBIT} Mbit/s tbf," \
     "loss $LOSS_PROB, snaplen $SNAPLEN -> $OUT" >&2
run_traffic_and_capture
cleanup
trap - EXIT
got="$(packet_count "$OUT")"
echo "wrote $OUT"
echo "packets: $got"
if [[ -z "$got" || "$got" -lt "$PACKETS" ]]; then
    echo "make_capture.sh: only ${got:-0} of $PACKETS packets (raise MAX_SECONDS or RATE_MBIT)" >&2
    exit 1
fi
