package bus

import (
	"net"
	"strings"
	"testing"
)

// Whatever ParseRoutes accepts is a bare nats-route://host:port that
// reads back the same: no credentials, path or query reach nats-server.
func FuzzParseRoutes(f *testing.F) {
	f.Add("nats-route://127.0.0.1:6222")
	f.Add("nats-route://10.0.0.2:6222, nats-route://[::1]:6223/")
	f.Add("nats-route://u:p@h:1")
	f.Add("nats://h:1,,")
	f.Add("nats-route://h:0?x=1#y")
	f.Fuzz(func(t *testing.T, in string) {
		us, err := ParseRoutes(in)
		if err != nil {
			return
		}
		for _, u := range us {
			if u.Scheme != "nats-route" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
				t.Fatalf("ParseRoutes(%q) gave %q", in, u)
			}
			if host, _, err := net.SplitHostPort(u.Host); err != nil || host == "" {
				t.Fatalf("ParseRoutes(%q) gave host %q", in, u.Host)
			}
			back, err := ParseRoutes(u.String())
			if err != nil || len(back) != 1 || back[0].String() != u.String() {
				t.Fatalf("ParseRoutes(%q) = %v, %v; want %q back", u, back, err, u)
			}
			if strings.Contains(u.String(), "@") {
				t.Fatalf("ParseRoutes(%q) kept credentials: %q", in, u)
			}
		}
	})
}
