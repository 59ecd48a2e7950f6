#!/usr/bin/env bash
# record.sh -- capture one TCP transfer with tcpdump, the way the analysis expects it.
#
# Writes DIR/trace.pcap and DIR/meta.json (interface, server, CCA, kernel, tcpdump
# version, snaplen, start/end UTC and tcpdump's own drop counters), optionally an
# iperf3 download's JSON (--iperf3) and the kernel's tcp_probe trace (--probe).
# Run `record.sh -h` for the options.  Needs bash (not sh/dash) and root or CAP_NET_RAW.

# This check must stay POSIX-sh: dash stops at the first bash-only line below.
if [ -z "${BASH_VERSION:-}" ]; then
    echo "record.sh: this script needs bash; run it as 'bash record.sh ...' or './record.sh ...', not with sh" >&2
    exit 2
fi

set -euo pipefail

readonly PROG="record.sh"
readonly DEFAULT_SNAPLEN_BYTES=128        # Ethernet+IPv6+TCP with options fit in 128 bytes
readonly DEFAULT_BUFFER_KIB=16384         # 16 MiB ring: a few seconds at 1 Gbit/s of 128-byte slices
readonly DEFAULT_IPERF3_SECONDS=10
readonly DEFAULT_IPERF3_PORT=5201
readonly CAPTURE_START_TIMEOUT_S=10       # how long tcpdump may take to open the interface
readonly TAIL_AFTER_IPERF3_S=0.5          # keep capturing briefly so the FIN exchange is in the trace
readonly TRACEFS_MOUNT=/sys/kernel/tracing
readonly MAX_DURATION_S=604800            # -t: one week; longer is a typo, not a capture

usage() {
    cat <<EOF
usage: $PROG IFACE SERVER_IP [options]

Capture the traffic to and from SERVER_IP on IFACE with tcpdump.

Output: runs/<UTC time>-<cca>/ (or -o DIR) holding
  trace.pcap     the capture (written as trace.pcap.part until tcpdump has exited cleanly)
  meta.json      interface, server, CCA, kernel, tcpdump version, snaplen, start/end UTC,
                 tcpdump's counters: capture.captured, capture.received_by_filter,
                 capture.kernel_drops, capture.interface_drops (null when unknown)
  tcpdump.log    tcpdump's stderr
  iperf3.json    with --iperf3
  probe.csv      with --probe

options:
  -o DIR            write into DIR (created if missing) instead of runs/<UTC time>-<cca>
  -t SECONDS        stop after SECONDS: 30, 1.5, 30s, 500ms or 2m (default: when iperf3 ends,
                    else on Ctrl-C)
  -s BYTES          snaplen (default $DEFAULT_SNAPLEN_BYTES: headers only)
  -B KIB            capture buffer in KiB (default $DEFAULT_BUFFER_KIB)
  --iperf3 [SECS]   run 'iperf3 -c SERVER_IP -R -J -t SECS' (a download, default $DEFAULT_IPERF3_SECONDS s)
                    during the capture and save its JSON as iperf3.json
  -p PORT           iperf3 server port (default $DEFAULT_IPERF3_PORT)
  --cca NAME        congestion control for this run only (iperf3 -C NAME; the system default
                    is never changed); needs --iperf3
  --probe           on a sending host, record the tcp:tcp_probe tracepoint (cwnd, ssthresh,
                    srtt per ACK) for connections with SERVER_IP into probe.csv (needs root)
  -h, --help        this help

Ctrl-C (SIGINT), SIGTERM or SIGHUP stops the capture cleanly: tcpdump is stopped with
SIGINT, its counters are saved and the trace is complete. Files are written in a private
directory DIR/.record.sh-PID-XXXXXX and moved into DIR when complete; if record.sh is killed
(SIGKILL), tcpdump and iperf3 stop with it and the partial files stay in that directory (the
next run into DIR names it). Exit status: 0 done, 1 capture or transfer failed (also: the
trace or meta.json could not be written whole, e.g. a full disk: one line says so, the
partial files are in DIR as trace.pcap.part, and DIR has no meta.json), 2 usage error
(one line, before anything starts).

examples:
  $PROG wlan0 203.0.113.7 -t 30
  $PROG eth0 198.51.100.2 --iperf3 20 --cca bbr --probe -o runs/bbr-test
EOF
}

# Messages never end the run: when stderr is a pipe whose reader has gone (`2>&1 | head -1`),
# the write fails (SIGPIPE is caught below) and the capture goes on to a complete trace.
die() {
    echo "$PROG: error: $*" >&2 || true
    exit 2
}

warn() {
    echo "$PROG: warning: $*" >&2 || true
}

info() {
    echo "$PROG: $*" >&2 || true
}

# Caught, not ignored: a caught signal is reset to its default in the programs we start, so
# `tcpdump --version | head -n 1` and friends behave as usual.
trap ':' PIPE

# --- validation -------------------------------------------------------------

is_uint() {
    [[ "$1" =~ ^[0-9]+$ ]]
}

# A duration as a user writes it: `30`, `1.5` or `30s` are seconds, `500ms` milliseconds, `2m` or
# `2min` minutes; positive, at most MAX_DURATION_S. The same rules as spline-testbed's
# `spline_analysis.testbed.matrix.parse_duration_s`, which also wants whole seconds (iperf3's
# -t); tests/test_record_sh.py checks both against one table.
# Prints the duration in whole nanoseconds, computed in bash's 64-bit integers: awk is not used
# because mawk (Debian's default awk) caps printf "%d" at 2^31-1, which cut `-t 30` to 2.1 s.
duration_to_ns() {
    local text="$1" whole fraction unit scale_ns ns
    [[ "$text" =~ ^([0-9]{1,9})([.]([0-9]{1,9}))?(ms|s|m|min)?$ ]] || return 1
    whole="${BASH_REMATCH[1]}" fraction="${BASH_REMATCH[3]}" unit="${BASH_REMATCH[4]:-s}"
    case "$unit" in
        ms) scale_ns=1000000 ;;
        s) scale_ns=1000000000 ;;
        m|min) scale_ns=60000000000 ;;
    esac
    fraction="${fraction}000000000"               # right-pad to 9 digits: nanoseconds of a unit
    ns=$(( 10#$whole * scale_ns + 10#${fraction:0:9} * scale_ns / 1000000000 ))
    (( ns > 0 && ns <= MAX_DURATION_S * 1000000000 )) || return 1
    printf '%s\n' "$ns"
}

# Dotted quad with decimal octets 0..255. Leading zeros are refused: tools disagree on them
# (tcpdump reads 010.077.000.002 as 10.77.0.2, iperf3's resolver as octal 8.63.0.2).
is_ipv4() {
    local address="$1" octet
    [[ "$address" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
    IFS=. read -r -a octets <<<"$address"
    for octet in "${octets[@]}"; do
        [[ "$octet" == 0 || "$octet" != 0* ]] || return 1
        (( 10#$octet <= 255 )) || return 1
    done
}

is_ipv6() {
    local address="$1" head tail group groups=0 part
    address="${address%%%*}"                       # drop a zone index (fe80::1%eth0)
    [[ "$address" =~ ^[0-9A-Fa-f:.]+$ ]] || return 1
    [[ "$address" == *:* ]] || return 1
    if [[ "$address" =~ ^(.*:)([0-9]{1,3}(\.[0-9]{1,3}){3})$ ]]; then   # embedded IPv4 tail
        local groups_part="${BASH_REMATCH[1]}" ipv4_part="${BASH_REMATCH[2]}"
        is_ipv4 "$ipv4_part" || return 1
        address="${groups_part}0:0"                 # the IPv4 tail stands for two groups
    fi
    if [[ "$address" == *::*::* ]]; then return 1; fi
    if [[ "$address" == *::* ]]; then
        head="${address%%::*}"
        tail="${address#*::}"
    else
        head="$address"
        tail=""
    fi
    for part in "$head" "$tail"; do
        [[ -z "$part" ]] && continue
        [[ "$part" == :* || "$part" == *: ]] && return 1
        IFS=: read -r -a group_list <<<"$part"
        for group in "${group_list[@]}"; do
            [[ "$group" =~ ^[0-9A-Fa-f]{1,4}$ ]] || return 1
            groups=$((groups + 1))
        done
    done
    if [[ "$address" == *::* ]]; then
        (( groups <= 7 ))
    else
        (( groups == 8 ))
    fi
}

has_cap_net_raw() {
    local cap_hex
    cap_hex="$(awk '/^CapEff:/ {print $2}' /proc/self/status 2>/dev/null || true)"
    [[ -n "$cap_hex" ]] || return 1
    (( (16#$cap_hex >> 13) & 1 ))                  # CAP_NET_RAW is capability 13
}

available_ccas() {
    cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null || true
}

check_cca_available() {
    local wanted="$1" available
    available="$(available_ccas)"
    [[ " $available " == *" $wanted "* ]] && return 0
    # The kernel loads tcp_<name> modules on demand when allowed; say what is there now.
    die "unknown congestion control '$wanted'; available here: ${available:-none listed} (from /proc/sys/net/ipv4/tcp_available_congestion_control)"
}

check_interface() {
    local iface="$1"
    [[ "$iface" == "any" ]] && return 0
    ip link show dev "$iface" >/dev/null 2>&1 || die "unknown interface '$iface'; interfaces here: $(ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); printf "%s ", $2}')"
}

# --- JSON helpers -----------------------------------------------------------

json_string() {
    local text="$1"
    text="${text//\\/\\\\}"
    text="${text//\"/\\\"}"
    text="${text//$'\n'/\\n}"
    text="${text//$'\t'/\\t}"
    text="${text//$'\r'/\\r}"
    printf '"%s"' "$text"
}

json_string_or_null() {
    if [[ -n "$1" ]]; then json_string "$1"; else printf 'null'; fi
}

json_number_or_null() {
    if [[ -n "$1" ]]; then printf '%s' "$1"; else printf 'null'; fi
}

json_bool() {
    if [[ "$1" == 1 ]]; then printf 'true'; else printf 'false'; fi
}

utc_now() {
    date -u +%Y-%m-%dT%H:%M:%S.%NZ | sed -E 's/\.([0-9]{6})[0-9]*Z$/.\1Z/'
}

# --- tcpdump counters -------------------------------------------------------

# tcpdump_counter LOG "received by filter" -> the number, or empty when absent.
tcpdump_counter() {
    local log="$1" phrase="$2"
    sed -nE "s/^([0-9]+) packets? ${phrase}\$/\\1/p" "$log" | tail -n 1
}

# --- probe (tcp:tcp_probe tracepoint) ---------------------------------------

PROBE_INSTANCE=""
PROBE_READER_PID=""
TRACEFS_MOUNTED_BY_US=0

probe_start() {   # SERVER PORT RAW_FILE; PORT empty = any port of SERVER
    local server="$1" port="$2" raw_file="$3"
    if [[ ! -d "$TRACEFS_MOUNT/events" ]]; then
        mount -t tracefs nodev "$TRACEFS_MOUNT" || die "cannot mount tracefs on $TRACEFS_MOUNT for --probe"
        TRACEFS_MOUNTED_BY_US=1
    fi
    [[ -d "$TRACEFS_MOUNT/events/tcp/tcp_probe" ]] || die "this kernel has no tcp:tcp_probe tracepoint"
    # A private trace instance: the global trace buffer and other users' events stay untouched.
    remove_orphaned_trace_instances
    PROBE_INSTANCE="$TRACEFS_MOUNT/instances/record-sh-$$"
    mkdir "$PROBE_INSTANCE" || die "cannot create trace instance $PROBE_INSTANCE"
    echo 8192 >"$PROBE_INSTANCE/buffer_size_kb"
    # The tai clock stamps events in wall-clock seconds, as tcpdump stamps packets, so
    # spline-analyze can line probe.csv up with the capture (the default clock counts from boot).
    echo tai >"$PROBE_INSTANCE/trace_clock" 2>/dev/null || warn "this kernel has no tai trace clock: probe.csv times count from boot"
    # Fields saddr/daddr are sockaddr byte arrays the filter cannot match; a known server port
    # narrows it in the kernel, the address is matched when the CSV is written.
    if [[ -n "$port" ]]; then
        echo "sport == $port || dport == $port" >"$PROBE_INSTANCE/events/tcp/tcp_probe/filter"
    fi
    echo 1 >"$PROBE_INSTANCE/events/tcp/tcp_probe/enable"
    "${DIE_WITH_US[@]}" cat "$PROBE_INSTANCE/trace_pipe" >"$raw_file" &
    PROBE_READER_PID=$!
    : "$server"
}

# Trace instances of record.sh runs that were killed before they could remove them.
remove_orphaned_trace_instances() {
    local instance pid
    for instance in "$TRACEFS_MOUNT"/instances/record-sh-*; do
        [[ -d "$instance" ]] || continue
        pid="${instance##*/record-sh-}"
        is_uint "$pid" && kill -0 "$pid" 2>/dev/null && continue
        echo 0 >"$instance/events/tcp/tcp_probe/enable" 2>/dev/null || true
        rmdir "$instance" 2>/dev/null && info "removed the trace instance of a killed run (pid $pid)"
    done
    return 0
}

probe_stop() {
    [[ -n "$PROBE_INSTANCE" ]] || return 0
    echo 0 >"$PROBE_INSTANCE/events/tcp/tcp_probe/enable" 2>/dev/null || true
    if [[ -n "$PROBE_READER_PID" ]]; then
        sleep 0.3 || true                           # let the reader drain what is buffered
        kill "$PROBE_READER_PID" 2>/dev/null || true
        wait "$PROBE_READER_PID" 2>/dev/null || true
        PROBE_READER_PID=""
    fi
    PROBE_OVERRUN_EVENTS="$(awk '/^overrun:/ {sum += $2} END {print sum + 0}' "$PROBE_INSTANCE"/per_cpu/cpu*/stats 2>/dev/null || true)"
    rmdir "$PROBE_INSTANCE" 2>/dev/null || warn "could not remove trace instance $PROBE_INSTANCE"
    PROBE_INSTANCE=""
    if [[ "$TRACEFS_MOUNTED_BY_US" == 1 ]]; then
        umount "$TRACEFS_MOUNT" 2>/dev/null || warn "tracefs on $TRACEFS_MOUNT is busy; left mounted"
        TRACEFS_MOUNTED_BY_US=0
    fi
}

# probe_to_csv RAW SERVER PORT CSV: one row per tcp_probe event of a connection with SERVER:PORT
# (any port of SERVER when PORT is empty).
probe_to_csv() {
    local raw="$1" server="$2" port="$3" csv="$4" endpoint
    if [[ "$server" == *:* ]]; then endpoint="[$server]:"; else endpoint="$server:"; fi
    awk -v endpoint="$endpoint" -v port="$port" '
        BEGIN {
            OFS = ","
            print "time_s,src,dst,data_len_bytes,snd_nxt,snd_una,snd_cwnd_segments,ssthresh_segments,snd_wnd_bytes,srtt_us,rcv_wnd_bytes,sock_cookie"
        }
        / tcp_probe: / {
            time_s = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^[0-9]+\.[0-9]+:$/) { time_s = substr($i, 1, length($i) - 1) }
                split($i, kv, "=")
                if (kv[1] != "" && index($i, "=") > 0) { v[kv[1]] = substr($i, length(kv[1]) + 2) }
            }
            # A dual-stack socket (iperf3 -s listens on ::) prints IPv4 peers as [::ffff:a.b.c.d]:port.
            src = v["src"]; dst = v["dest"]
            if (src ~ /^\[::ffff:[0-9.]+\]:/) { sub(/^\[::ffff:/, "", src); sub(/\]:/, ":", src) }
            if (dst ~ /^\[::ffff:[0-9.]+\]:/) { sub(/^\[::ffff:/, "", dst); sub(/\]:/, ":", dst) }
            v["src"] = src; v["dest"] = dst
            if (port != "") {
                if (v["src"] != endpoint port && v["dest"] != endpoint port) next
            } else if (index(v["src"], endpoint) != 1 && index(v["dest"], endpoint) != 1) next
            print time_s, v["src"], v["dest"], v["data_len"], v["snd_nxt"], v["snd_una"], v["snd_cwnd"], \
                  v["ssthresh"], v["snd_wnd"], v["srtt"], v["rcv_wnd"], v["sock_cookie"]
        }' "$raw" >"$csv"
}

# --- the run ----------------------------------------------------------------

TCPDUMP_PID=""
IPERF3_PID=""
STAGE_DIR=""
# Output names in DIR; a run refuses a folder holding any of them (another run's files).
readonly OUTPUT_FILES=(trace.pcap trace.pcap.part meta.json tcpdump.log iperf3.json iperf3.stderr probe.csv)
# tcpdump, iperf3 and the trace reader get SIGTERM if this script dies, even by SIGKILL, which no
# trap sees: without it tcpdump, in a session of its own, would capture on until the disk is full.
DIE_WITH_US=()
if command -v setpriv >/dev/null 2>&1 && setpriv --pdeathsig TERM true 2>/dev/null; then
    DIE_WITH_US=(setpriv --pdeathsig TERM)
fi
STOP_REQUESTED=0
STOP_REASON=""
FAILURE_SAID=0      # the run already said in one line why it failed

on_stop_signal() {
    STOP_REQUESTED=1
    STOP_REASON="$1"
}

stop_process() {
    local pid="$1" signal="$2" grace_s="$3" waited=0
    kill -0 "$pid" 2>/dev/null || return 0
    kill "-$signal" "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && (( waited < grace_s * 10 )); do
        sleep 0.1 || true
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        warn "process $pid did not stop on SIG$signal within ${grace_s}s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

cleanup_on_exit() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$IPERF3_PID" ]]; then stop_process "$IPERF3_PID" INT 3; fi
    if [[ -n "$TCPDUMP_PID" ]]; then stop_process "$TCPDUMP_PID" INT 5; fi
    probe_stop
    publish_stage
    if [[ -n "${OUT_DIR:-}" && -f "$OUT_DIR/trace.pcap.part" ]] && (( FAILURE_SAID == 0 )); then
        warn "the capture did not finish cleanly: $OUT_DIR/trace.pcap.part is incomplete"
    fi
    exit "$rc"
}

# Move what the private directory holds into the output folder (rename(2): a symlink already
# at the destination is replaced, not followed) and remove the private directory. meta.json
# moves last, so a folder with meta.json holds a finished run.
publish_stage() {
    [[ -n "$STAGE_DIR" ]] || return 0
    local name
    for name in * .[!.]*; do
        [[ -e "$name" && "$name" != meta.json ]] || continue
        mv -T -- "$name" "$OUT_DIR/$name" || warn "could not move $name into $OUT_DIR; it stays in $STAGE_DIR"
    done
    if [[ -e meta.json ]]; then
        mv -T -- meta.json "$OUT_DIR/meta.json" || warn "could not move meta.json into $OUT_DIR; it stays in $STAGE_DIR"
    fi
    cd / || true
    rmdir -- "$STAGE_DIR" 2>/dev/null || true
    STAGE_DIR=""
}

# A record.sh killed with SIGKILL cannot tidy up: its private directory stays in DIR with the
# partial trace. Say so on the next run into the same folder.
report_killed_runs() {
    local out_dir="$1" stage pid
    for stage in "$out_dir"/.record.sh-*; do
        [[ -d "$stage" && ! -L "$stage" ]] || continue
        pid="${stage##*/.record.sh-}"; pid="${pid%%-*}"
        is_uint "$pid" && kill -0 "$pid" 2>/dev/null && continue
        warn "an earlier record.sh (pid $pid) was killed before it finished; its partial files are in $stage"
    done
}

# Packets in a pcap file by tcpdump's own reading (empty when it is cut mid-record, or when
# this tcpdump is older than 4.99 and has no --count: then tcpdump's "captured" is trusted).
trace_packet_count() {
    local file="$1" out
    if ! tcpdump --help 2>&1 | grep -q -- '--count'; then
        tcpdump_counter "$(dirname -- "$file")/tcpdump.log" "captured"
        return 0
    fi
    out="$(tcpdump -r "$file" --count 2>/dev/null)" || return 0
    [[ "$out" =~ ^([0-9]+)\ packets?$ ]] && printf '%s\n' "${BASH_REMATCH[1]}"
    return 0
}

# ": No space left on device" when the file system holding $1 has no space left, else nothing.
disk_full_note() {
    local available
    available="$(df -P -- "$1" 2>/dev/null | sed -n '2{s/^[^ ]* *[0-9]* *[0-9]* *\([0-9]*\).*/\1/p}')" || true
    [[ "$available" == 0 ]] && printf ': No space left on device'
    return 0
}

wait_for_tcpdump_listening() {
    local log="$1" waited=0
    while (( waited < CAPTURE_START_TIMEOUT_S * 10 )); do
        grep -q "listening on" "$log" 2>/dev/null && return 0
        kill -0 "$TCPDUMP_PID" 2>/dev/null || return 1
        sleep 0.1 || true
        waited=$((waited + 1))
    done
    return 1
}

# Sleep in small steps so SIGINT/SIGTERM are acted on promptly. Every `sleep` here is
# `|| true`: a terminal's Ctrl-C reaches the whole process group, sleep dies with status 130,
# and set -e would end the script before tcpdump's counters are saved.
sleep_until_stop() {
    local deadline_ns="$1"          # empty = no deadline
    while (( STOP_REQUESTED == 0 )); do
        if [[ -n "$deadline_ns" ]] && (( $(date +%s%N) >= deadline_ns )); then
            STOP_REASON="duration"
            return 0
        fi
        if [[ -n "$IPERF3_PID" ]] && ! kill -0 "$IPERF3_PID" 2>/dev/null; then
            STOP_REASON="iperf3_finished"
            return 0
        fi
        kill -0 "$TCPDUMP_PID" 2>/dev/null || { STOP_REASON="tcpdump_exited"; return 0; }
        sleep 0.1 || true
    done
}

main() {
    local iface="" server="" out_dir="" duration_s="" duration_given=0 duration_ns=""
    local snaplen="$DEFAULT_SNAPLEN_BYTES"
    local buffer_kib="$DEFAULT_BUFFER_KIB" iperf3_seconds="" iperf3_port="$DEFAULT_IPERF3_PORT"
    local cca="" probe=0 positional=()

    while (( $# > 0 )); do
        case "$1" in
            -h|--help) usage; exit 0 ;;
            -o) [[ $# -ge 2 ]] || die "-o needs a directory"; out_dir="$2"; shift 2 ;;
            -t) [[ $# -ge 2 ]] || die "-t needs SECONDS"; duration_s="$2"; duration_given=1; shift 2 ;;
            -s) [[ $# -ge 2 ]] || die "-s needs BYTES"; snaplen="$2"; shift 2 ;;
            -B) [[ $# -ge 2 ]] || die "-B needs KIB"; buffer_kib="$2"; shift 2 ;;
            -p) [[ $# -ge 2 ]] || die "-p needs a port"; iperf3_port="$2"; shift 2 ;;
            --cca) [[ $# -ge 2 ]] || die "--cca needs a name"; cca="$2"; shift 2 ;;
            --cca=*) cca="${1#--cca=}"; shift ;;
            --probe) probe=1; shift ;;
            --iperf3)
                iperf3_seconds="$DEFAULT_IPERF3_SECONDS"
                if [[ $# -ge 2 ]] && is_uint "$2"; then iperf3_seconds="$2"; shift; fi
                shift ;;
            --iperf3=*) iperf3_seconds="${1#--iperf3=}"; shift ;;
            --) shift; positional+=("$@"); break ;;
            -*) die "unknown option '$1' (see $PROG -h)" ;;
            *) positional+=("$1"); shift ;;
        esac
    done
    (( ${#positional[@]} == 2 )) || { usage >&2; die "expected IFACE and SERVER_IP, got ${#positional[@]} argument(s)"; }
    iface="${positional[0]}"
    server="${positional[1]}"

    # Everything is checked before anything starts.
    if [[ "$(id -u)" != 0 ]] && ! has_cap_net_raw; then
        die "capturing needs root or CAP_NET_RAW (try: sudo $0 ...)"
    fi
    command -v tcpdump >/dev/null 2>&1 || die "tcpdump is not installed (Debian/Ubuntu: apt-get install tcpdump)"
    check_interface "$iface"
    is_ipv4 "$server" || is_ipv6 "$server" || die "'$server' is not an IPv4 or IPv6 address"
    if ! is_uint "$snaplen" || (( snaplen < 68 || snaplen > 262144 )); then
        die "snaplen must be 68..262144 bytes, got '$snaplen'"
    fi
    if ! is_uint "$buffer_kib" || (( buffer_kib < 1 )); then
        die "-B must be a positive number of KiB, got '$buffer_kib'"
    fi
    if ! is_uint "$iperf3_port" || (( iperf3_port < 1 || iperf3_port > 65535 )); then
        die "port must be 1..65535, got '$iperf3_port'"
    fi
    if (( duration_given )); then
        duration_ns="$(duration_to_ns "$duration_s")" ||
            die "-t needs a duration such as 30, 1.5, 500ms or 2m (positive, at most $MAX_DURATION_S s), got '$duration_s'"
    fi
    if [[ -n "$iperf3_seconds" ]]; then
        if ! is_uint "$iperf3_seconds" || (( iperf3_seconds < 1 )); then
            die "--iperf3 needs a positive whole number of seconds, got '$iperf3_seconds'"
        fi
        command -v iperf3 >/dev/null 2>&1 || die "--iperf3: iperf3 is not installed (apt-get install iperf3)"
    fi
    if [[ -n "$cca" ]]; then
        [[ -n "$iperf3_seconds" ]] || die "--cca picks the CCA of the iperf3 transfer; it needs --iperf3 (the system default is never changed)"
        check_cca_available "$cca"
    fi
    if (( probe )); then
        [[ "$(id -u)" == 0 ]] || die "--probe needs root (it uses tracefs)"
    fi

    local cca_in_use cca_source
    if [[ -n "$cca" ]]; then
        cca_in_use="$cca"; cca_source="--cca (iperf3 -C)"
    else
        cca_in_use="$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)"
        cca_source="system default (this host's network namespace)"
    fi
    if [[ -z "$out_dir" ]]; then
        out_dir="runs/$(date -u +%Y%m%dT%H%M%SZ)-$cca_in_use"
    fi
    if [[ -L "$out_dir" && ! -e "$out_dir" ]]; then
        die "-o '$out_dir' is a symlink to nothing (dangling)"
    elif [[ -e "$out_dir" && ! -d "$out_dir" ]]; then
        die "-o '$out_dir' exists and is not a directory"
    fi
    local mkdir_error
    mkdir_error="$(LC_ALL=C mkdir -p -- "$out_dir" 2>&1)" || die "cannot create output directory '$out_dir': ${mkdir_error##*: }"
    out_dir="$(cd -- "$out_dir" 2>/dev/null && pwd -P)" || die "cannot enter output directory '$out_dir': permission denied"
    [[ -w "$out_dir" ]] || die "cannot write into output directory '$out_dir': permission denied"
    local name
    for name in "${OUTPUT_FILES[@]}"; do
        if [[ -e "$out_dir/$name" || -L "$out_dir/$name" ]]; then
            die "'$out_dir/$name' exists (another run's output?); choose another -o DIR"
        fi
    done
    report_killed_runs "$out_dir"
    # Every file is created inside a fresh directory only we can enter, reached through the
    # working directory (not a path someone could swap), and renamed into DIR when complete: a
    # symlink planted in DIR is replaced, never followed, even when this runs as root.
    STAGE_DIR="$(mktemp -d -- "$out_dir/.record.sh-$$-XXXXXX" 2>/dev/null)" \
        || die "cannot create a private directory in '$out_dir'$(disk_full_note "$out_dir")"
    cd -- "$STAGE_DIR" || die "cannot enter '$STAGE_DIR'"
    OUT_DIR="$out_dir"

    local pcap_part="trace.pcap.part" log="tcpdump.log"
    local tcpdump_version kernel start_utc end_utc
    tcpdump_version="$(tcpdump --version 2>&1 | sed -nE 's/^tcpdump version ([^ ]+).*/\1/p' | head -n 1)"
    kernel="$(uname -sr)"

    trap cleanup_on_exit EXIT
    trap 'on_stop_signal SIGINT' INT
    trap 'on_stop_signal SIGTERM' TERM
    trap 'on_stop_signal SIGHUP' HUP     # the terminal closed: stop as cleanly as on Ctrl-C

    # Without --iperf3 the transfer's port is unknown: every connection with the server counts.
    local probe_port=""
    [[ -n "$iperf3_seconds" ]] && probe_port="$iperf3_port"
    if (( probe )); then probe_start "$server" "$probe_port" probe.raw; fi

    # -Z root: Debian's tcpdump otherwise switches to user tcpdump and may not write into DIR.
    # --immediate-mode: without it libpcap hands packets over in blocks with a 1 s timeout, and
    # the packets of the last partial block are counted as received but never written at stop.
    local user_args=()
    [[ "$(id -u)" == 0 ]] && user_args=(-Z root)
    start_utc="$(utc_now)"
    # setsid: a terminal's Ctrl-C goes to the whole foreground process group; tcpdump in a
    # session of its own is stopped by us, after iperf3 and the FIN exchange, not mid-transfer.
    setsid "${DIE_WITH_US[@]}" tcpdump -i "$iface" --immediate-mode -n -s "$snaplen" -B "$buffer_kib" "${user_args[@]}" -w "$pcap_part" \
        host "$server" 2>"$log" &
    TCPDUMP_PID=$!
    if ! wait_for_tcpdump_listening "$log"; then
        cat "$log" >&2 || true
        die "tcpdump did not start capturing on '$iface' (its messages are above)"
    fi
    info "capturing on $iface, host $server -> $out_dir (Ctrl-C to stop${duration_ns:+; stops after $duration_s})"

    local iperf3_args=()
    if [[ -n "$iperf3_seconds" ]]; then
        iperf3_args=(-c "$server" -p "$iperf3_port" -R -J -t "$iperf3_seconds")
        [[ -n "$cca" ]] && iperf3_args+=(-C "$cca")
        "${DIE_WITH_US[@]}" iperf3 "${iperf3_args[@]}" >iperf3.json 2>iperf3.stderr &
        IPERF3_PID=$!
    fi

    local deadline_ns=""
    if [[ -n "$duration_ns" ]]; then
        deadline_ns=$(( $(date +%s%N) + duration_ns ))
    fi
    sleep_until_stop "$deadline_ns"

    local iperf3_exit="" iperf3_stopped_early=0 iperf3_error=""
    if [[ -n "$IPERF3_PID" ]]; then
        if kill -0 "$IPERF3_PID" 2>/dev/null; then
            iperf3_stopped_early=1
            warn "stopping iperf3 before it finished ($STOP_REASON)"
            stop_process "$IPERF3_PID" INT 3
        fi
        # A terminal's Ctrl-C reaches iperf3 too, which may then have ended before us.
        [[ "$STOP_REASON" != "iperf3_finished" ]] && iperf3_stopped_early=1
        iperf3_exit=0
        wait "$IPERF3_PID" 2>/dev/null || iperf3_exit=$?
        IPERF3_PID=""
        sleep "$TAIL_AFTER_IPERF3_S" || true
        # iperf3 3.12 -J exits 0 even when it could not connect: its JSON "error" says so.
        iperf3_error="$(sed -nE 's/^[[:space:]]*"error":[[:space:]]*"(.*)",?$/\1/p' iperf3.json 2>/dev/null | head -n 1)"
        if [[ "$iperf3_exit" != 0 || -n "$iperf3_error" ]]; then
            warn "iperf3 exited with status $iperf3_exit: ${iperf3_error:-$(head -c 300 iperf3.stderr 2>/dev/null || true)}"
        fi
        [[ -s iperf3.stderr ]] || rm -f iperf3.stderr
    fi

    local tcpdump_exit=0
    stop_process "$TCPDUMP_PID" INT 5
    wait "$TCPDUMP_PID" 2>/dev/null || tcpdump_exit=$?
    TCPDUMP_PID=""
    end_utc="$(utc_now)"

    local probe_rows=""
    PROBE_OVERRUN_EVENTS=""
    if (( probe )); then
        probe_stop
        probe_to_csv probe.raw "$server" "$probe_port" probe.csv
        rm -f probe.raw
        probe_rows=$(( $(wc -l <probe.csv) - 1 ))
    fi

    local captured received kernel_drops interface_drops complete=0
    captured="$(tcpdump_counter "$log" "captured")"
    received="$(tcpdump_counter "$log" "received by filter")"
    kernel_drops="$(tcpdump_counter "$log" "dropped by kernel")"
    interface_drops="$(tcpdump_counter "$log" "dropped by interface")"
    # tcpdump >= 4.99 prints "dropped by interface" only when non-zero; libpcap on Linux reads
    # the device's drop counters, except on the pseudo-device "any", where it is unknown.
    if [[ -z "$interface_drops" && -n "$kernel_drops" && "$iface" != "any" ]]; then
        interface_drops=0
    fi
    # Matched by the filter but neither written nor dropped: still in the ring when tcpdump stopped.
    local unread_at_stop=""
    if [[ -n "$captured" && -n "$received" && -n "$kernel_drops" ]] && (( received - captured - kernel_drops >= 0 )); then
        unread_at_stop=$(( received - captured - kernel_drops ))
    fi
    # tcpdump does not check its writes: on a full disk it reports every packet captured and
    # leaves a cut file. Count what the file holds.
    local written="" warn_once=""
    if [[ -n "$captured" && -f "$pcap_part" ]]; then
        written="$(trace_packet_count "$pcap_part")"
    fi
    if [[ -n "$captured" && -n "$written" ]] && (( written >= captured )); then
        mv -T -- "$pcap_part" trace.pcap
        complete=1
    elif [[ -n "$captured" ]]; then
        FAILURE_SAID=1
        warn_once="the trace holds ${written:-none} of the $captured packets tcpdump captured: it could not be written whole$(disk_full_note .); the partial files are in $out_dir"
    fi

    local cca_reported=""
    if [[ -s iperf3.json ]]; then
        cca_reported="$(sed -nE 's/.*"sender_tcp_congestion":[[:space:]]*"([^"]+)".*/\1/p' iperf3.json | head -n 1)"
    fi

    local meta_text
    meta_text="$(
        printf '{\n'
        printf '  "schema": "spline-capture-meta/1",\n'
        printf '  "tool": "capture/record.sh",\n'
        printf '  "interface": %s,\n' "$(json_string "$iface")"
        printf '  "server": %s,\n' "$(json_string "$server")"
        printf '  "filter": %s,\n' "$(json_string "host $server")"
        printf '  "cca": %s,\n' "$(json_string "$cca_in_use")"
        printf '  "cca_source": %s,\n' "$(json_string "$cca_source")"
        printf '  "cca_sender_reported_by_iperf3": %s,\n' "$(json_string_or_null "$cca_reported")"
        printf '  "kernel": %s,\n' "$(json_string "$kernel")"
        printf '  "hostname": %s,\n' "$(json_string "$(uname -n)")"
        printf '  "tcpdump_version": %s,\n' "$(json_string_or_null "$tcpdump_version")"
        printf '  "snaplen_bytes": %s,\n' "$snaplen"
        printf '  "buffer_kib": %s,\n' "$buffer_kib"
        printf '  "start_utc": %s,\n' "$(json_string "$start_utc")"
        printf '  "end_utc": %s,\n' "$(json_string "$end_utc")"
        printf '  "stop_reason": %s,\n' "$(json_string "$STOP_REASON")"
        printf '  "trace_file": %s,\n' "$(json_string "$([[ $complete == 1 ]] && echo trace.pcap || echo trace.pcap.part)")"
        printf '  "trace_complete": %s,\n' "$(json_bool "$complete")"
        printf '  "capture": {\n'
        printf '    "captured": %s,\n' "$(json_number_or_null "$captured")"
        printf '    "received_by_filter": %s,\n' "$(json_number_or_null "$received")"
        printf '    "kernel_drops": %s,\n' "$(json_number_or_null "$kernel_drops")"
        printf '    "interface_drops": %s,\n' "$(json_number_or_null "$interface_drops")"
        printf '    "unread_at_stop": %s,\n' "$(json_number_or_null "$unread_at_stop")"
        printf '    "tcpdump_exit_status": %s\n' "$tcpdump_exit"
        printf '  },\n'
        printf '  "iperf3": %s,\n' "$(if [[ -n "$iperf3_seconds" ]]; then
            printf '{"file": "iperf3.json", "command": %s, "exit_status": %s, "error": %s, "stopped_early": %s}' \
                "$(json_string "iperf3 ${iperf3_args[*]}")" "$iperf3_exit" "$(json_string_or_null "$iperf3_error")" \
                "$(json_bool "$iperf3_stopped_early")"
            else printf 'null'; fi)"
        printf '  "probe": %s\n' "$(if (( probe )); then
            printf '{"file": "probe.csv", "rows": %s, "overrun_events": %s, "srtt_unit": "us", "cwnd_unit": "segments"}' \
                "$probe_rows" "$(json_number_or_null "$PROBE_OVERRUN_EVENTS")"
            else printf 'null'; fi)"
        printf '}'
    )"
    # Written whole or not at all: a meta.json marks a finished run.
    if ! printf '%s\n' "$meta_text" >meta.json.part 2>/dev/null || ! mv -T -- meta.json.part meta.json; then
        rm -f -- meta.json.part
        publish_stage
        FAILURE_SAID=1
        echo "$PROG: error: cannot write $out_dir/meta.json$(disk_full_note "$out_dir"); the partial files are in $out_dir" >&2 || true
        exit 1
    fi
    publish_stage                                   # meta.json last: it marks a finished run
    if [[ -n "$warn_once" ]]; then
        echo "$PROG: error: $warn_once" >&2 || true
        exit 1
    fi

    if (( complete )); then
        info "done: $out_dir/trace.pcap (${captured:-?} packets captured, ${kernel_drops:-unknown} dropped by kernel)"
    else
        warn "tcpdump did not report its counters (exit status $tcpdump_exit): $out_dir/$pcap_part may be incomplete"
        exit 1
    fi
    if [[ -n "$iperf3_exit" && ( "$iperf3_exit" != 0 || -n "$iperf3_error" ) && "$iperf3_stopped_early" == 0 ]]; then
        warn "the iperf3 transfer failed (see $out_dir/iperf3.json); the trace holds only what happened"
        exit 1
    fi
}

main "$@"
