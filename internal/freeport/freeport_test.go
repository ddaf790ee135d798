package freeport

import (
	"fmt"
	"net"
	"testing"
)

// TestGet checks the ports are free, distinct and, where the kernel leaves
// room below its ephemeral range, below it: no listener on port 0 and no
// client socket can take them between Get and the server's bind.
func TestGet(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if lo >= 4096 && (p < lo/2 || p >= lo) {
			t.Errorf("port %d outside [%d, %d): inside the ephemeral range or too low", p, lo/2, lo)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
}

// TestGet_SkipsATakenPort holds a port open and checks Get never returns it.
func TestGet_SkipsATakenPort(t *testing.T) {
	lo := ephemeralLow()
	if lo < 4096 {
		t.Skip("no room below the ephemeral range")
	}
	// Take most of the range Get picks from, so it must meet taken ports.
	var held []net.Listener
	taken := map[int]bool{}
	for p := lo / 2; p < lo && len(held) < 1000; p += 2 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		held = append(held, ln)
		taken[p] = true
	}
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 100 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if taken[p] {
			t.Fatalf("Get returned port %d, which a listener holds", p)
		}
	}
}
