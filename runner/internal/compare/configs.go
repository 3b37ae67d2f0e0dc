package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// config is one config of one side and the figures of its requests.
type config struct {
	key    string
	ref    ConfigRef
	digest *results.ConfigDigest // the config's requests; nil for a config without any
	loaded bool                  // a load section, or rows sent under one: the load-only metrics apply
}

// digestOf returns the figures of a side's requests: those the reader gathered, or, for a side
// whose requests were read whole, a digest of them.
func digestOf(s *Side) *results.Digest {
	if s.Digest != nil {
		return s.Digest
	}
	d := results.NewDigest(s.Manifest.Configs)
	for i := range s.Requests {
		d.Add(&s.Requests[i])
	}
	return d
}

// configSet is a side's configs in order, and by the key they are joined by (an id or a
// label).
type configSet struct {
	order []*config
	byKey map[string]*config
}

// groupConfigs lists a side's configs in expansion order, then any config that only its
// requests name, in order of appearance, each with the figures of its requests.
func groupConfigs(s *Side, by JoinBy) (*configSet, error) {
	set := &configSet{byKey: map[string]*config{}}
	byID := map[string]*config{}
	configs := append([]experiment.Config(nil), s.Manifest.Configs...)
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].Index < configs[j].Index })
	add := func(id, label string) (*config, error) {
		key := id
		if by == ByLabel {
			key = label
		}
		if prev := set.byKey[key]; prev != nil {
			return nil, fmt.Errorf("%s: configs %s and %s have the same label %q: they cannot be joined by label", s.Dir, prev.ref.ID, id, label)
		}
		c := &config{key: key, ref: ConfigRef{ID: id, Label: label}}
		set.byKey[key] = c
		set.order = append(set.order, c)
		byID[id] = c
		return c, nil
	}
	for _, c := range configs {
		if byID[c.ID] != nil {
			continue
		}
		g, err := add(c.ID, c.Label)
		if err != nil {
			return nil, err
		}
		g.loaded = c.Load != nil
	}
	for _, g := range digestOf(s).Configs() {
		c := byID[g.Config.ID]
		if c == nil {
			var err error
			if c, err = add(g.Config.ID, g.Config.ID); err != nil {
				return nil, err
			}
		}
		// The digest holds what results.Summarize describes: the measure phase, the failed
		// requests counted, not compared.
		c.digest = g
		c.loaded = c.loaded || g.Loaded
	}
	return set, nil
}

// folderInfo describes a side for the report, with its configs' measured and failed requests.
func folderInfo(s *Side, set *configSet) Folder {
	f := Folder{Dir: s.Dir, Experiment: s.Manifest.Experiment.Name, Status: s.Status, Start: s.Manifest.Start.UTC(),
		RunnerVersion: s.Manifest.Runner.Version, Configs: len(set.order)}
	for _, c := range set.order {
		failed, measured, _ := c.failureRate()
		f.Measured += measured
		f.Failed += failed
	}
	return f
}

// values returns the config's values of metric m over its successful measured requests, and the
// number of its failed measured requests.
func (c *config) values(m results.Metric) (xs []float64, failed int) {
	if c.digest == nil {
		return nil, 0
	}
	return slices.Clone(c.digest.Values(m)), c.digest.Failed
}

// failureRate returns the config's failed and measured requests and the failed share in
// percent (NaN without measured requests).
func (c *config) failureRate() (failed, measured int, pct float64) {
	if c.digest != nil {
		failed, measured = c.digest.Failed, c.digest.Measured
	}
	pct = math.NaN()
	if measured > 0 {
		pct = 100 * float64(failed) / float64(measured)
	}
	return failed, measured, pct
}
