package kura_test

import (
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestCheckNodeRewrite(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	a := kura.Writer{Identity: "agent:a"}
	tests := []struct {
		name  string
		owner *string
		w     kura.Writer
		allow bool
	}{
		{"no owner: not a writer", nil, a, false},
		{"empty owner: not a writer", str(""), a, false},
		{"no owner: an admin", nil, kura.Writer{Identity: "user:root", Admin: true}, true},
		{"no owner: the tokenless local user", nil, kura.Writer{Identity: "user:local", Admin: true}, true},
		{"no owner: an unknown caller", nil, kura.Writer{}, false},
		{"the owner", str("agent:a"), a, true},
		{"another identity", str("agent:b"), a, false},
		{"an admin", str("agent:b"), kura.Writer{Identity: "user:root", Admin: true}, true},
		{"the tokenless local user", str("agent:b"), kura.Writer{Identity: "user:local", Admin: true}, true},
		{"an unknown caller", str("agent:b"), kura.Writer{}, false},
		{"no prefix match", str("agent:ab"), a, false},
		{"case matters", str("agent:A"), a, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := kura.CheckNodeRewrite("fact:f", tc.owner, tc.w)
			if tc.allow {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			if !kura.IsCode(err, kura.EDenied) {
				t.Fatalf("got %v, want permission_denied", err)
			}
			owner := ""
			if tc.owner != nil {
				owner = *tc.owner
			}
			d := err.(*kura.Error).Details
			if got, _ := d["owner"].(string); got != owner || d["ref"] != "fact:f" {
				t.Errorf("got details %v, want owner %q and ref fact:f", d, owner)
			}
		})
	}
}

func TestCheckLeaseHolder(t *testing.T) {
	t.Parallel()
	worker := "agent:a"
	tests := []struct {
		name  string
		turn  kura.Turn
		w     kura.Writer
		allow bool
	}{
		{"unclaimed: any writer of the project", kura.Turn{ID: "t"}, kura.Writer{Identity: "agent:b"}, true},
		{"claimed: its worker", kura.Turn{ID: "t", Epoch: 2, Worker: &worker}, kura.Writer{Identity: "agent:a"}, true},
		{"claimed: another identity", kura.Turn{ID: "t", Epoch: 2, Worker: &worker}, kura.Writer{Identity: "agent:b"}, false},
		{"claimed: an admin", kura.Turn{ID: "t", Epoch: 2, Worker: &worker}, kura.Writer{Identity: "user:root", Admin: true}, true},
		{"claimed: an unknown caller", kura.Turn{ID: "t", Epoch: 2, Worker: &worker}, kura.Writer{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := kura.CheckLeaseHolder(&tc.turn, tc.w)
			if tc.allow != (err == nil) {
				t.Fatalf("got %v, want allowed=%v", err, tc.allow)
			}
			if !tc.allow && !kura.IsCode(err, kura.EDenied) {
				t.Fatalf("got %v, want permission_denied", err)
			}
		})
	}
}
