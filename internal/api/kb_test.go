package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

const kbPath = "/v1/kb/knowledge"

// raw sends a request and returns the answer as it came, headers included;
// the lookup answers text, which do would refuse.
func (c *apiClient) raw(method, path, body string, header map[string]string) (int, http.Header, []byte) {
	c.tb.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (c *apiClient) mustKB(method, path, body string, want int) []byte {
	c.tb.Helper()
	st, _, b := c.raw(method, path, body, nil)
	if st != want {
		c.tb.Fatalf("%s %s: status %d, want %d: %s", method, path, st, want, b)
	}
	return b
}

// kbState is everything a knowledge-base write could change: the daemon's
// counts and last event seq, and every entry and the stats of the scopes
// the tests use.
func (c *apiClient) kbState(scopes ...string) string {
	c.tb.Helper()
	var b strings.Builder
	b.WriteString(c.state())
	for _, s := range scopes {
		b.Write(c.mustGet(kbPath + "/entries?limit=1000&scope=" + s))
		b.Write(c.mustGet(kbPath + "/stats?limit=1000&scope=" + s))
	}
	return b.String()
}

func entryBody(in kura.KBEntryInput) string {
	b, _ := json.Marshal(in)
	return string(b)
}

// queryString is the HTTP form of a query: repeated any_keys and all_keys
// values, so keys holding commas survive.
func queryString(q kura.KBQuery) string {
	v := url.Values{}
	if q.Identifier != nil {
		v.Set("identifier", *q.Identifier)
	}
	if q.Key != nil {
		v.Set("key", *q.Key)
	}
	for _, k := range q.AnyKeys {
		v.Add("any_keys", k)
	}
	for _, k := range q.AllKeys {
		v.Add("all_keys", k)
	}
	if q.Scope != "" {
		v.Set("scope", q.Scope)
	}
	return v.Encode()
}

func entryIdents(p kura.KBPage) []string {
	out := []string{}
	for _, e := range p.Entries {
		out = append(out, e.Identifier)
	}
	return out
}

func specSeed(c *apiClient) {
	c.tb.Helper()
	for _, in := range kbtest.Entries {
		c.mustKB("PUT", kbPath+"/entries", entryBody(in), 201)
	}
}

func TestKB_SpecExamplesOverHTTP(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	specSeed(c)
	for _, ex := range kbtest.Examples {
		t.Run(ex.Name, func(t *testing.T) {
			p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?"+queryString(ex.Query)))
			var want []string
			for _, i := range ex.Want {
				want = append(want, kbtest.Entries[i].Identifier)
			}
			if got := entryIdents(p); !slices.Equal(got, append([]string{}, want...)) || p.Count != len(want) {
				t.Errorf("got %q (count %d), want %q", got, p.Count, want)
			}
		})
	}
	// any_keys and all_keys given once are comma-separated lists.
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"any_keys=Dex,Lending", 2}, {"any_keys=Solana,Polygon", 0}, {"all_keys=Dex,Lending", 0},
		{"all_keys=Ethereum,Contract%20Address", 2}, {"all_keys=AAVE,Lending", 1},
		{"identifier=contract&key=dex", 1}, {"identifier=%3F%21", 2}, {"identifier=", 2}, {"", 2},
		{"exact_identifier=" + url.QueryEscape(kbtest.AAVE.Identifier), 1},
		{"exact_identifier=" + url.QueryEscape(strings.ToLower(kbtest.AAVE.Identifier)), 0},
	} {
		p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?"+tc.query))
		if p.Count != tc.want || len(p.Entries) != tc.want {
			t.Errorf("%s: got %q (count %d), want %d", tc.query, entryIdents(p), p.Count, tc.want)
		}
	}

	uni := "--- Uniswap contract addresses on Ethereum mainnet. ---\nPool: 0x12312313, Router: 0x456456456, Factory: 0x789789789\n\n"
	aave := "--- AAVE contract addresses on Ethereum mainnet. ---\nPool: 0x756745, MoneyMarket: 0x7890789, FlashLoan: 0xabc123\n\n"
	for _, tc := range []struct{ q, want string }{
		{"Uniswap", uni},
		{"contract addresses", uni + aave},
		{"AAVE Ethereum", aave},
		{"Solana", "No knowledge found for: Solana"},
		{"Dex contracts", uni}, // no identifier word; a key
		{"Money market contracts", aave},
	} {
		st, h, b := c.raw("GET", kbPath+"/lookup?q="+url.QueryEscape(tc.q), "", nil)
		if st != 200 || string(b) != tc.want || h.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("lookup %q: got %d %q (%s), want %q as text/plain", tc.q, st, b, h.Get("Content-Type"), tc.want)
		}
	}
	st, _, b := c.raw("GET", kbPath+"/lookup?q=ethereum&limit=1", "", nil)
	if st != 200 || string(b) != uni+"(1 more entry matches; ask a narrower question to see it)\n" {
		t.Errorf("limited lookup: %d %q", st, b)
	}
	st, _, b = c.raw("GET", "/v1/kb/empty/lookup?q=anything&scope=nft", "", nil)
	if st != 200 || string(b) != "No knowledge found for: anything" {
		t.Errorf("lookup in an empty knowledge base: %d %q", st, b)
	}
}

// TestKB_RankedOverHTTP: a question in a model's own words, over HTTP:
// GET .../search ranks JSON with scores and reasons, the default lookup
// puts the strict matches first and the ranked entries after them, and
// mode=strict answers as the spec's tool bridge does.
func TestKB_RankedOverHTTP(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	specSeed(c)
	v3 := kura.KBEntryInput{Identifier: "Uniswap V3 router contract addresses", Keys: []string{"Uniswap", "Router"}, Value: "SwapRouter02: 0x68b3"}
	c.mustKB("PUT", kbPath+"/entries", entryBody(v3), 201)
	c.mustKB("PUT", kbPath+"/entries", `{"scope":"nft","identifier":"Uniswap router NFTs","value":"x"}`, 201)

	p := decode[kura.KBSearchPage](t, c.mustGet(kbPath+"/search?q="+url.QueryEscape("what is the uniswap router address")))
	if len(p.Entries) != 3 || p.Entries[0].Identifier != v3.Identifier || p.Entries[1].Identifier != kbtest.Uniswap.Identifier {
		t.Fatalf("search: got %+v", p)
	}
	top := p.Entries[0]
	if !(top.Score > p.Entries[1].Score && p.Entries[1].Score > p.Entries[2].Score) || top.ID == "" || top.Version != 1 || !slices.Equal(top.Keys, v3.Keys) {
		t.Errorf("search hit: %+v", top)
	}
	if want := []kura.SearchReason{{Code: "identifier_match", Detail: "uniswap, router, address (addresses)"}, {Code: "key_match", Detail: "uniswap, router"}}; !slices.Equal(top.Reasons, want) {
		t.Errorf("reasons: got %+v, want %+v", top.Reasons, want)
	}
	// The JSON holds the entry's fields beside score and reasons.
	_, m, _ := c.get(kbPath + "/search?q=uniswop&limit=1")
	es, _ := m["entries"].([]any)
	if len(es) != 1 {
		t.Fatalf("typo search: %v", m)
	}
	hit := es[0].(map[string]any)
	for _, k := range []string{"id", "scope", "identifier", "keys", "value", "version", "created_at", "updated_at", "score", "reasons"} {
		if _, ok := hit[k]; !ok {
			t.Errorf("search hit lacks %s: %v", k, hit)
		}
	}
	if rs := hit["reasons"].([]any); rs[len(rs)-1].(map[string]any)["code"] != "typo_match" || rs[len(rs)-1].(map[string]any)["detail"] != "uniswop ~ uniswap" {
		t.Errorf("typo reasons: %v", rs)
	}
	if p := decode[kura.KBSearchPage](t, c.mustGet(kbPath+"/search?q=solana")); p.Entries == nil || len(p.Entries) != 0 {
		t.Errorf("search for nothing: %+v", p)
	}
	if p := decode[kura.KBSearchPage](t, c.mustGet(kbPath+"/search?q=uniswap&scope=nft")); len(p.Entries) != 1 || p.Entries[0].Scope != "nft" {
		t.Errorf("search in scope nft: %+v", p)
	}

	block := func(in kura.KBEntryInput) string { return "--- " + in.Identifier + " ---\n" + in.Value + "\n\n" }
	for _, tc := range []struct {
		q, mode, want   string
		matches, ranked string
	}{
		{"what is the uniswap router address", "", kb.RankedOnly + block(v3) + block(kbtest.Uniswap), "0", "2"},
		{"what is the uniswap router address", "strict", "No knowledge found for: what is the uniswap router address", "0", "0"},
		{"Uniswap router", "", block(v3) + kb.RankedAfterStrict + block(kbtest.Uniswap), "1", "1"},
		{"Uniswap router", "ranked", block(v3) + kb.RankedAfterStrict + block(kbtest.Uniswap), "1", "1"},
		{"Uniswap router", "strict", block(v3), "1", "0"},
		{"Solana", "", "No knowledge found for: Solana", "0", "0"},
	} {
		path := kbPath + "/lookup?q=" + url.QueryEscape(tc.q)
		if tc.mode != "" {
			path += "&mode=" + tc.mode
		}
		st, h, b := c.raw("GET", path, "", nil)
		if st != 200 || string(b) != tc.want || h.Get("X-Kura-Matches") != tc.matches || h.Get("X-Kura-Ranked") != tc.ranked {
			t.Errorf("lookup %q mode %q: got %d %q (matches %s, ranked %s), want %q (%s, %s)", tc.q, tc.mode, st, b,
				h.Get("X-Kura-Matches"), h.Get("X-Kura-Ranked"), tc.want, tc.matches, tc.ranked)
		}
	}
}

func TestKB_StatusCodes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	e := decode[kura.KBEntry](t, c.mustKB("PUT", kbPath+"/entries", `{"identifier":"Uniswap pools","keys":["Uniswap","DEX"],"value":"Pool: 0x123"}`, 201))
	if !kura.ValidID(e.ID) || e.Scope != "" || e.Version != 1 || e.Identifier != "Uniswap pools" || !slices.Equal(e.Keys, []string{"Uniswap", "DEX"}) ||
		e.CreatedAt == "" || e.UpdatedAt != e.CreatedAt {
		t.Fatalf("new entry: %+v", e)
	}
	r := decode[kura.KBEntry](t, c.mustKB("PUT", kbPath+"/entries", `{"identifier":"Uniswap pools","keys":[],"value":"Pool: 0x456"}`, 200))
	if r.ID != e.ID || r.Version != 2 || r.CreatedAt != e.CreatedAt || len(r.Keys) != 0 || r.Keys == nil {
		t.Fatalf("replaced entry: %+v", r)
	}
	// keys left out: an entry without keys, served as [].
	n := decode[kura.KBEntry](t, c.mustKB("PUT", kbPath+"/entries", `{"scope":"nft","identifier":"OpenSea","value":"x"}`, 201))
	if n.Scope != "nft" || n.Keys == nil {
		t.Fatalf("entry in a scope: %+v", n)
	}
	b := decode[kura.KBBatch](t, c.mustKB("PUT", kbPath+"/entries/batch", `{"entries":[{"identifier":"Uniswap pools","value":"v3"},{"identifier":"AAVE","keys":["Lending"],"value":"a"}]}`, 200))
	if b.Created != 1 || b.Replaced != 1 || len(b.Entries) != 2 || b.Entries[0].Version != 3 {
		t.Fatalf("batch: %+v", b)
	}
	p := decode[kura.KBEntry](t, c.mustKB("PATCH", kbPath+"/entries", `{"identifier":"AAVE","keys":["Lending","AAVE"]}`, 200))
	if p.Version != 2 || p.Value != "a" || !slices.Equal(p.Keys, []string{"Lending", "AAVE"}) {
		t.Fatalf("patch keys: %+v", p)
	}
	p = decode[kura.KBEntry](t, c.mustKB("PATCH", kbPath+"/entries", `{"identifier":"AAVE","value":"b","keys":null}`, 200))
	if p.Version != 3 || p.Value != "b" || len(p.Keys) != 2 {
		t.Fatalf("patch value: %+v", p)
	}
	c.mustKB("PATCH", kbPath+"/entries", `{"identifier":"aave","value":"c"}`, 404)
	c.mustKB("PATCH", kbPath+"/entries", `{"scope":"nft","identifier":"AAVE","value":"c"}`, 404)

	page := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries"))
	if page.Count != 2 || !slices.Equal(entryIdents(page), []string{"Uniswap pools", "AAVE"}) || page.NextCursor != "" {
		t.Fatalf("list: %+v", page)
	}
	st := decode[kura.KBStats](t, c.mustGet(kbPath+"/stats?scope=nft"))
	if st.Count != 1 || !slices.Equal(st.Identifiers, []string{"OpenSea"}) {
		t.Fatalf("stats: %+v", st)
	}

	d := decode[kura.KBDeleted](t, c.mustKB("DELETE", kbPath+"/entries?identifier="+url.QueryEscape("Uniswap pools"), "", 200))
	if d.Deleted != 1 {
		t.Fatalf("delete: %+v", d)
	}
	c.mustKB("DELETE", kbPath+"/entries?identifier="+url.QueryEscape("Uniswap pools"), "", 404)
	h := decode[kura.KBHistory](t, c.mustGet(kbPath+"/history?identifier="+url.QueryEscape("Uniswap pools")))
	var ops []string
	for _, v := range h.Versions {
		ops = append(ops, v.Op)
	}
	if h.Identifier != "Uniswap pools" || !slices.Equal(ops, []string{"put", "put", "put", "delete"}) || h.Versions[3].Value != nil || h.Versions[3].ID != e.ID {
		t.Fatalf("history: %+v", h)
	}
	c.mustKB("GET", kbPath+"/history?identifier=ghost", "", 404)
	c.mustKB("GET", kbPath+"/history?identifier=OpenSea", "", 404) // it lives in scope nft
	c.mustGet(kbPath + "/history?scope=nft&identifier=OpenSea")

	d = decode[kura.KBDeleted](t, c.mustKB("DELETE", kbPath+"/entries?all=true&scope=nft", "", 200))
	if d.Deleted != 1 {
		t.Fatalf("clear: %+v", d)
	}
	d = decode[kura.KBDeleted](t, c.mustKB("DELETE", kbPath+"/entries?all=true&scope=never", "", 200))
	if d.Deleted != 0 {
		t.Fatalf("clear of an empty scope: %+v", d)
	}
	if st := decode[kura.KBStats](t, c.mustGet(kbPath+"/stats")); st.Count != 1 || !slices.Equal(st.Identifiers, []string{"AAVE"}) {
		t.Errorf("default scope after clearing nft: %+v", st)
	}
}

func TestKB_Paging(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	var entries []string
	var want []string
	for i := range 25 {
		id := "entry " + string(rune('a'+i)) + " of the pile"
		want = append(want, id)
		entries = append(entries, entryBody(kura.KBEntryInput{Identifier: id, Keys: []string{"Pile", "a,b"}}))
	}
	c.mustKB("PUT", kbPath+"/entries/batch", `{"entries":[`+strings.Join(entries, ",")+`]}`, 200)
	for _, q := range []string{"limit=7", "limit=7&identifier=pile", "limit=7&key=pile", "limit=7&any_keys=a,b&any_keys=nope", "limit=7&all_keys=a%2Cb&all_keys=pile"} {
		var got []string
		path := kbPath + "/entries?" + q
		for range 10 {
			p := decode[kura.KBPage](t, c.mustGet(path))
			if p.Count != 25 {
				t.Fatalf("%s: count %d, want 25 on every page", q, p.Count)
			}
			got = append(got, entryIdents(p)...)
			if p.NextCursor == "" {
				break
			}
			path = kbPath + "/entries?" + q + "&cursor=" + p.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: pages gave %q", q, got)
		}
	}
	// any_keys given once splits on commas: "a" and "b" are no keys here.
	if p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?any_keys=a,b")); p.Count != 0 {
		t.Errorf("any_keys=a,b: count %d, want 0 (the key is \"a,b\", one key)", p.Count)
	}
	var ids []string
	path := kbPath + "/stats?limit=10"
	for range 5 {
		st := decode[kura.KBStats](t, c.mustGet(path))
		ids = append(ids, st.Identifiers...)
		if st.NextCursor == "" {
			break
		}
		path = kbPath + "/stats?limit=10&cursor=" + st.NextCursor
	}
	if !slices.Equal(ids, want) {
		t.Errorf("stats pages: %q", ids)
	}
	// A cursor of one listing is refused by another.
	p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?limit=1"))
	c.mustKB("GET", kbPath+"/stats?cursor="+p.NextCursor, "", 400)
}

func TestKB_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	specSeed(c)
	c.mustKB("PUT", kbPath+"/entries", `{"scope":"nft","identifier":"OpenSea","keys":["NFT"],"value":"x"}`, 201)

	long := func(s string, n int) string { return strings.Repeat(s, n) }
	keys := func(n int) string { return `["` + strings.Repeat(`k","`, n-1) + `k"]` }
	uni := url.QueryEscape(kbtest.Uniswap.Identifier)
	cases := []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		// PUT .../entries
		{"put malformed JSON", "PUT", kbPath + "/entries", `{"identifier":`, 400, "invalid_argument", ""},
		{"put unknown field", "PUT", kbPath + "/entries", `{"identifier":"x","tags":[]}`, 400, "invalid_argument", "tags"},
		{"put keys not strings", "PUT", kbPath + "/entries", `{"identifier":"x","keys":[1]}`, 400, "invalid_argument", "keys"},
		{"put no identifier", "PUT", kbPath + "/entries", `{"keys":["a"],"value":"v"}`, 400, "invalid_argument", "identifier"},
		{"put identifier 513 é", "PUT", kbPath + "/entries", `{"identifier":"` + long("é", 513) + `"}`, 400, "invalid_argument", "identifier"},
		{"put identifier 513 東", "PUT", kbPath + "/entries", `{"identifier":"` + long("東", 513) + `"}`, 400, "invalid_argument", "identifier"},
		{"put 33 keys", "PUT", kbPath + "/entries", `{"identifier":"x","keys":` + keys(33) + `}`, 400, "invalid_argument", "keys"},
		{"put key 129 東", "PUT", kbPath + "/entries", `{"identifier":"x","keys":["` + long("東", 129) + `"]}`, 400, "invalid_argument", "keys"},
		{"put empty key", "PUT", kbPath + "/entries", `{"identifier":"x","keys":["a",""]}`, 400, "invalid_argument", "keys"},
		{"put value 65537 東", "PUT", kbPath + "/entries", `{"identifier":"x","value":"` + long("東", 65537) + `"}`, 400, "invalid_argument", "value"},
		{"put bad scope", "PUT", kbPath + "/entries", `{"scope":"NFT","identifier":"x"}`, 400, "invalid_argument", "scope"},
		{"put invalid UTF-8", "PUT", kbPath + "/entries", "{\"identifier\":\"a\xffb\"}", 400, "invalid_argument", ""},
		{"put lone surrogate", "PUT", kbPath + "/entries", `{"identifier":"a\ud800b"}`, 400, "invalid_argument", ""},
		{"put low surrogate first", "PUT", kbPath + "/entries", `{"identifier":"\udc00\ud800"}`, 400, "invalid_argument", ""},
		{"put bad kb name", "PUT", "/v1/kb/Knowledge/entries", `{"identifier":"x"}`, 400, "invalid_argument", "kb"},
		{"put without a body", "PUT", kbPath + "/entries", ``, 400, "invalid_argument", ""},
		// PUT .../entries/batch
		{"batch empty", "PUT", kbPath + "/entries/batch", `{"entries":[]}`, 400, "invalid_argument", "entries"},
		{"batch one bad entry", "PUT", kbPath + "/entries/batch", `{"entries":[{"identifier":"ok"},{"identifier":"x","keys":` + keys(33) + `}]}`, 400, "invalid_argument", "entries[1].keys"},
		{"batch unknown field", "PUT", kbPath + "/entries/batch", `{"entries":[{"identifier":"ok","colour":1}]}`, 400, "invalid_argument", "colour"},
		// PATCH .../entries
		{"patch nothing to change", "PATCH", kbPath + "/entries", `{"identifier":"AAVE contract addresses on Ethereum mainnet."}`, 400, "invalid_argument", "value"},
		{"patch unknown entry", "PATCH", kbPath + "/entries", `{"identifier":"ghost","value":"x"}`, 404, "not_found", ""},
		{"patch other case", "PATCH", kbPath + "/entries", `{"identifier":"aave contract addresses on ethereum mainnet.","value":"x"}`, 404, "not_found", ""},
		{"patch other scope", "PATCH", kbPath + "/entries", `{"scope":"nft","identifier":"AAVE contract addresses on Ethereum mainnet.","value":"x"}`, 404, "not_found", ""},
		{"patch 33 keys", "PATCH", kbPath + "/entries", `{"identifier":"OpenSea","keys":` + keys(33) + `}`, 400, "invalid_argument", "keys"},
		{"patch value too long", "PATCH", kbPath + "/entries", `{"identifier":"OpenSea","value":"` + long("é", 65537) + `"}`, 400, "invalid_argument", "value"},
		// DELETE .../entries
		{"delete without identifier", "DELETE", kbPath + "/entries", ``, 400, "invalid_argument", "identifier"},
		{"delete all with identifier", "DELETE", kbPath + "/entries?all=true&identifier=" + uni, ``, 400, "invalid_argument", "all"},
		{"delete all not a boolean", "DELETE", kbPath + "/entries?all=yes", ``, 400, "invalid_argument", "all"},
		{"delete unknown", "DELETE", kbPath + "/entries?identifier=ghost", ``, 404, "not_found", ""},
		{"delete in another scope", "DELETE", kbPath + "/entries?scope=nft&identifier=" + uni, ``, 404, "not_found", ""},
		{"delete bad scope", "DELETE", kbPath + "/entries?scope=-x&all=true", ``, 400, "invalid_argument", "scope"},
		{"delete identifier twice", "DELETE", kbPath + "/entries?identifier=a&identifier=b", ``, 400, "invalid_argument", "identifier"},
		{"delete identifier not UTF-8", "DELETE", kbPath + "/entries?identifier=%FF", ``, 400, "invalid_argument", "identifier"},
		// GET .../entries
		{"query bad scope", "GET", kbPath + "/entries?scope=N", ``, 400, "invalid_argument", "scope"},
		{"query empty key", "GET", kbPath + "/entries?key=", ``, 400, "invalid_argument", "key"},
		{"query key twice", "GET", kbPath + "/entries?key=a&key=b", ``, 400, "invalid_argument", "key"},
		{"query empty any key", "GET", kbPath + "/entries?any_keys=a,,b", ``, 400, "invalid_argument", "any_keys"},
		{"query empty all_keys", "GET", kbPath + "/entries?all_keys=", ``, 400, "invalid_argument", "all_keys"},
		{"query too many keys", "GET", kbPath + "/entries?any_keys=" + strings.Repeat("k,", 300) + "k", ``, 400, "invalid_argument", "any_keys"},
		{"query identifier too long", "GET", kbPath + "/entries?identifier=" + long("a", 2049), ``, 400, "invalid_argument", "identifier"},
		{"query identifier not UTF-8", "GET", kbPath + "/entries?identifier=%C3", ``, 400, "invalid_argument", "identifier"},
		{"query bad limit", "GET", kbPath + "/entries?limit=1001", ``, 400, "invalid_argument", "limit"},
		{"query bad cursor", "GET", kbPath + "/entries?cursor=bm9wZQ", ``, 400, "invalid_argument", "cursor"},
		{"query bad kb", "GET", "/v1/kb/a.b/entries", ``, 400, "invalid_argument", "kb"},
		// stats, history, lookup
		{"stats bad scope", "GET", kbPath + "/stats?scope=A", ``, 400, "invalid_argument", "scope"},
		{"history without identifier", "GET", kbPath + "/history", ``, 400, "invalid_argument", "identifier"},
		{"history unknown", "GET", kbPath + "/history?identifier=ghost", ``, 404, "not_found", ""},
		{"lookup without q", "GET", kbPath + "/lookup", ``, 400, "invalid_argument", "q"},
		{"lookup empty q", "GET", kbPath + "/lookup?q=%20", ``, 400, "invalid_argument", "q"},
		{"lookup bad scope", "GET", kbPath + "/lookup?q=x&scope=X", ``, 400, "invalid_argument", "scope"},
		{"lookup q too long", "GET", kbPath + "/lookup?q=" + long("a", 2049), ``, 400, "invalid_argument", "q"},
		{"lookup bad mode", "GET", kbPath + "/lookup?q=x&mode=fuzzy", ``, 400, "invalid_argument", "mode"},
		{"lookup mode twice", "GET", kbPath + "/lookup?q=x&mode=strict&mode=ranked", ``, 400, "invalid_argument", "mode"},
		{"lookup q twice", "GET", kbPath + "/lookup?q=x&q=y", ``, 400, "invalid_argument", "q"},
		{"lookup bad limit", "GET", kbPath + "/lookup?q=x&limit=0", ``, 400, "invalid_argument", "limit"},
		// GET .../search
		{"search without q", "GET", kbPath + "/search", ``, 400, "invalid_argument", "q"},
		{"search empty q", "GET", kbPath + "/search?q=%20%09", ``, 400, "invalid_argument", "q"},
		{"search q twice", "GET", kbPath + "/search?q=a&q=b", ``, 400, "invalid_argument", "q"},
		{"search q not UTF-8", "GET", kbPath + "/search?q=%FF", ``, 400, "invalid_argument", "q"},
		{"search q too long", "GET", kbPath + "/search?q=" + long("a", 2049), ``, 400, "invalid_argument", "q"},
		{"search bad scope", "GET", kbPath + "/search?q=x&scope=A", ``, 400, "invalid_argument", "scope"},
		{"search bad limit", "GET", kbPath + "/search?q=x&limit=1001", ``, 400, "invalid_argument", "limit"},
		{"search limit not a number", "GET", kbPath + "/search?q=x&limit=ten", ``, 400, "invalid_argument", "limit"},
		{"search bad kb", "GET", "/v1/kb/K/search?q=x", ``, 400, "invalid_argument", "kb"},
		{"search is not a write", "POST", kbPath + "/search?q=x", ``, 405, "method_not_allowed", ""},
		// Routes and methods.
		{"POST is not upsert", "POST", kbPath + "/entries", `{"identifier":"x"}`, 405, "method_not_allowed", ""},
		{"no such route", "GET", kbPath + "/entries/x", ``, 404, "not_found", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.kbState("", "nft")
			st, _, raw := c.raw(tc.method, tc.path, tc.body, nil)
			if st != tc.status {
				t.Fatalf("status: got %d, want %d (%.300s)", st, tc.status, raw)
			}
			var m struct {
				Error kura.Error `json:"error"`
			}
			if err := json.Unmarshal(raw, &m); err != nil || m.Error.Code != tc.code || m.Error.Message == "" {
				t.Fatalf("error body: got %.300s, want code %s", raw, tc.code)
			}
			if tc.field != "" && m.Error.Details["field"] != tc.field {
				t.Errorf("details.field: got %v, want %s (%.300s)", m.Error.Details["field"], tc.field, raw)
			}
			if after := c.kbState("", "nft"); after != before {
				t.Errorf("state changed:\n%s\n->\n%s", before, after)
			}
		})
	}
	// Multi-byte text at the limits is accepted: 512 characters of 東 are
	// 1536 bytes.
	c.mustKB("PUT", kbPath+"/entries", `{"identifier":"`+long("東", 512)+`","keys":["`+long("é", 128)+`"],"value":"`+long("東", 65536)+`"}`, 201)
	c.mustKB("PUT", kbPath+"/entries", `{"identifier":"pair \ud83d\ude80 ok","keys":`+keys(32)+`}`, 201)
	if p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?exact_identifier="+url.QueryEscape("pair 🚀 ok"))); p.Count != 1 {
		t.Errorf("a surrogate pair is one character: %+v", p)
	}
}

func TestKB_Events(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	info := decode[struct {
		LastEventSeq int64 `json:"last_event_seq"`
	}](t, c.mustGet("/v1/info"))
	start := info.LastEventSeq
	a := decode[kura.KBEntry](t, c.mustKB("PUT", kbPath+"/entries", `{"identifier":"a","value":"1"}`, 201))
	c.mustKB("PUT", kbPath+"/entries", `{"identifier":"a","value":"2"}`, 200)
	bt := decode[kura.KBBatch](t, c.mustKB("PUT", kbPath+"/entries/batch", `{"entries":[{"identifier":"b"},{"scope":"s","identifier":"c"}]}`, 200))
	c.mustKB("PATCH", kbPath+"/entries", `{"identifier":"a","keys":["k"]}`, 200)
	c.mustKB("DELETE", kbPath+"/entries?identifier=b", "", 200)
	c.mustKB("DELETE", kbPath+"/entries?all=true", "", 200) // removes a
	c.mustKB("PUT", "/v1/kb/other/entries", `{"identifier":"z"}`, 201)
	p := decode[struct {
		Events []map[string]any `json:"events"`
	}](t, c.mustGet("/v1/events?type=kb.changed&after="+strconv.FormatInt(start, 10)))
	b, cc := bt.Entries[0].ID, bt.Entries[1].ID
	var got []string
	for _, e := range p.Events {
		// The event's project is the KB scope; the default scope's is "default".
		want := "default"
		if e["entry_id"] == cc {
			want = "s"
		}
		if e["project"] != want {
			t.Errorf("event %v: project %v, want %s", e, e["project"], want)
		}
		got = append(got, e["kb"].(string)+":"+e["entry_id"].(string))
	}
	want := []string{"knowledge:" + a.ID, "knowledge:" + a.ID, "knowledge:" + b, "knowledge:" + cc, "knowledge:" + a.ID, "knowledge:" + b, "knowledge:" + a.ID}
	if len(got) != 8 || !slices.Equal(got[:7], want) || !strings.HasPrefix(got[7], "other:") {
		t.Errorf("kb.changed events:\n got %v\nwant %v and one of other", got, want)
	}
	// Reads append nothing.
	before := c.state()
	c.mustGet(kbPath + "/entries?identifier=a")
	c.mustGet(kbPath + "/stats")
	c.raw("GET", kbPath+"/lookup?q=a", "", nil)
	c.mustGet(kbPath + "/search?q=a")
	if c.state() != before {
		t.Error("reads appended events")
	}
}

func TestKB_IdempotentReplays(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	specSeed(c)
	uni := url.QueryEscape(kbtest.Uniswap.Identifier)
	calls := []struct {
		name, method, path, body, other string
		status                          int
	}{
		{"put new", "PUT", kbPath + "/entries", `{"identifier":"new one","value":"v"}`, `{"identifier":"new two","value":"v"}`, 201},
		{"put replace", "PUT", kbPath + "/entries", `{"identifier":"new one","value":"w"}`, `{"identifier":"new one","value":"x"}`, 200},
		{"batch", "PUT", kbPath + "/entries/batch", `{"entries":[{"identifier":"b1"},{"identifier":"b2"}]}`, `{"entries":[{"identifier":"b3"}]}`, 200},
		{"patch", "PATCH", kbPath + "/entries", `{"identifier":"b1","value":"patched"}`, `{"identifier":"b2","value":"patched"}`, 200},
		{"delete", "DELETE", kbPath + "/entries?identifier=" + uni, ``, ``, 200},
		{"clear", "DELETE", kbPath + "/entries?all=true&scope=s", ``, ``, 200},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			key := map[string]string{"Idempotency-Key": "kb-" + strings.ReplaceAll(call.name, " ", "-")}
			st1, h1, b1 := c.raw(call.method, call.path, call.body, key)
			if st1 != call.status || h1.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: got %d %s", st1, b1)
			}
			before := c.kbState("", "s")
			st2, h2, b2 := c.raw(call.method, call.path, call.body, key)
			if st2 != st1 || string(b2) != string(b1) || h2.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry: got %d %q (replayed %q), want %d %q replayed", st2, b2, h2.Get("Idempotent-Replayed"), st1, b1)
			}
			if after := c.kbState("", "s"); after != before {
				t.Errorf("retry wrote something:\n%s\n->\n%s", before, after)
			}
			// The key reused for another request is refused, a DELETE of
			// another identifier (named in the query, not the body)
			// included.
			otherPath := call.path
			if call.method == "DELETE" {
				otherPath = strings.Replace(call.path, "?", "?scope=zz&", 1)
			}
			if st3, _, b3 := c.raw(call.method, otherPath, call.other, key); st3 != 409 {
				t.Errorf("key reused for another request: got %d %s, want 409", st3, b3)
			}
		})
	}
	if p := decode[kura.KBPage](t, c.mustGet(kbPath+"/entries?exact_identifier=new%20one")); p.Count != 1 || p.Entries[0].Version != 2 {
		t.Errorf("replays wrote versions: %+v", p)
	}
}

// FuzzKBPut throws arbitrary bodies at the upsert on a real kurad: the
// answer is always a documented status with the documented body, and an
// accepted identifier is exactly the one sent, never a silently repaired
// one (invalid UTF-8 and lone surrogates are refused, not replaced).
func FuzzKBPut(f *testing.F) {
	for _, s := range []string{
		`{"identifier":"Uniswap contract addresses on Ethereum mainnet.","keys":["Dex"],"value":"v"}`,
		`{"identifier":"a\ud800"}`, `{"identifier":"\ud83d\ude80"}`, `{"identifier":"a\\ud800"}`,
		"{\"identifier\":\"\xff\"}", `{"identifier":""}`, `{"scope":"x","identifier":"x","keys":[""]}`,
		`{"entries":[]}`, `[]`, `null`, `{"identifier":"\ufffd"}`,
	} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	f.Fuzz(func(t *testing.T, body []byte) {
		c.tb = t
		st, _, raw := c.raw("PUT", kbPath+"/entries", string(body), nil)
		switch st {
		case 200, 201:
			var e kura.KBEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("answer %s: %v", raw, err)
			}
			if strings.ContainsRune(e.Identifier, utf8.RuneError) && !strings.Contains(string(body), "\ufffd") && !strings.Contains(strings.ToLower(string(body)), `\ufffd`) {
				t.Fatalf("body %q was stored as %q: repaired, not refused", body, e.Identifier)
			}
		case 400, 413, 415:
			var m struct {
				Error kura.Error `json:"error"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Error.Code == "" || m.Error.Message == "" {
				t.Fatalf("error body malformed: %s", raw)
			}
		default:
			t.Fatalf("status %d for %q: %s", st, body, raw)
		}
	})
}
