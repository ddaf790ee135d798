package daemon

import (
	"fmt"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/bus"
)

// loadTokens reads the tokens file at start. A file with at least one
// token makes kurad require tokens for its whole run; no file is the
// tokenless mode (Validate kept it to loopback). A file holding no token
// is refused here too: it may have been emptied since Validate read it.
func (m *Main) loadTokens() error {
	path := m.Config.TokensFile
	if path == "" {
		return nil
	}
	es, err := auth.LoadTokensFile(path)
	if err != nil {
		return err
	}
	if len(es) == 0 {
		return fmt.Errorf("tokens file %w", errNoTokens(path))
	}
	m.tokens = auth.NewTable(es)
	m.Logger.Info("tokens loaded", "tokens_file", path, "tokens", len(es))
	return nil
}

// ReloadTokens reads the tokens file again (SIGHUP) and swaps it in: the
// next request is checked against the new file, so a removed line revokes
// its token at once. A file that does not parse changes nothing. A kurad
// started without tokens stays tokenless until restarted. An empty file in
// token mode is taken as it is: every call is then refused.
func (m *Main) ReloadTokens() error {
	if m.tokens == nil {
		err := fmt.Errorf("kurad runs without tokens; restart it to start requiring them")
		m.Logger.Warn("tokens not reloaded", "err", err)
		return err
	}
	es, err := auth.LoadTokensFile(m.Config.TokensFile)
	if err != nil {
		m.Logger.Error("tokens not reloaded; the previous tokens stay in force", "err", err)
		return err
	}
	m.tokens.Replace(es)
	m.Logger.Info("tokens reloaded", "tokens_file", m.Config.TokensFile, "tokens", len(es))
	return nil
}

// natsTokenTable lets the NATS server check the tokens the API checks, out
// of the same table: a token revoked by a reload is refused by both.
type natsTokenTable struct{ t *auth.Table }

func (n natsTokenTable) Grant(token string) (bus.Grant, bool) {
	p, ok := n.t.Lookup(token)
	if !ok {
		return bus.Grant{}, false
	}
	g := bus.Grant{Identity: p.Identity, Projects: p.Projects, Scopes: p.Scopes}
	if p.AllProjects() {
		g.Projects = nil
	}
	if p.AllScopes() {
		g.Scopes = nil
	}
	return g, true
}

func (n natsTokenTable) Changed() <-chan struct{} { return n.t.Changed() }
