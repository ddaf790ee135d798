package embed

import (
	"encoding/json"
	"testing"
)

// FuzzVectors feeds arbitrary answers to the answer check: whatever it
// accepts is one vector per text, in order, all of one dimension count.
func FuzzVectors(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}`), uint8(2))
	f.Add([]byte(`{"data":[{"embedding":[0.5]}]}`), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		var r response
		if json.Unmarshal(body, &r) != nil {
			return
		}
		vs, err := vectors(&r, int(n))
		if err != nil {
			return
		}
		if len(vs) != int(n) {
			t.Fatalf("%d vectors for %d texts", len(vs), n)
		}
		for _, v := range vs {
			if len(v) == 0 || len(v) != len(vs[0]) {
				t.Fatalf("vector of %d dimensions beside %d", len(v), len(vs[0]))
			}
		}
	})
}
