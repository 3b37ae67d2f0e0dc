package orchestrate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// TestInterruptWhileDecidingDown checks a run stopped while a load point decides whether its
// server is going down, after a cache reset failed: before the load point (cache:
// reset_per_config) or before one of its requests (cache: reset). The load point is left
// partial for a resume to run again, and no request is recorded as a failed reset that the
// interrupt, not the server, kept from being sent. The check stops the run itself, as an
// interrupt during its wait would.
func TestInterruptWhileDecidingDown(t *testing.T) {
	// cache: reset allows one request in flight at most.
	for cache, concurrency := range map[string]string{"reset_per_config": "2", "reset": "1"} {
		t.Run(cache, func(t *testing.T) {
			c := sim.DefaultConfig()
			c.Model, c.DevMode, c.DecodePerToken = "sim-model", true, 100*time.Microsecond
			s, err := sim.New(c)
			if err != nil {
				t.Fatal(err)
			}
			// The resets work until the first request has been sent: the one when the
			// runner connects, and the first request's, go through.
			var sent atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/completions":
					sent.Add(1)
				case "/reset_prefix_cache":
					if sent.Load() > 0 {
						http.Error(w, "no", http.StatusInternalServerError)
						return
					}
				}
				s.ServeHTTP(w, r)
			}))
			defer func() { s.Close(); ts.Close() }()
			e, cfgs := loadExperiment(t, ts.URL, "cache: "+cache+"\nload:\n  concurrency: "+concurrency+"\n")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			defer func(p func(context.Context, process) bool) { probeDown = p }(probeDown)
			probeDown = func(context.Context, process) bool { cancel(); return false }
			var mu sync.Mutex
			var rows []record.Request
			keep := SubscriberFunc(func(ev Event) error {
				mu.Lock()
				defer mu.Unlock()
				switch ev := ev.(type) {
				case RequestMeasured:
					rows = append(rows, ev.Record)
				case RequestNotSent:
					rows = append(rows, ev.Record)
				}
				return nil
			})
			_, err = Run(ctx, Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{keep}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want the interrupt", err)
			}
			for _, r := range rows {
				if r.ErrorClass == record.ErrCacheReset {
					t.Errorf("request %d recorded as %s (%s), though the interrupt kept it from being sent", r.Seq, r.ErrorClass, r.Error)
				}
			}
			if len(rows) != 1 || rows[0].Phase != record.PhaseFirst {
				t.Errorf("%d rows recorded, want only the first request's", len(rows))
			}
		})
	}
}

// TestInterruptAfterLoadPointLastRow checks that a load point's rows and its server row
// (load_server.csv) are recorded as a pair, from a resume's point of view: the run is stopped
// as soon as the load point's last request row is recorded. Either that row comes after the
// server row, or the load point is left partial, so that a resume runs it again whole; never
// is it whole without its server row.
func TestInterruptAfterLoadPointLastRow(t *testing.T) {
	ls := startLoadSim(t)
	e, cfgs := loadExperiment(t, ls.url, "load:\n  concurrency: 2\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	want := experiment.Requests(cfgs) // the first request, 2 warm-ups, 8 measured
	rows, scraped := 0, 0
	var scrapedAt int // rows recorded when the server row was
	stop := SubscriberFunc(func(ev Event) error {
		switch ev.(type) {
		case RequestMeasured, RequestNotSent:
			if rows++; rows == want {
				cancel()
			}
		case LoadPointScraped:
			scraped++
			scrapedAt = rows
		}
		return nil
	})
	_, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{stop}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	switch {
	case rows < want:
		// Partial: a resume discards the rows and runs the load point again.
	case scraped != 1:
		t.Errorf("the load point's %d rows are all recorded, but %d server rows, want 1", rows, scraped)
	case scrapedAt != want-1:
		t.Errorf("the server row came after %d rows, want before the last (%d)", scrapedAt, want-1)
	}
}
