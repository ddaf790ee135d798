package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/bus"
	"golang.org/x/crypto/bcrypt"
)

func TestNATSUserNew(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--json", "nats-user", "new", "bmo-worker", "hashi,mikado"}, nil, &out, &errOut, func(string) string { return "" })
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct{ User, Password, Line string }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if len(got.Password) < 32 || strings.Contains(got.Line, got.Password) {
		t.Fatalf("password %q, line %q: want a long password that the line does not hold", got.Password, got.Line)
	}
	// The line is what kurad reads, and it checks the password.
	users, err := bus.ParseUsers(strings.NewReader(got.Line + "\n"))
	if err != nil || len(users) != 1 {
		t.Fatalf("kurad would refuse the printed line %q: %v", got.Line, err)
	}
	u := users[0]
	if u.Name != "bmo-worker" || strings.Join(u.Projects, ",") != "hashi,mikado" {
		t.Errorf("parsed %+v", u)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(got.Password)); err != nil {
		t.Errorf("the hash does not match the password: %v", err)
	}
	for _, args := range [][]string{{"nats-user", "new"}, {"nats-user", "new", "bad:name"}, {"nats-user", "new", "a", "Bad"}, {"nats-user", "new", "kurad-internal"}} {
		out.Reset()
		errOut.Reset()
		if code := run(context.Background(), args, nil, &out, &errOut, func(string) string { return "" }); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut.String())
		}
	}
}
