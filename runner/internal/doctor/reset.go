package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// cacheProbe is the prompt the reset is proved with: long enough to fill several blocks of any
// engine's prefix cache, so that a repeat of it hits the cache where there is one.
var cacheProbe = strings.Repeat("The runner's doctor sends this sentence to fill the prefix cache. ", 12)

// cacheReset proves the prefix cache reset: the probe prompt is sent twice, and the second
// must hit the cache (else there is no cache to reset); then the cache is reset and the probe
// sent again, which must hit nothing. The hits are read from the /metrics prefix-cache counter
// around each repeat. A server with no reset fails the check when the experiment asks for
// cache: reset; one with a reset but no counter is unverified.
func (p *probe) cacheReset(ctx context.Context) Check {
	need := p.g.needsReset()
	c := Check{Name: "cache reset"}
	if !p.srv.CanResetCache() {
		c.Detail = p.srv.Engine() + " offers no prefix cache reset here"
		if need {
			c.Result = Failed
			c.Without = "cache: reset is refused: every request of this server is recorded failed (set cache: keep)"
		} else {
			c.Result, c.Without = Missing, "cache: reset cannot be asked of this server (the experiment keeps the cache)"
		}
		return c
	}
	mechanism := p.srv.CacheResetMechanism()
	hitsName, why := p.hitsCounter(ctx)
	if hitsName == "" {
		if err := p.srv.ResetCache(ctx); err != nil {
			return p.resetFailed(c, err, need)
		}
		c.Result, c.Detail = Unverified, "the reset ("+mechanism+") answers, but "+why
		c.Without = "a request that hits the cache after a reset is not flagged (cache_hit_after_reset)"
		return c
	}
	client := p.client()
	send := func() error {
		rec, err := client.Do(ctx, p.spec(cacheProbe, 1))
		if err == nil && rec.Status != record.StatusOK {
			err = fmt.Errorf("the probe request failed (%s): %s", rec.ErrorClass, rec.Error)
		}
		return err
	}
	// hits sends the probe and returns the cache hits it caused.
	hits := func() (float64, error) {
		before, err := p.scrape(ctx)
		if err != nil {
			return 0, err
		}
		if err := send(); err != nil {
			return 0, err
		}
		after, err := p.scrape(ctx)
		if err != nil {
			return 0, err
		}
		b, _ := before.Total(hitsName)
		a, _ := after.Total(hitsName)
		return a - b, nil
	}
	fail := func(result Result, detail string) Check {
		c.Result, c.Detail = result, detail
		c.Without = "a request that hits the cache after a reset is not flagged (cache_hit_after_reset)"
		return c
	}
	if err := send(); err != nil {
		return fail(Unverified, err.Error())
	}
	warm, err := hits()
	if err != nil {
		return fail(Unverified, err.Error())
	}
	if err := p.srv.ResetCache(ctx); err != nil {
		return p.resetFailed(c, err, need)
	}
	cold, err := hits()
	switch {
	case err != nil:
		return fail(Unverified, err.Error())
	case cold > 0:
		c.Result = Missing
		if need {
			c.Result = Failed
		}
		c.Detail = fmt.Sprintf("%s answered, but the repeated prompt still hit %g cached tokens after it (%g before)", mechanism, cold, warm)
		c.Without = "every request of cache: reset is flagged cache_hit_after_reset, and its TTFT is not a cold prefill"
		return c
	case warm == 0:
		c.Result = OK
		c.Detail = fmt.Sprintf("%s answers; the repeated prompt hit no cache even before it: the server reuses no prefix here", mechanism)
		return c
	}
	c.Result = OK
	c.Detail = fmt.Sprintf("proved: the repeated prompt hit %g cached tokens before %s and none after", warm, mechanism)
	return c
}

// resetFailed is the check of a reset that the server offered at boot but refused now.
func (p *probe) resetFailed(c Check, err error, need bool) Check {
	c.Result, c.Detail = Missing, err.Error()
	if need {
		c.Result = Failed
	}
	c.Without = "the request after a failed reset is recorded failed"
	return c
}

// hitsCounter returns the name of the prefix-cache hits counter the server serves, or "" and
// why there is none.
func (p *probe) hitsCounter(ctx context.Context) (name, why string) {
	if !enginefacts.ServesMetrics(p.srv.Engine()) {
		return "", p.srv.Engine() + " serves no /metrics to count cache hits by"
	}
	m, err := p.scrape(ctx)
	if err != nil {
		return "", "its /metrics cannot be read: " + err.Error()
	}
	n, ok := openai.DetectServerNames(m)
	if !ok || n.CacheHits == "" {
		return "", "its /metrics counts no prefix-cache hits"
	}
	if _, ok := m.Total(n.CacheHits); !ok {
		return "", "its /metrics does not serve " + n.CacheHits
	}
	return n.CacheHits, ""
}
