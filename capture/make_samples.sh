#!/usr/bin/env bash
# make_samples.sh -- make the small real captures in samples/ with record.sh, with ground truth.
#
# usage: capture/make_samples.sh [OUT_DIR] [CCA ...]     (default: samples/, cubic bbr; needs root)
#
# For each CCA: three namespaces of our own, server -> router -> client, veth offloads off.
# The router shapes the download to RATE with tbf and drops LOSS_PERCENT of the server's data
# segments at random in its FORWARD chain (iptables statistic). In the client namespace,
# capture/record.sh captures an iperf3 download (-R) with that CCA on the server's socket:
#   record.sh cli0 10.204.1.1 --iperf3 SECONDS --cca CCA -o OUT_DIR/<cca>-2pct-15mbit
# truth.json beside the trace holds the router's counters (random drops, forwarded, qdisc drops).
# Everything created is removed on exit, also on failure or Ctrl-C.
if [ -z "${BASH_VERSION:-}" ]; then
    echo "make_samples.sh: needs bash" >&2
    exit 2
fi
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly HERE
readonly RECORD_SH="$HERE/record.sh"
readonly RATE="15mbit"
readonly LOSS_PERCENT=2
LOSS_PROBABILITY="$(awk -v p="$LOSS_PERCENT" 'BEGIN {printf "%.4f", p / 100}')"
readonly LOSS_PROBABILITY
readonly SECONDS_PER_TRANSFER=3
readonly SERVER_ADDRESS="10.204.1.1"
readonly CLIENT_ADDRESS="10.204.2.2"
readonly DATA_SEGMENT_MIN_IP_BYTES=100
readonly PREFIX="stb-samples-$$"
NAMESPACES=()
SERVER_PID=""

die() { echo "make_samples.sh: error: $*" >&2; exit 2; }

cleanup() {
    local ns pids
    # End every process still in our namespaces first (iperf3 -s is a child of the backgrounded
    # shell around `ip netns exec`, which then reaps it), then that shell; otherwise iperf3
    # outlives its namespace (seen: an orphaned iperf3 -s).
    for ns in "${NAMESPACES[@]}"; do
        pids="$(ip netns pids "$ns" 2>/dev/null || true)"
        if [[ -n "$pids" ]]; then
            # shellcheck disable=SC2086
            kill $pids 2>/dev/null || true
        fi
    done
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    for ns in "${NAMESPACES[@]}"; do
        pids="$(ip netns pids "$ns" 2>/dev/null || true)"
        if [[ -n "$pids" ]]; then
            # shellcheck disable=SC2086
            kill -9 $pids 2>/dev/null || true
        fi
        ip netns del "$ns" 2>/dev/null || true
    done
    NAMESPACES=()
    SERVER_PID=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

make_namespace() {
    ip netns add "$1"
    NAMESPACES+=("$1")
    in_ns "$1" ip link set lo up
}

configure() {   # namespace device address/prefix
    in_ns "$1" ip addr add "$3" dev "$2"
    in_ns "$1" ethtool -K "$2" tso off gso off gro off >/dev/null
    in_ns "$1" ip link set "$2" up
}

build_path() {
    local srv="$PREFIX-srv" rtr="$PREFIX-rtr" cli="$PREFIX-cli"
    make_namespace "$srv"; make_namespace "$rtr"; make_namespace "$cli"
    ip link add srv0 netns "$srv" type veth peer name rtr-s netns "$rtr"
    ip link add rtr-c netns "$rtr" type veth peer name cli0 netns "$cli"
    configure "$srv" srv0 "$SERVER_ADDRESS/24"
    configure "$rtr" rtr-s 10.204.1.2/24
    configure "$rtr" rtr-c 10.204.2.1/24
    configure "$cli" cli0 "$CLIENT_ADDRESS/24"
    in_ns "$srv" ip route add default via 10.204.1.2
    in_ns "$cli" ip route add default via 10.204.2.1
    in_ns "$rtr" sysctl -q -w net.ipv4.ip_forward=1
    in_ns "$rtr" tc qdisc add dev rtr-c root tbf rate "$RATE" burst 3028 limit 187500
    local data=(-i rtr-s -o rtr-c -p tcp --sport 5201 -m length --length "$DATA_SEGMENT_MIN_IP_BYTES:65535")
    in_ns "$rtr" iptables -w -A FORWARD "${data[@]}" -m statistic --mode random \
        --probability "$LOSS_PROBABILITY" -m comment --comment random-drop -j DROP
    in_ns "$rtr" iptables -w -A FORWARD "${data[@]}" -m comment --comment forwarded
    in_ns "$srv" iperf3 -s >/dev/null 2>&1 &
    SERVER_PID=$!
    local waited=0
    until in_ns "$srv" ss -Hltn 'sport = :5201' | grep -q .; do
        (( waited++ < 100 )) || die "iperf3 server did not start"
        sleep 0.05
    done
}

rule_packets() {   # comment -> packet counter of that FORWARD rule
    in_ns "$PREFIX-rtr" iptables -w -L FORWARD -v -x -n | awk -v c="/* $1 */" 'index($0, c) {print $1}'
}

write_readme() {   # dir cca
    local name
    name="$(basename "$1")"
    cat >"$1/README.md" <<EOF
# $name: a real $2 download at $LOSS_PERCENT% random loss, $RATE bottleneck

A ${SECONDS_PER_TRANSFER}-second iperf3 download (the server sends, with \`-C $2\`), captured at the
receiving client with \`capture/record.sh\` (snaplen 128, tcpdump $(tcpdump --version 2>&1 | sed -nE 's/^tcpdump version ([^ ]+).*/\1/p'),
kernel $(uname -r)). Made by \`capture/make_samples.sh samples $2\` on $(date -u +%Y-%m-%d), which builds

    server 10.204.1.1 (iperf3 -s) -> router (tbf $RATE; iptables FORWARD statistic drop of
    $LOSS_PERCENT% of the server's data segments) -> client 10.204.2.2

in three network namespaces (veth offloads off) and runs, in the client namespace:

    capture/record.sh cli0 10.204.1.1 --iperf3 $SECONDS_PER_TRANSFER --cca $2 -o samples/$name

Files: \`trace.pcap\` (receiver vantage), \`meta.json\` (record.sh: interface, CCA, tcpdump counters),
\`iperf3.json\` (the client's \`iperf3 -R -J\` output), \`tcpdump.log\`, \`truth.json\` (router
counters: random drops and forwarded data segments, tbf queue drops; the sender's TCP_INFO
retransmissions). Analyse with: \`spline-analyze samples/$name/trace.pcap\`.
EOF
}

write_truth() {   # dir cca
    local qdisc_drops
    qdisc_drops="$(in_ns "$PREFIX-rtr" tc -s qdisc show dev rtr-c | sed -nE 's/.*\(dropped ([0-9]+),.*/\1/p' | head -n 1)"
    cat >"$1/truth.json" <<EOF
{
  "cca": "$2",
  "rate": "$RATE",
  "data_loss_probability": $LOSS_PROBABILITY,
  "router_random_drops": $(rule_packets random-drop),
  "router_forwarded_data_segments": $(rule_packets forwarded),
  "router_queue_drops": ${qdisc_drops:-null},
  "sender_retransmits_tcp_info": $(jq '.end.sum_sent.retransmits // null' "$1/iperf3.json"),
  "note": "counts are the server's data segments (IP length >= $DATA_SEGMENT_MIN_IP_BYTES) of all connections to port 5201, iperf3's control connection included"
}
EOF
}

main() {
    [[ "$(id -u)" == 0 ]] || die "needs root (network namespaces)"
    local out_dir
    out_dir="$(realpath -m "${1:-$HERE/../samples}")"
    shift || true
    local ccas=("$@")
    (( ${#ccas[@]} > 0 )) || ccas=(cubic bbr)
    local cca dir
    for cca in "${ccas[@]}"; do
        dir="$out_dir/$cca-${LOSS_PERCENT}pct-$RATE"
        [[ -e "$dir/trace.pcap" ]] && die "$dir/trace.pcap exists; remove it first"
        build_path
        in_ns "$PREFIX-cli" "$RECORD_SH" cli0 "$SERVER_ADDRESS" --iperf3 "$SECONDS_PER_TRANSFER" \
            --cca "$cca" -o "$dir"
        write_truth "$dir" "$cca"
        write_readme "$dir" "$cca"
        cleanup
        echo "make_samples.sh: $dir ($(du -h "$dir/trace.pcap" | cut -f1))" >&2
    done
}

main "$@"
