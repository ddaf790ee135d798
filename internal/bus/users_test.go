package bus

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

// A cost-4 hash of "pw", fixed so the seed corpus and tables stay stable.
const testHash = "$2a$04$XocC8tFfxsnLEK.DOEcW9urpVD2pPlsTvvhBEQWF7Wpdn8OB2Z.Au"

// A public user nkey (not secret; its seed is not kept anywhere).
const testNkey = "UCIU36N73D4WNH7Y2QD3BEEFRN572MQA3D75DM36RSKKBVPCKEVNIAQC"

func TestParseUsers(t *testing.T) {
	t.Parallel()
	if !nkeys.IsValidPublicUserKey(testNkey) {
		t.Fatal("testNkey is not a valid public user key")
	}
	if err := bcrypt.CompareHashAndPassword([]byte(testHash), []byte("pw")); err != nil {
		t.Fatalf("testHash: %v", err)
	}
	tests := []struct {
		name    string
		in      string
		want    []User
		wantErr string
	}{
		{"Empty", "", nil, ""},
		{"CommentsAndBlanks", "# users\n\n   \n# more\n", nil, ""},
		{"PasswordUser", "alice " + testHash + " alpha,beta\n", []User{{Name: "alice", PasswordHash: testHash, Projects: []string{"alpha", "beta"}, Line: 1}}, ""},
		{"AllProjects", "ops " + testHash + " *", []User{{Name: "ops", PasswordHash: testHash, Line: 1}}, ""},
		{"Nkey", "\n" + testNkey + " - beta", []User{{Nkey: testNkey, Projects: []string{"beta"}, Line: 2}}, ""},
		{"DuplicateProjectFolded", "a " + testHash + " x,x", []User{{Name: "a", PasswordHash: testHash, Projects: []string{"x"}, Line: 1}}, ""},
		{"TabsSeparate", "a\t" + testHash + "\tx", []User{{Name: "a", PasswordHash: testHash, Projects: []string{"x"}, Line: 1}}, ""},
		{"PlainPassword", "alice hunter2 alpha", nil, "bcrypt"},
		{"TwoFields", "alice " + testHash, nil, "fields"},
		{"FourFields", "alice " + testHash + " a b", nil, "fields"},
		{"NkeyWithHash", testNkey + " " + testHash + " a", nil, "nkey user takes -"},
		{"SeedNotPublic", "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4 - a", nil, "not a public user nkey"},
		{"BadName", "al:ice " + testHash + " a", nil, "not a user name"},
		{"ReservedName", internalUser + " " + testHash + " a", nil, "not a user name"},
		{"BadProject", "alice " + testHash + " Alpha", nil, "project slug"},
		{"EmptyProject", "alice " + testHash + " a,,b", nil, "project slug"},
		{"WildcardProject", "alice " + testHash + " a.>", nil, "project slug"},
		{"StarInList", "alice " + testHash + " a,*", nil, "project slug"},
		{"Duplicate", "alice " + testHash + " a\nalice " + testHash + " b", nil, "line 2: alice is already defined on line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUsers(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUser_Permissions(t *testing.T) {
	t.Parallel()
	u := User{Name: "a", Projects: []string{"alpha", "beta"}}
	p := u.Permissions()
	if !slices.Equal(p.Subscribe.Allow, []string{"oclaw.v1.alpha.>", "oclaw.v1.beta.>"}) {
		t.Errorf("subscribe allow %v", p.Subscribe.Allow)
	}
	if len(p.Publish.Allow) != 0 || !slices.Equal(p.Publish.Deny, []string{">"}) {
		t.Errorf("publish %+v, want everything denied", p.Publish)
	}
	if all := (User{Name: "o"}).Permissions(); !slices.Equal(all.Subscribe.Allow, []string{"oclaw.v1.>"}) {
		t.Errorf("* user subscribe allow %v", all.Subscribe.Allow)
	}
}

// FuzzParseUsers: the parser never panics; what it accepts is well formed
// (a valid name with a bcrypt hash or an nkey, slug projects confined to
// their own subject tree) and formats back to a file that parses the same.
func FuzzParseUsers(f *testing.F) {
	f.Add("alice " + testHash + " alpha,beta\n")
	f.Add(testNkey + " - *\n# c\n")
	f.Add("a b c\n")
	f.Add("alice hunter2 x")
	f.Fuzz(func(t *testing.T, in string) {
		us, err := ParseUsers(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		for _, u := range us {
			if (u.Nkey == "") == (u.Name == "") {
				t.Fatalf("user %+v is neither or both of name and nkey", u)
			}
			if u.Name != "" && (!ValidUserName(u.Name) || !strings.HasPrefix(u.PasswordHash, "$2")) {
				t.Fatalf("accepted name %q / hash %q", u.Name, u.PasswordHash)
			}
			if u.Nkey != "" && (!nkeys.IsValidPublicUserKey(u.Nkey) || u.PasswordHash != "") {
				t.Fatalf("accepted nkey %+v", u)
			}
			for _, p := range u.Projects {
				if !kura.ValidSlug(p) {
					t.Fatalf("accepted project %q", p)
				}
			}
			for _, s := range u.Subjects() {
				if strings.Count(s, ">") != 1 || strings.Contains(s, "*") || !strings.HasPrefix(s, SubjectRoot+".") {
					t.Fatalf("subject %q reaches beyond a project tree", s)
				}
			}
			pw, projects := u.PasswordHash, "*"
			if u.Nkey != "" {
				pw = "-"
			}
			if u.Projects != nil {
				projects = strings.Join(u.Projects, ",")
			}
			fmt.Fprintf(&buf, "%s %s %s\n", u.Identity(), pw, projects)
		}
		again, err := ParseUsers(&buf)
		if err != nil {
			t.Fatalf("formatted users do not parse: %v\n%s", err, buf.String())
		}
		if len(again) != len(us) {
			t.Fatalf("round trip: %d users, want %d", len(again), len(us))
		}
		for i := range us {
			a, b := us[i], again[i]
			if a.Identity() != b.Identity() || a.PasswordHash != b.PasswordHash || !slices.Equal(a.Projects, b.Projects) || (a.Projects == nil) != (b.Projects == nil) {
				t.Fatalf("round trip: %+v became %+v", a, b)
			}
		}
	})
}
