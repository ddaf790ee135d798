// Package embedtest runs a small stand-in for an OpenAI-compatible
// embeddings server inside a test: deterministic vectors from a hashed bag
// of words, with a synonym map so that texts sharing no word can still be
// near. It can be taken down and brought back, and it counts what it was
// asked, so tests can see what kurad embedded and when.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// Synonyms map words to the concept they share with others: "automobile"
// and "car" land on the same dimension. Tests pick queries from here that
// share no word with the text they should find.
var Synonyms = map[string]string{
	"automobile": "car", "vehicle": "car", "cars": "car",
	"servicing": "maintenance", "repair": "maintenance", "upkeep": "maintenance",
	"physician": "doctor", "medic": "doctor",
	"canine": "dog", "puppy": "dog", "hound": "dog",
	"payment": "billing", "invoice": "billing", "invoices": "billing",
	"rollout": "deploy", "release": "deploy", "ship": "deploy",
}

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	Dims  int
	Token string // when set, requests must carry it as a bearer token

	mu     sync.Mutex
	down   bool
	refuse func(text string) bool
	inputs []string // every text embedded, in order
	calls  int
}

// Start runs a stand-in with vectors of dims dimensions, stopped when the
// test ends.
func Start(tb testing.TB, dims int) *Server {
	tb.Helper()
	s := &Server{Dims: dims}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// SetDown makes the server answer 503 to everything (true) or serve again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// SetRefuse makes the server answer 500 to any request holding a text
// refuse is true for (as llama.cpp answers a text longer than it can
// take); nil takes everything again.
func (s *Server) SetRefuse(refuse func(text string) bool) {
	s.mu.Lock()
	s.refuse = refuse
	s.mu.Unlock()
}

// Inputs returns every text embedded so far, in order.
func (s *Server) Inputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.inputs...)
}

// Count is how many times text was embedded.
func (s *Server) Count(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.inputs {
		if t == text {
			n++
		}
	}
	return n
}

// Calls is the number of requests answered with vectors.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg}})
	}
	s.mu.Lock()
	down, refuse := s.down, s.refuse
	s.mu.Unlock()
	switch {
	case down:
		fail(http.StatusServiceUnavailable, "stand-in is down")
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings":
		fail(http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		return
	case s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token:
		fail(http.StatusUnauthorized, "bad token")
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
		fail(http.StatusBadRequest, "want {model, input:[...]}")
		return
	}
	for _, t := range req.Input {
		if refuse != nil && refuse(t) {
			// Some servers quote what they refuse: the error must not
			// carry it to where other readers see it.
			fail(http.StatusInternalServerError, "input is too large to process: "+t)
			return
		}
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	for i, t := range req.Input {
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: Vector(req.Model, t, s.Dims)})
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, req.Input...)
	s.calls++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// Vector is the stand-in's embedding of text under model: each word (its
// synonym's concept, if it has one) adds ±1 to a dimension picked by a
// hash of the model and the word, and the sum is normalised. Another model
// gives other vectors for the same text.
func Vector(model, text string, dims int) []float32 {
	v := make([]float64, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if c, ok := Synonyms[w]; ok {
			w = c
		}
		h := fnv.New64a()
		h.Write([]byte(model + "\x00" + w))
		x := h.Sum64()
		sign := 1.0
		if x&1 == 1 {
			sign = -1
		}
		v[(x>>1)%uint64(dims)] += sign
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		out[0] = 1 // no words: some fixed direction, never a zero vector
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}
