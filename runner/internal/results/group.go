package results

import (
	"cmp"
	"slices"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// ConfigRequests is one config and its request rows, as GroupByConfig groups them.
type ConfigRequests struct {
	Config experiment.Config
	// Listed is set for a config of the list that GroupByConfig was given. A config that only
	// the rows name has its ID, the ServerID of its first row, its ID as its Label, and Index
	// -1.
	Listed bool
	// Requests are the config's rows in row order, warm-ups and failed requests included.
	Requests []*record.Request
}

// GroupByConfig groups request rows by config: one group per config of configs, in the order
// given (a repeated id once), then one per config that only the rows name, in order of first
// appearance, so that a folder whose rows name a config its manifest lacks still shows those
// rows. Summaries, load points and reports all group rows this way, so that they agree on
// which configs a folder has and in which order.
func GroupByConfig(configs []experiment.Config, reqs []record.Request) []ConfigRequests {
	var groups []ConfigRequests
	at := map[string]int{}
	for _, c := range configs {
		if _, dup := at[c.ID]; dup {
			continue
		}
		at[c.ID] = len(groups)
		groups = append(groups, ConfigRequests{Config: c, Listed: true})
	}
	for i := range reqs {
		r := &reqs[i]
		g, ok := at[r.ConfigID]
		if !ok {
			g = len(groups)
			at[r.ConfigID] = g
			groups = append(groups, ConfigRequests{
				Config: experiment.Config{Index: -1, ID: r.ConfigID, ServerID: r.ServerID, Label: r.ConfigID}})
		}
		groups[g].Requests = append(groups[g].Requests, r)
	}
	return groups
}

// inExpansionOrder returns a copy of configs sorted by Index, configs with equal indices in
// the order given.
func inExpansionOrder(configs []experiment.Config) []experiment.Config {
	sorted := slices.Clone(configs)
	slices.SortStableFunc(sorted, func(a, b experiment.Config) int { return cmp.Compare(a.Index, b.Index) })
	return sorted
}
