#!/usr/bin/env bash
# Smoke-tests the Raspberry Pi builds under qemu-user: for each of arm64 and
# armv7, start that architecture's kurad on a temp dir, write and read a
# record with that architecture's kura, build and verify a ledger, then stop
# kurad with SIGTERM and expect a clean exit. Usage: smoke-qemu.sh BINDIR
# (BINDIR holds linux-arm64/ and linux-armv7/ as `make cross` writes them).
set -euo pipefail
bindir=${1:?usage: smoke-qemu.sh BINDIR}

run_arch() {
	local arch=$1 qemu=$2 dir=$bindir/linux-$1
	command -v "$qemu" >/dev/null || { echo "smoke: $qemu not installed (apt-get install qemu-user-static)"; return 1; }
	local data; data=$(mktemp -d)
	local log=$data/kurad.log
	"$qemu" "$dir/kurad" --data-dir "$data/db" --http-addr 127.0.0.1:0 --nats-addr 127.0.0.1:0 >"$log" 2>&1 &
	local pid=$!
	# Under emulation start-up is slow; bound the wait, never loop forever.
	local addr=""
	for _ in $(seq 1 300); do
		if [ -s "$data/db/kurad.addr" ]; then
			addr=$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' "$data/db/kurad.addr")
			[ -n "$addr" ] && break
		fi
		kill -0 "$pid" 2>/dev/null || { echo "smoke $arch: kurad exited during start"; cat "$log"; return 1; }
		sleep 0.2
	done
	[ -n "$addr" ] || { echo "smoke $arch: kurad not ready in 60s"; cat "$log"; kill "$pid"; return 1; }
	export KURA_URL="http://$addr"
	local kura=("$qemu" "$dir/kura")
	local rec; rec=$("${kura[@]}" put --type agent.thought --author agent:smoke --content "{\"arch\":\"$arch\"}" --json)
	local id; id=$(printf '%s' "$rec" | sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' | head -n1)
	[ -n "$id" ] || { echo "smoke $arch: no record id in: $rec"; kill "$pid"; return 1; }
	"${kura[@]}" show "$id" | grep -q "$arch" || { echo "smoke $arch: record $id does not read back"; kill "$pid"; return 1; }
	local led; led=$(curl -fsS -X POST "$KURA_URL/v1/ledgers" -H 'Content-Type: application/json' \
		-d "{\"label\":\"smoke-$arch\",\"record_ids\":[\"$id\"]}")
	local lid; lid=$(printf '%s' "$led" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
	[ -n "$lid" ] || { echo "smoke $arch: no ledger id in: $led"; kill "$pid"; return 1; }
	"${kura[@]}" verify "$lid" >/dev/null || { echo "smoke $arch: ledger $lid does not verify"; kill "$pid"; return 1; }
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { echo "smoke $arch: kurad exit $rc after SIGTERM"; cat "$log"; return 1; }
	rm -rf "$data"
	echo "smoke $arch: ok (record $id, ledger $lid verified, clean stop)"
}

run_arch arm64 qemu-aarch64-static
run_arch armv7 qemu-arm-static
