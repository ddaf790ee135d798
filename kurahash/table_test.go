package kurahash_test

import (
	"strings"
	"testing"

	"github.com/kura-memory/kura/kurahash"
)

func TestDecodeHash(t *testing.T) {
	t.Parallel()
	valid := strings.Repeat("ab", 32)
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"Valid", valid, true},
		{"Uppercase", strings.ToUpper(valid), true},
		{"Empty", "", false},
		{"Short", valid[:62], false},
		{"Long", valid + "ab", false},
		{"OddLength", valid[:63], false},
		{"NotHex", "zz" + valid[2:], false},
		{"Prefixed", "sha256:" + valid[7:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kurahash.DecodeHash(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("got err %v, want ok %v", err, tt.ok)
			}
			if tt.ok && (got[0] != 0xab || got[31] != 0xab) {
				t.Errorf("got %x, want 32 bytes of ab", got)
			}
		})
	}
}

func TestSigningMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"Head", kurahash.HeadSigningMessage("ses_1", 7, "h"), "kura-head-v1\nses_1\n7\nh"},
		{"HeadSeqZero", kurahash.HeadSigningMessage("ses_1", 0, "h"), "kura-head-v1\nses_1\n0\nh"},
		{"Ledger", kurahash.LedgerSigningMessage("h"), "kura-ledger-sig-v1\nh"},
		{"HeadLargeSeq", kurahash.HeadSigningMessage("s", 1<<53, "h"), "kura-head-v1\ns\n9007199254740992\nh"},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
