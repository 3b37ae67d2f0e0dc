package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// Shards splits an experiment's configs into n shards for n machines and returns, for each shard
// 0..n-1, the configs it runs, in plan order. It returns nil when n is less than 1.
//
// A server config (the configs sharing a ServerID, which share one boot) is never split. The
// shards are balanced by planned requests, as experiment.Requests counts them (one first
// request per boot, then every config's warm-ups and repetitions), by longest processing time
// first: the server configs, largest first, each go to the shard with the fewest requests so
// far. Ties are broken by plan order (of a server config's first config), then by the lowest
// shard index, so that every machine computes the same assignment from the same file. The
// busiest shard then sends at most 4/3 of the requests of the busiest shard of the best possible
// assignment (Graham's bound for LPT, 4/3 − 1/(3n)), and never more than the largest server
// config's requests above the least busy shard. A shard gets no configs when there are more
// shards than server configs.
func Shards(configs []experiment.Config, n int) [][]experiment.Config {
	if n < 1 {
		return nil
	}
	type server struct {
		id       string
		first    int // plan position of its first config
		requests int
	}
	var servers []server
	index := map[string]int{}
	for i, c := range configs {
		s, ok := index[c.ServerID]
		if !ok {
			s = len(servers)
			index[c.ServerID] = s
			// The first request after the server's boot.
			servers = append(servers, server{id: c.ServerID, first: i, requests: 1})
		}
		servers[s].requests = experiment.AddSat(servers[s].requests, experiment.AddSat(max(c.Warmup, 0), max(c.Repetitions, 0)))
	}
	order := slices.Clone(servers)
	// A stable sort keeps plan order among server configs of equal size.
	slices.SortStableFunc(order, func(a, b server) int { return cmp.Compare(b.requests, a.requests) })
	load := make([]int, n)
	shardOf := map[string]int{}
	for _, s := range order {
		lightest := 0
		for i := 1; i < n; i++ {
			if load[i] < load[lightest] {
				lightest = i
			}
		}
		shardOf[s.id] = lightest
		load[lightest] = experiment.AddSat(load[lightest], s.requests)
	}
	out := make([][]experiment.Config, n)
	for i := range out {
		out[i] = []experiment.Config{}
	}
	for _, c := range configs {
		i := shardOf[c.ServerID]
		out[i] = append(out[i], c)
	}
	return out
}

// Fingerprint identifies the plan that n shards of an experiment file split: the SHA-256 (hex)
// of the file's SHA-256 (hex, as the manifest records it) and n. Shards of one run share it;
// shards of another file, or of the same file split another number of ways, do not.
func Fingerprint(experimentSHA256 string, n int) string {
	h := sha256.Sum256([]byte(experimentSHA256 + "\n" + strconv.Itoa(n) + "\n"))
	return hex.EncodeToString(h[:])
}

// Shard is one shard of a plan split by Shards, as runner plan --shards reports it.
type Shard struct {
	Index    int      `json:"index"`
	Servers  []string `json:"servers"` // the ids of its server configs, in plan order
	Configs  []string `json:"configs"` // the ids of its configs, in plan order
	Requests int      `json:"requests"`
}

// Split records in p the assignment of its configs, cfgs, to n shards (see Shards). n must be at
// least 1.
func (p *Plan) Split(cfgs []experiment.Config, n int) {
	p.Shards = []Shard{}
	for i, sc := range Shards(cfgs, n) {
		s := Shard{Index: i, Servers: []string{}, Configs: []string{}, Requests: experiment.Requests(sc)}
		for _, c := range sc {
			if !slices.Contains(s.Servers, c.ServerID) {
				s.Servers = append(s.Servers, c.ServerID)
			}
			s.Configs = append(s.Configs, c.ID)
		}
		p.Shards = append(p.Shards, s)
	}
}

// shardOf returns the index of the shard that runs the config id, or -1.
func (p *Plan) shardOf(id string) int {
	for _, s := range p.Shards {
		if slices.Contains(s.Configs, id) {
			return s.Index
		}
	}
	return -1
}
