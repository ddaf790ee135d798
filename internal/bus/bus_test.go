package bus_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/bus"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
)

// MustOpenBus starts an embedded NATS server on a free loopback port and
// closes it when the test ends.
func MustOpenBus(tb testing.TB) *bus.Bus {
	tb.Helper()
	b := bus.New(bus.Config{Addr: "127.0.0.1:0", ReadyTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := b.Open(ctx); err != nil {
		tb.Fatalf("open bus: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			tb.Errorf("close bus: %v", err)
		}
	})
	return b
}

func TestBus_PublishSubscribe(t *testing.T) {
	t.Parallel()
	b := MustOpenBus(t)
	if !b.Running() {
		t.Fatal("got Running() false after Open, want true")
	}
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil {
		t.Fatalf("got Addr %q, want host:port: %v", b.Addr(), err)
	}
	if host != "127.0.0.1" || port == "0" {
		t.Errorf("got Addr %q, want 127.0.0.1 with the bound port", b.Addr())
	}

	nc, err := nats.Connect("nats://"+b.Addr(), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()

	// Outside oclaw.v1.>: only kurad publishes there (TestMain_NATSTokenlessNobodyElsePublishes).
	const subject = "kura.test.ping"
	msgs := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe(subject, msgs)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Unsubscribe()
	// Flush makes the server register the subscription before we publish.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatalf("flush: %v", err)
	}
	testwait.For(t, 5*time.Second, "client", func() bool { return b.NumClients() >= 1 })

	payload := []byte(`{"seq":1,"type":"record.written","project":"test","at":"2025-01-02T03:04:05.000000000Z"}`)
	if err := nc.Publish(subject, payload); err != nil {
		t.Fatalf("publish: %v", err)
	}
	select {
	case m := <-msgs:
		if m.Subject != subject {
			t.Errorf("got subject %q, want %q", m.Subject, subject)
		}
		if string(m.Data) != string(payload) {
			t.Errorf("got payload %s, want %s", m.Data, payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("got no message within 5s, want one")
	}
}

func TestBus_Close(t *testing.T) {
	t.Parallel()
	b := bus.New(bus.Config{Addr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := b.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	addr := b.Addr()
	nc, err := nats.Connect("nats://"+addr, nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()

	if err := b.Close(ctx); err != nil {
		t.Fatalf("first Close: got %v, want nil", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	if b.Running() {
		t.Error("got Running() true after Close, want false")
	}
	if n := b.NumClients(); n != 0 {
		t.Errorf("got NumClients %d after Close, want 0", n)
	}
	if a := b.Addr(); a != "" {
		t.Errorf("got Addr %q after Close, want empty", a)
	}
	testwait.For(t, 5*time.Second, "client disconnect", func() bool { return !nc.IsConnected() })
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("got a connection to %s after Close, want refused", addr)
	}
}

func TestBus_NotOpened(t *testing.T) {
	t.Parallel()
	b := bus.New(bus.Config{Addr: "127.0.0.1:0"})
	if b.Running() {
		t.Error("got Running() true before Open, want false")
	}
	if a := b.Addr(); a != "" {
		t.Errorf("got Addr %q before Open, want empty", a)
	}
	if n := b.NumClients(); n != 0 {
		t.Errorf("got NumClients %d before Open, want 0", n)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("got Close %v before Open, want nil", err)
	}
}

func TestBus_OpenInvalidAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr string
	}{
		{"NoPort", "nope"},
		{"PortTooLarge", "127.0.0.1:99999"},
		{"NegativePort", "127.0.0.1:-2"},
		{"PortNotNumber", "127.0.0.1:http"},
		{"Empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bus.New(bus.Config{Addr: tt.addr})
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := b.Open(ctx)
			if err == nil {
				b.Close(ctx)
				t.Fatalf("got nil error for %q, want one", tt.addr)
			}
			if b.Running() {
				t.Errorf("got Running() true after a failed Open, want false")
			}
		})
	}
}

// TestBus_OpenPortInUse: a NATS address another listener holds fails Open
// at once, naming the address, instead of after the ready timeout.
func TestBus_OpenPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	b := bus.New(bus.Config{Addr: addr, ReadyTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	err = b.Open(ctx)
	took := time.Since(start)
	if err == nil {
		b.Close(ctx)
		t.Fatalf("got nil error on busy %s, want one", addr)
	}
	if took > 2*time.Second {
		t.Errorf("got the error after %s, want it at once (the ready timeout is 10s)", took)
	}
	for _, want := range []string{addr, "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to name %q", err, want)
		}
	}
	if b.Running() {
		t.Error("got Running() true after a failed Open, want false")
	}
	// The listener that held the port is untouched.
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Errorf("the port's holder no longer accepts: %v", err)
	} else {
		c.Close()
	}
}
