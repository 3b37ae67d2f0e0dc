package orchestrate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/sim"
)

// TestCacheKeepSendsNoReset checks that a run told to keep a server's cache (cache: keep on
// every config) never empties it: not before its requests, and not once when it connects to
// find out whether it could. A server reached through engine: endpoint may be serving others.
// The resets are counted on the server, as POSTs of /reset_prefix_cache; with one config that
// asks for a reset, the run does reset it.
func TestCacheKeepSendsNoReset(t *testing.T) {
	for _, tt := range []struct {
		cache  string
		resets bool
	}{{"keep", false}, {"reset", true}} {
		t.Run(tt.cache, func(t *testing.T) {
			c := sim.DefaultConfig()
			c.Model, c.DevMode, c.DecodePerToken = "sim-model", true, 100*time.Microsecond
			s, err := sim.New(c)
			if err != nil {
				t.Fatal(err)
			}
			var resets atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/reset_prefix_cache" {
					resets.Add(1)
				}
				s.ServeHTTP(w, r)
			}))
			defer func() { s.Close(); ts.Close() }()
			e, cfgs := endpointExperiment(t, ts.URL, tt.cache, "sequential")
			out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs})
			if err != nil {
				t.Fatal(err)
			}
			if out.Failed != 0 {
				t.Fatalf("outcome %+v", out)
			}
			if got := resets.Load(); tt.resets != (got > 0) {
				t.Errorf("cache: %s sent %d cache resets", tt.cache, got)
			}
		})
	}
}
