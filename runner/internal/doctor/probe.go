package doctor

import (
	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/openai"
)

// probe holds what the checks of one ready server share: the server, its configs, and the
// client of its side endpoints.
type probe struct {
	srv *engine.Server
	g   group
	api *openai.Client
}

func newProbe(srv *engine.Server, g group) *probe {
	return &probe{srv: srv, g: g, api: &openai.Client{BaseURL: srv.BaseURL(), APIKey: srv.APIKey()}}
}

// version checks that the server said which version it is, as Start asked it.
func (p *probe) version() Check {
	if v := p.srv.Version(); v != "" {
		return Check{Name: "version", Result: OK, Detail: v}
	}
	return Check{Name: "version", Result: Missing, Detail: "the server answered no version",
		Without: "servers.csv records no engine_version, so runner diff cannot tell two versions apart"}
}
