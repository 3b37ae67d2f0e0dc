package merge

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// missingConfig is a planned config that a merge lacks.
type missingConfig struct {
	index int
	id    string // the config's id; for one recomputed from a redacted copy, "#<index> <label>"
	label string
}

// coverage is what a set of shards holds of the plan.
type coverage struct {
	unfinished []error         // one problem per shard that did not complete
	absent     error           // the shard indexes that no folder holds; nil when there is none
	missing    []missingConfig // the configs of both, in plan order
	// unlisted says why the configs of the shard indexes that no folder holds are unknown;
	// empty when they are listed in missing.
	unlisted string
	complete []*shard // the shards whose rows a merge takes
}

// checkCoverage finds the shards that did not complete and the shard indexes no folder holds,
// and the configs they leave out.
func checkCoverage(shards []*shard) coverage {
	var cov coverage
	count := shards[0].man.Shard.Count
	given := map[int]bool{}
	known := map[int]bool{} // plan positions of the configs some folder holds
	for _, s := range shards {
		given[s.index()] = true
		for _, c := range s.man.Configs {
			known[c.Index] = true
		}
		if s.r.Status() != results.StatusComplete {
			var cs []missingConfig
			for _, c := range s.man.Configs {
				cs = append(cs, missingConfig{index: c.Index, id: c.ID, label: c.Label})
			}
			cov.unfinished = append(cov.unfinished, fmt.Errorf("%s: %s is %s, not complete; its configs: %s (finish it with --resume, or merge with --partial)",
				s.dir, s.name(), s.r.Status(), configList(cs)))
			cov.missing = append(cov.missing, cs...)
			continue
		}
		cov.complete = append(cov.complete, s)
	}
	var gaps []string
	for i := range count {
		if !given[i] {
			gaps = append(gaps, strconv.Itoa(i))
		}
	}
	if len(gaps) > 0 {
		cs, err := unplacedConfigs(shards[0].man, known)
		what := "shard " + gaps[0] + " of " + strconv.Itoa(count) + " is missing: no folder given holds it; its configs: "
		if len(gaps) > 1 {
			what = "shards " + strings.Join(gaps, ", ") + " of " + strconv.Itoa(count) + " are missing: no folder given holds them; their configs: "
		}
		if err != nil {
			cov.unlisted = err.Error()
			what += fmt.Sprintf("unknown (%v)", err)
		} else {
			what += configList(cs)
		}
		cov.absent = errors.New(what)
		cov.missing = append(cov.missing, cs...)
	}
	slices.SortStableFunc(cov.missing, func(a, b missingConfig) int { return cmp.Compare(a.index, b.index) })
	return cov
}

// unplacedConfigs expands the experiment copy of m and returns its configs whose plan position
// is not in known: the configs of the shards that no folder holds. The copy has its secrets
// redacted, and a secret is part of a config's id: where the copy had any, the ids cannot be
// recomputed, and each config is named "#<index> <label>" instead.
func unplacedConfigs(m *results.Manifest, known map[int]bool) ([]missingConfig, error) {
	path := cmp.Or(m.Experiment.Path, m.Experiment.Name+".yaml")
	exp, err := experiment.Parse(path, []byte(m.Experiment.Source))
	if err != nil {
		return nil, fmt.Errorf("the experiment copy in the manifest does not load: %w", err)
	}
	cfgs, err := exp.Expand()
	if err != nil {
		return nil, fmt.Errorf("the experiment copy in the manifest does not expand: %w", err)
	}
	var out []missingConfig
	for _, c := range cfgs {
		if known[c.Index] {
			continue
		}
		id := c.ID
		if len(m.Experiment.Redacted) > 0 {
			id = fmt.Sprintf("#%d %s", c.Index, c.Label)
		}
		out = append(out, missingConfig{index: c.Index, id: id, label: c.Label})
	}
	return out, nil
}

// configList names configs for a message: "id (label), ...", or "none".
func configList(cs []missingConfig) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.id
		if c.label != "" && !strings.HasSuffix(c.id, " "+c.label) {
			parts[i] += " (" + c.label + ")"
		}
	}
	return strings.Join(parts, ", ")
}
