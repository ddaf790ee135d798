// Package freeport finds a TCP port on 127.0.0.1 that nothing listens on,
// for a server a test must name before it starts (a kurad its witness
// polls, a PostgreSQL server in its own config).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Get returns a port on 127.0.0.1 that was free a moment ago. It picks
// below the kernel's ephemeral range (ip_local_port_range): a listener on
// port 0 and every outgoing connection take their ports from that range,
// so between the check here and the server's own bind, a port from it can
// go to the next server or client socket of a busy test run. Below it only
// another caller of Get competes, at random over thousands of ports, and
// Get never hands out the same port twice in one process.
func Get() (int, error) {
	lo := ephemeralLow()
	if lo >= 4096 {
		from := lo / 2
		mu.Lock()
		defer mu.Unlock()
		for range 200 {
			p := from + rand.IntN(lo-from)
			if handed[p] {
				continue
			}
			if free(p) {
				handed[p] = true
				return p, nil
			}
		}
	}
	// No room below the range (or every try was taken): let the kernel
	// pick, as tests did before.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Addr is Get as host:port.
func Addr() (string, error) {
	p, err := Get()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

func free(p int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default, 32768, where /proc does not say).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo < 1 || lo > 65535 {
		return 32768
	}
	return lo
}
