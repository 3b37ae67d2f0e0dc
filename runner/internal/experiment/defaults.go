package experiment

import (
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
)

// Defaults applied to what an experiment file leaves out. They are part of each config's content,
// so a value given explicitly and equal to its default gives the same config id. The defaults of
// the server fields depend on the engine and come from its entry in the engine table.
const (
	DefaultEngine         = enginefacts.Default
	DefaultAPI            = "completions"
	DefaultRepetitions    = 10
	DefaultWarmup         = 1
	DefaultCache          = "reset" // keep for a config that cannot reset (CanResetCache)
	DefaultOrder          = "sequential"
	DefaultRequestTimeout = 5 * time.Minute
	DefaultArrival        = "poisson"
	DefaultBurstiness     = 1.0
	DefaultPrompts        = "distinct"
)

// applyDefaults fills the experiment-wide fields the file leaves out. warmupSet says whether the
// file sets warmup, since 0 is a valid count. The fields a matrix axis may change get their
// defaults per config, in applyDefaults.
func (e *Experiment) applyDefaults(warmupSet bool) {
	if !warmupSet {
		e.Warmup = DefaultWarmup
	}
	if e.Repetitions == 0 {
		e.Repetitions = DefaultRepetitions
	}
	if e.Timeouts.Request == 0 {
		e.Timeouts.Request = DefaultRequestTimeout
	}
	if e.Order.Mode == "" {
		e.Order.Mode = DefaultOrder
	}
}

// applyDefaults fills what a config leaves unset. Warm-up is not among them: 0 is a valid count,
// so its default is applied when the file is read.
func applyDefaults(c *Config) {
	if c.Server.Engine == "" {
		c.Server.Engine = DefaultEngine
	}
	if c.Request.API == "" {
		c.Request.API = DefaultAPI
	}
	if l := c.Load; l != nil {
		if l.Rate > 0 {
			if l.Arrival == "" {
				l.Arrival = DefaultArrival
				if l.Burstiness != 0 {
					l.Arrival = "gamma"
				}
			}
			if l.Arrival == "gamma" && l.Burstiness == 0 {
				l.Burstiness = DefaultBurstiness
			}
		} else if l.Concurrency == 0 {
			l.Concurrency = 1
		}
		if l.Prompts == "" {
			l.Prompts = DefaultPrompts
		}
	}
	if c.Cache == "" {
		c.Cache = DefaultCache
		if c.Load != nil {
			// One reset per load point: a reset before every request would need the
			// requests one at a time, which a load point does not promise.
			c.Cache = "reset_per_config"
		}
		if resetProblem(c) != "" {
			c.Cache = "keep"
		}
	}
	if c.Repetitions == 0 {
		c.Repetitions = DefaultRepetitions
	}
	if c.Timeouts.Request == 0 {
		c.Timeouts.Request = DefaultRequestTimeout
	}
	s := &c.Server
	e, _ := enginefacts.Lookup(s.Engine)
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = e.ReadyTimeout
	}
	for _, name := range enginefacts.ServerFields {
		if v, ok := e.Defaults[name]; ok {
			if f := fieldByPath("server." + name); !f.isSet(c) {
				f.set(c, v)
			}
		}
	}
}
