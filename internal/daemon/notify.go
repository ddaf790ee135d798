package daemon

import (
	"context"
	"net"
	"os"
	"strconv"
	"time"
)

// Kura speaks systemd's notify protocol itself (one datagram per state on
// the socket named by NOTIFY_SOCKET) rather than taking a dependency for a
// dozen lines: READY=1 once serving, STOPPING=1 on shutdown, WATCHDOG=1 at
// half the WatchdogSec interval while the daemon is healthy.

// sdNotify sends state to the service manager; without NOTIFY_SOCKET it
// does nothing.
func sdNotify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' { // abstract socket namespace
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// watchdogInterval returns how often to ping the watchdog, or 0 when
// systemd asked for none (or asked another process).
func watchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}

// watchdog pings systemd while healthy() holds; a wedged writer or a dead
// NATS server stops the pings and lets systemd restart kurad.
func (m *Main) watchdog(ctx context.Context, every time.Duration, healthy func(context.Context) bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, every)
			ok := healthy(cctx)
			cancel()
			if ok {
				if err := sdNotify("WATCHDOG=1"); err != nil {
					m.Logger.Warn("watchdog notify", "err", err)
				}
			} else {
				m.Logger.Warn("watchdog: unhealthy, not pinging")
			}
		}
	}
}
