package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// An embeddings endpoint inside the bench's process, speaking the OpenAI
// /v1/embeddings protocol (what KURA_EMBEDDER_URL points kurad at). It is
// either a stand-in that computes vectors itself, or a counting proxy in
// front of a real embedder given with -embedder-url. Either way it counts
// what kurad asks for, so a phase can tell when kurad's background worker
// has embedded every node (the requests stop), and it times its own
// handling, so the hybrid latency phase can take the query embedding out
// of a search's time.
//
// The stand-in's vectors are deterministic and dense: every word of the
// text adds a fixed pseudo-random Gaussian vector seeded by the word's
// hash, and the sum is scaled to unit length. Texts sharing words point in
// similar directions, which is all a latency measurement needs; they carry
// no meaning beyond the words, so the recall phases never judge hybrid
// ranking with them.

const (
	standInModel = "kurabench-hash-384"
	standInDims  = 384
)

type embedServer struct {
	ln       net.Listener
	srv      *http.Server
	upstream string // "": stand-in vectors; else the real endpoint proxied
	client   *http.Client
	dims     int

	requests atomic.Int64
	inputs   atomic.Int64
	errors   atomic.Int64
	busy     atomic.Int64 // nanoseconds spent handling requests
	lastEnd  atomic.Int64 // unix nanoseconds the last request ended
	firstErr atomic.Value // string

	mu    sync.Mutex
	words map[string][]float32
}

// startEmbedServer listens on 127.0.0.1 and serves POST .../embeddings.
func startEmbedServer(upstream string) (*embedServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint: %w", err)
	}
	e := &embedServer{ln: ln, upstream: upstream, dims: standInDims, words: map[string][]float32{},
		client: &http.Client{Timeout: 2 * time.Minute}}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// URL is what kurad gets as KURA_EMBEDDER_URL. The endpoint answers any
// path ending in /embeddings, so it works whether kurad takes the URL as
// the endpoint itself or appends /v1/embeddings to it.
func (e *embedServer) URL() string { return "http://" + e.ln.Addr().String() + "/v1/embeddings" }

func (e *embedServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	e.client.CloseIdleConnections()
}

// embedStats is what the endpoint has served so far.
type embedStats struct {
	Requests int64         `json:"requests"`
	Inputs   int64         `json:"inputs"`
	Errors   int64         `json:"errors"`
	Busy     time.Duration `json:"-"`
	LastEnd  time.Time     `json:"-"`
}

func (e *embedServer) stats() embedStats {
	s := embedStats{Requests: e.requests.Load(), Inputs: e.inputs.Load(), Errors: e.errors.Load(), Busy: time.Duration(e.busy.Load())}
	if n := e.lastEnd.Load(); n > 0 {
		s.LastEnd = time.Unix(0, n)
	}
	return s
}

func (e *embedServer) fail(w http.ResponseWriter, status int, msg string) {
	e.errors.Add(1)
	e.firstErr.CompareAndSwap(nil, msg)
	http.Error(w, `{"error":{"message":`+strconv.Quote(msg)+`}}`, status)
}

func (e *embedServer) serve(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	defer func() {
		e.busy.Add(int64(time.Since(t0)))
		e.lastEnd.Store(time.Now().UnixNano())
	}()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/embeddings") {
		e.fail(w, http.StatusNotFound, r.Method+" "+r.URL.Path+": only POST .../embeddings is served")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		e.fail(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	var in struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		e.fail(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	texts, err := embedInputs(in.Input)
	if err != nil {
		e.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	e.requests.Add(1)
	e.inputs.Add(int64(len(texts)))
	if e.upstream != "" {
		e.proxy(w, r, body)
		return
	}
	model := in.Model
	if model == "" {
		model = standInModel
	}
	var buf bytes.Buffer
	buf.Grow(len(texts) * (e.dims*11 + 64))
	buf.WriteString(`{"object":"list","data":[`)
	tokens := 0
	for i, t := range texts {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"object":"embedding","index":`)
		buf.WriteString(strconv.Itoa(i))
		buf.WriteString(`,"embedding":[`)
		v, n := e.vector(t)
		tokens += n
		b := buf.AvailableBuffer()
		for j, x := range v {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(x), 'g', 6, 32)
		}
		buf.Write(b)
		buf.WriteString(`]}`)
	}
	fmt.Fprintf(&buf, `],"model":%s,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`, strconv.Quote(model), tokens, tokens)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// embedInputs reads the input field: one string or a list of strings.
func embedInputs(raw json.RawMessage) ([]string, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("input must be a string or a list of strings")
	}
	return many, nil
}

// proxy forwards the request to the real embedder and its answer back.
func (e *embedServer) proxy(w http.ResponseWriter, r *http.Request, body []byte) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, e.upstream, bytes.NewReader(body))
	if err != nil {
		e.fail(w, http.StatusBadGateway, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.fail(w, http.StatusBadGateway, "embedder: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e.errors.Add(1)
		e.firstErr.CompareAndSwap(nil, fmt.Sprintf("embedder answered HTTP %d", resp.StatusCode))
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// vector is the stand-in's embedding of t and its word count.
func (e *embedServer) vector(t string) ([]float32, int) {
	ws := strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	sum := make([]float64, e.dims)
	if len(ws) == 0 {
		sum[0] = 1
	}
	for _, w := range ws {
		for i, x := range e.wordVector(w) {
			sum[i] += float64(x)
		}
	}
	var norm float64
	for _, x := range sum {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	out := make([]float32, e.dims)
	for i, x := range sum {
		out[i] = float32(x / norm)
	}
	return out, len(ws)
}

func (e *embedServer) wordVector(w string) []float32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.words[w]; ok {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(w))
	r := rand.New(rand.NewPCG(h.Sum64(), 0x6b757261))
	v := make([]float32, e.dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	// A bounded cache: the bench's texts use a few thousand words.
	if len(e.words) < 200_000 {
		e.words[w] = v
	}
	return v
}

// embedProgress is how kurad's background embedding went.
type embedProgress struct {
	Seconds      float64 `json:"seconds"`
	Requests     int64   `json:"requests"`
	Inputs       int64   `json:"inputs"`
	InputsPerSec float64 `json:"inputs_per_s"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
	Complete     bool    `json:"complete"` // inputs reached the node count
}

// errNoEmbedder says the kurad under test never called the endpoint: it
// has no embedder support (today's kurad ignores KURA_EMBEDDER_URL).
var errNoEmbedder = errors.New("kurad made no request to the embeddings endpoint")

// waitEmbedded waits until kurad's background worker has embedded the
// nodes of its data dir: the endpoint has served at least nodes inputs and
// then nothing for a second, or served some and then nothing for quiet
// (kurad may skip texts it embedded before or deduplicate equal texts, so
// the count alone cannot be the signal; short of half the nodes, six times
// quiet). No request within firstWithin of
// the start means kurad has no embedder support: errNoEmbedder.
func (b *bench) waitEmbedded(ctx context.Context, k *kuradProc, e *embedServer, nodes int, firstWithin, quiet, limit time.Duration) (*embedProgress, error) {
	start := time.Now()
	p := &embedProgress{}
	lastLog := start
	for {
		s := e.stats()
		p.Seconds, p.Requests, p.Inputs, p.Errors = round(time.Since(start).Seconds()), s.Requests, s.Inputs, s.Errors
		if el := time.Since(start).Seconds(); el > 0 {
			p.InputsPerSec = round(float64(s.Inputs) / el)
		}
		if v, ok := e.firstErr.Load().(string); ok {
			p.FirstError = v
		}
		// A request counted but not yet ended (its answer can reach the
		// client before the server notes its end) is not idleness.
		var idle time.Duration
		if !s.LastEnd.IsZero() {
			idle = time.Since(s.LastEnd)
		}
		switch {
		case s.Requests == 0 && time.Since(start) > firstWithin:
			return p, errNoEmbedder
		case s.Requests > 0 && s.Inputs >= int64(nodes) && idle > time.Second:
			p.Complete = true
			return p, nil
		case s.Requests > 0 && idle > quiet && (s.Inputs >= int64(nodes)/2 || idle > 6*quiet):
			// Short of half the nodes, a pause may be the worker's own
			// (a batch interval): it gets six times as long.
			return p, nil
		case time.Since(start) > limit:
			return p, fmt.Errorf("kurad was still embedding after %s: %d of %d inputs", limit, s.Inputs, nodes)
		}
		if err := k.alive(); err != nil {
			return p, err
		}
		if time.Since(lastLog) > 10*time.Second {
			b.logf("embedding: %s of %s inputs in %d requests, %.0f s", thousands(float64(s.Inputs)), thousands(float64(nodes)), s.Requests, time.Since(start).Seconds())
			lastLog = time.Now()
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return p, err
		}
	}
}

// infoMentions reports whether a key of kurad's /v1/info, at any depth,
// contains word: how the bench tells a kurad that knows about embedders
// from one that does not, without depending on the exact field.
func infoMentions(v any, word string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			if strings.Contains(strings.ToLower(k), word) || infoMentions(y, word) {
				return true
			}
		}
	case []any:
		for _, y := range x {
			if infoMentions(y, word) {
				return true
			}
		}
	}
	return false
}
