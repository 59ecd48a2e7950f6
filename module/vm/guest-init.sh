#!/bin/sh
# shellcheck shell=dash  # busybox ash: POSIX sh plus `local`, which dash shares
# /init of the VM that tests the Spline module (copied into the initramfs by vm-test.sh).
#
# Runs under busybox sh (no bash in the guest). Busybox's sh runs its own `ip`/`tc`
# applets before PATH, so iproute2, iperf3, tcpdump and ethtool are always called by
# absolute path. Settings come from /etc/vm-test.conf, written by vm-test.sh.
#
# Topology (three network namespaces, so that the bottleneck queue is NOT on the
# sender's own interface: a local tbf would push back on the sender through TCP small
# queues and local-drop signals, which a real bottleneck never does):
#
#   snd [veth-s 10.0.1.1] <-> [veth-r1 10.0.1.254] rtr [veth-r2 10.0.2.254] <-> [veth-c 10.0.2.1] rcv
#                                                      egress: netem (delay, jitter, loss)
#                                                              -> tbf (rate, queue)
#
# The data direction (snd -> rcv) crosses netem then tbf; ACKs return unimpaired.
# tcpdump records on veth-s inside snd: the sender's view, every transmission.
# Everything produced goes to /out (9p share of the host's output directory).

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

IP=/usr/sbin/ip
TC=/usr/sbin/tc
ETHTOOL=/usr/sbin/ethtool
IPERF3=/usr/bin/iperf3
TCPDUMP=/usr/bin/tcpdump
SS=/usr/bin/ss
OUT=/out
RCV_ADDR=10.0.2.1
RUN_GRACE_S=30

say() { echo "vm-test: $*"; }

power_off() {
	sync
	say "powering off"
	poweroff -f
	# If poweroff failed, exiting init panics the kernel; qemu (-no-reboot) then exits.
	exit 1
}

mount_basics() {
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null || true
	mkdir -p /run /tmp /var/run
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs /tmp
}

load_kernel_modules() {
	local ko
	while read -r ko; do
		[ -n "$ko" ] || continue
		insmod "/lib/modules/vm/$ko" || say "insmod $ko failed"
	done < /etc/vm-modules.load
}

mount_output() {
	mkdir -p "$OUT"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out "$OUT"
}

# Inside a namespace: "ns <name> <command...>" (ip netns exec execs the command itself).
ns() {
	local netns="$1"
	shift
	"$IP" netns exec "$netns" "$@"
}

veth_offloads_off() {
	# Segmentation/receive offloads off, so packets on the wire are MSS-sized as on a real link.
	ns "$1" "$ETHTOOL" -K "$2" tso off gso off gro off >/dev/null 2>&1 \
		|| say "ethtool could not turn offloads off on $2 (ns $1)"
}

make_link() { # <ns a> <dev a> <addr a/len> <ns b> <dev b> <addr b/len>
	"$IP" link add "$2" netns "$1" type veth peer name "$5" netns "$4"
	ns "$1" "$IP" addr add "$3" dev "$2"
	ns "$4" "$IP" addr add "$6" dev "$5"
	ns "$1" "$IP" link set "$2" up
	ns "$4" "$IP" link set "$5" up
	veth_offloads_off "$1" "$2"
	veth_offloads_off "$4" "$5"
}

build_topology() {
	local n
	for n in snd rtr rcv; do
		"$IP" netns add "$n"
		ns "$n" "$IP" link set lo up
	done
	make_link snd veth-s 10.0.1.1/24 rtr veth-r1 10.0.1.254/24
	make_link rtr veth-r2 10.0.2.254/24 rcv veth-c "$RCV_ADDR/24"
	ns snd "$IP" route add default via 10.0.1.254
	ns rcv "$IP" route add default via 10.0.2.254
	ns rtr sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
}

# netem's arguments for the data path: delay, jitter (packets pass each other unless
# JITTER_KEEPS_ORDER=1), loss.
netem_args() {
	local args
	args="delay ${DELAY_MS}ms"
	if [ "$JITTER_MS" != 0 ]; then
		args="$args ${JITTER_MS}ms"
		# With a rate, netem sends no packet before the one queued ahead of it: the
		# jitter keeps order (a Wi-Fi link's queue); 100 Gbit/s adds ~0.1 us a packet.
		[ "${JITTER_KEEPS_ORDER:-0}" != 1 ] || args="$args rate 100gbit"
	fi
	[ "$LOSS_PCT" = 0 ] || args="$args loss ${LOSS_PCT}%"
	echo "$args"
}

shape_path() {
	local netem_args
	netem_args=$(netem_args)
	# netem first (its delay line must never drop: large limit), then tbf, whose
	# queue (limit in bytes) is the bottleneck buffer. Made afresh for each run, so
	# that its drop counters are the run's own.
	ns rtr "$TC" qdisc del dev veth-r2 root 2>/dev/null
	# shellcheck disable=SC2086
	ns rtr "$TC" qdisc add dev veth-r2 root handle 1: netem $netem_args limit 100000 || return 1
	ns rtr "$TC" qdisc add dev veth-r2 parent 1:1 handle 10: tbf rate "${RATE_MBIT}mbit" \
		burst "$BURST_BYTES" limit "$QUEUE_BYTES" || return 1
	ns rtr "$TC" qdisc show dev veth-r2 > "$OUT/qdisc.txt"
}

load_cca_module() {
	[ -n "$CCA_KO" ] || return 0
	if insmod "/lib/modules/vm/cca/$CCA_KO" 2> "$OUT/insmod.txt"; then
		say "loaded $CCA_KO"
	else
		say "insmod $CCA_KO failed: $(cat "$OUT/insmod.txt")"
	fi
}

# One iperf3 server per flow of the widest run (a server serves one test at a time): ports
# 5201, 5202, ... Started directly (not through the ns function): $! must be iperf3 itself.
start_receivers() {
	local i=1
	SERVER_PIDS=""
	while [ "$i" -le "$MAX_FLOWS" ]; do
		"$IP" netns exec rcv "$IPERF3" -s -B "$RCV_ADDR" -p "$((5200 + i))" \
			> "$OUT/iperf3-server-$i.log" 2>&1 &
		SERVER_PIDS="$SERVER_PIDS $!"
		i=$((i + 1))
	done
	sleep 1
}

# Bandwidth steps during a run: RATE_STEPS is "RATE@SECONDS ..." (Mbit/s from that second
# of the test on); the tbf keeps its buffer and bucket. Runs in the background. The clock
# starts when the first client's data connection is up (its control and data connections to
# port 5201 established in the sender's /proc/net/tcp), as iperf3's intervals do: counted from
# the launch, the steps came 1-3 s early under TCG.
step_rates() {
	local step rate at now=0 i=0
	while [ "$(ns snd grep -c ':1451 01 ' /proc/net/tcp)" -lt 2 ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	for step in $RATE_STEPS; do
		rate=${step%@*}
		at=${step#*@}
		sleep "$((at - now))"
		now=$at
		ns rtr "$TC" qdisc change dev veth-r2 parent 1:1 handle 10: tbf rate "${rate}mbit" \
			burst "$BURST_BYTES" limit "$QUEUE_BYTES" || say "tc could not step the rate to $rate"
	done
}

# With SAMPLE_MS > 0: every SAMPLE_MS ms until <stop file> exists, the sender's TCP sockets
# toward the receiver as `ss -tin` shows them (cwnd, pacing and delivery rates, RTT, and the
# CCA's own estimates: bbr's, and the Spline module's in the same fields), under a line
# "# <seconds since boot>" each. Runs in the background.
sample_sockets() { # <out file> <stop file>
	local period
	period=$(awk -v ms="$SAMPLE_MS" 'BEGIN { printf "%.3f", ms / 1000 }')
	while [ ! -e "$2" ]; do
		echo "# $(cut -d' ' -f1 /proc/uptime)"
		ns snd "$SS" -tinH dst "$RCV_ADDR"
		sleep "$period"
	done > "$1" 2>&1
}

wait_for_capture_start() { # <tcpdump stderr file>
	local i=0
	while [ $i -lt 50 ]; do
		grep -q "listening on" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	say "tcpdump did not report listening within 5 s"
}

# The TCP counters (/proc/net/netstat and snmp, per namespace) of sender and receiver, under
# a "## <ns> <phase>" line each: the ground truth of what the stacks did (receiver drops,
# D-SACKs sent, reordering seen), which summarize.py turns into per-run differences.
save_mib() { # <name> <phase>
	local n
	for n in snd rcv; do
		echo "## $n $2"
		ns "$n" cat /proc/net/netstat /proc/net/snmp
	done >> "/tmp/$1.mib.txt"
}

# One run, tag <name>: every flow of <ccas> ("a" or "a+b": flows started together, each its
# own iperf3 client and server port) through the path at once; one capture of them all.
# Flow i of a multi-flow run writes <name>.f<i>.json/.err/.rc; a single flow <name>.json.
run_one() {
	local ccas="$1" name="$2" dump_pid step_pid="" sample_pid="" cca i=1 flow pids="" pid rc
	shape_path || say "run $name: tc could not reset the path"
	# Started directly (not through the ns function): $! must be tcpdump itself, since a
	# background subshell ignores SIGINT and would not pass a signal on.
	"$IP" netns exec snd "$TCPDUMP" -i veth-s -n -s 128 -U -Z root -w "/tmp/$name.pcap" tcp \
		2> "/tmp/$name.tcpdump.txt" &
	dump_pid=$!
	wait_for_capture_start "/tmp/$name.tcpdump.txt"
	rm -f "/tmp/$name.mib.txt"
	save_mib "$name" before
	say "run $name: iperf3 -C ${ccas} -t $DURATION_S${RATE_STEPS:+, rate steps $RATE_STEPS}"
	for cca in $(echo "$ccas" | tr '+' ' '); do
		flow=$name
		case "$ccas" in *+*) flow="$name.f$i" ;; esac
		# A guard, so that one hung run cannot stop the others nor the dmesg collection.
		timeout "$((DURATION_S + RUN_GRACE_S))" "$IP" netns exec snd \
			"$IPERF3" -c "$RCV_ADDR" -p "$((5200 + i))" -C "$cca" -t "$DURATION_S" -J --get-server-output \
			> "/tmp/$flow.json" 2> "/tmp/$flow.err" &
		pids="$pids $flow:$!"
		i=$((i + 1))
	done
	if [ -n "$RATE_STEPS" ]; then
		step_rates &
		step_pid=$!
	fi
	if [ "${SAMPLE_MS:-0}" -gt 0 ]; then
		rm -f "/tmp/$name.ss.stop"
		sample_sockets "/tmp/$name.ss.txt" "/tmp/$name.ss.stop" &
		sample_pid=$!
	fi
	for pid in $pids; do
		rc=0
		wait "${pid#*:}" || rc=$?
		echo "$rc" > "/tmp/${pid%:*}.rc"
		cp "/tmp/${pid%:*}.json" "/tmp/${pid%:*}.err" "/tmp/${pid%:*}.rc" "$OUT/"
		say "run ${pid%:*}: iperf3 exit $rc"
	done
	[ -z "$step_pid" ] || { kill "$step_pid" 2>/dev/null; wait "$step_pid" 2>/dev/null; }
	if [ -n "$sample_pid" ]; then
		: > "/tmp/$name.ss.stop"
		wait "$sample_pid" 2>/dev/null
		cp "/tmp/$name.ss.txt" "$OUT/"
	fi
	sleep 1  # let tcpdump read the last packets (FIN, final ACKs) before it stops
	save_mib "$name" after
	kill -TERM "$dump_pid" 2>/dev/null
	wait "$dump_pid"
	# Router ground truth: netem drops (random loss + what tbf refused) and tbf drops (queue full).
	ns rtr "$TC" -s qdisc show dev veth-r2 > "$OUT/$name.qdisc.txt"
	cp "/tmp/$name.pcap" "/tmp/$name.tcpdump.txt" "/tmp/$name.mib.txt" "$OUT/"
	rm -f "/tmp/$name.pcap"
}

run_all() {
	local r=1 cca
	while [ "$r" -le "$RUNS" ]; do
		# shellcheck disable=SC2153  # CCAS comes from /etc/vm-test.conf, which vm-test.sh writes
		for cca in $CCAS; do
			run_one "$cca" "$cca-r$r"
		done
		r=$((r + 1))
	done
}

stop_receivers() {
	local pid
	for pid in $SERVER_PIDS; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
}

# Wait until no socket holds the module (refcnt 0), then rmmod; record the outcome.
unload_cca_module() {
	[ -n "$CCA_MODULE" ] || return 0
	local refcnt_file="/sys/module/$CCA_MODULE/refcnt" i=0 refcnt status loaded
	while [ -r "$refcnt_file" ] && [ "$(cat "$refcnt_file")" != 0 ] && [ $i -lt "$IDLE_WAIT_S" ]; do
		sleep 1
		i=$((i + 1))
	done
	refcnt=$(cat "$refcnt_file" 2>/dev/null || echo missing)
	if rmmod "$CCA_MODULE" 2> "$OUT/rmmod.txt"; then
		status=ok
	else
		status=failed
	fi
	loaded=no
	[ -d "/sys/module/$CCA_MODULE" ] && loaded=yes
	echo "rmmod=$status refcnt_before=$refcnt waited_s=$i still_loaded=$loaded" >> "$OUT/rmmod.txt"
	say "rmmod $CCA_MODULE: $status (refcnt before: $refcnt, waited ${i} s)"
}

main() {
	mount_basics
	# shellcheck source=/dev/null
	. /etc/vm-test.conf
	load_kernel_modules
	if ! mount_output; then
		say "cannot mount the 9p output share"
		power_off
	fi
	say "booted $(uname -r)"
	load_cca_module
	cat /proc/sys/net/ipv4/tcp_available_congestion_control > "$OUT/available.txt"
	say "available: $(cat "$OUT/available.txt")"
	build_topology
	if shape_path; then
		start_receivers
		run_all
		stop_receivers
	else
		say "tc setup failed"
		echo "tc setup failed" > "$OUT/setup-failed.txt"
	fi
	unload_cca_module
	dmesg > "$OUT/dmesg.txt"
	echo "done" > "$OUT/guest-done"
	power_off
}

# Tests source this file with GUEST_INIT_SOURCED=1 to call its functions.
[ "${GUEST_INIT_SOURCED:-0}" = 1 ] || main
