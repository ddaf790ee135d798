# shellcheck shell=bash
# apt-get-wait.sh defines apt_get, for bash scripts to source (.ci/run does).
#
# apt_get runs apt-get, waiting up to 10 minutes for another apt or dpkg
# (unattended-upgrades, a provisioning script) to let go of its lock rather
# than failing at once. DPkg::Lock::Timeout covers dpkg's lock (install);
# apt-get update takes the package lists' lock, which that option does not
# cover in apt 2.6, so a busy lists lock is retried here, every 5 seconds.
# Any other failure fails at once. apt-get's output is shown only when it
# fails.
#
# KURA_APT_LOCK_WAIT (seconds, default 600) and KURA_APT_LOCK_RETRY
# (seconds between tries, default 5) change the waiting; the tests
# (scripts/aptget_test.go) shorten both.
apt_get() {
	local wait=${KURA_APT_LOCK_WAIT:-600} retry=${KURA_APT_LOCK_RETRY:-5}
	local deadline=$((SECONDS + wait)) out
	while :; do
		if out=$(LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" "$@" 2>&1); then
			return 0
		fi
		if [[ $out != *"Could not get lock"* ]] || ((SECONDS >= deadline)); then
			printf '%s\n' "$out" >&2
			return 1
		fi
		echo "apt-get $1: another apt or dpkg holds the lock; waiting" >&2
		sleep "$retry"
	done
}
