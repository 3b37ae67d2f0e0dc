package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// MaxShards is the most shards a plan may be split into. An experiment expands to at most
// experiment.MaxConfigs configs, so to at most as many server configs, and a shard past the
// server configs runs nothing: no useful split needs more. The bound keeps a typo such as
// --shard 0/1000000000 a clear refusal, as experiment.MaxRequests does for repetitions.
const MaxShards = experiment.MaxConfigs

// CheckCount reports a shard count below 1 or above MaxShards; the caller names the flag or
// variable that gave it.
func CheckCount(n int) error {
	if n < 1 {
		return errors.New("the shard count must be at least 1")
	}
	return checkMost(n, strconv.Itoa(n))
}

// checkMost reports a shard count above MaxShards, naming it as from writes it.
func checkMost(n int, from string) error {
	if n > MaxShards {
		return fmt.Errorf("the shard count %s is more than %d, the most a plan may be split into (an experiment has at most %d configs, so every shard past them would run nothing)", from, MaxShards, experiment.MaxConfigs)
	}
	return nil
}

// Shards splits an experiment's configs into n shards for n machines and returns, for each shard
// 0..n-1, the configs it runs, in plan order. It returns nil when n is less than 1 or more than
// MaxShards. A caller that needs one shard calls ShardConfigs, whose cost does not grow with n.
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
	if n < 1 || n > MaxShards {
		return nil
	}
	shardOf, _ := assign(configs, n)
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

// ShardConfigs returns the configs of shard i of n, in plan order, as Shards assigns them: empty (not
// nil) for a shard past the server configs, nil when i is not a shard of n. Its cost grows with
// the configs, not with n, so any n is safe to ask about.
func ShardConfigs(configs []experiment.Config, n, i int) []experiment.Config {
	if n < 1 || i < 0 || i >= n {
		return nil
	}
	shardOf, _ := assign(configs, n)
	mine := []experiment.Config{}
	for _, c := range configs {
		if shardOf[c.ServerID] == i {
			mine = append(mine, c)
		}
	}
	return mine
}

// assign returns the shard of each server config of configs split n ways (by ServerID, see
// Shards), and how many shards received one: min(n, server configs). Only those first shards
// are ever chosen: every server config sends at least its first request, so while a shard is
// empty it is the lightest, and the lowest empty shard is taken. Loads are kept for them alone,
// so that the cost follows the configs, never n.
func assign(configs []experiment.Config, n int) (map[string]int, int) {
	type server struct {
		id       string
		requests int
	}
	var servers []server
	index := map[string]int{}
	for _, c := range configs {
		s, ok := index[c.ServerID]
		if !ok {
			s = len(servers)
			index[c.ServerID] = s
			// The first request after the server's boot.
			servers = append(servers, server{id: c.ServerID, requests: 1})
		}
		servers[s].requests = experiment.AddSat(servers[s].requests, experiment.AddSat(max(c.Warmup, 0), max(c.Repetitions, 0)))
	}
	// A stable sort keeps plan order among server configs of equal size.
	slices.SortStableFunc(servers, func(a, b server) int { return cmp.Compare(b.requests, a.requests) })
	used := min(n, len(servers))
	load := make([]int, used)
	shardOf := make(map[string]int, len(servers))
	for _, s := range servers {
		lightest := 0
		for i := 1; i < used; i++ {
			if load[i] < load[lightest] {
				lightest = i
			}
		}
		shardOf[s.id] = lightest
		load[lightest] = experiment.AddSat(load[lightest], s.requests)
	}
	return shardOf, used
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

// Split records in p the assignment of its configs, cfgs, to n shards (see Shards). It refuses
// a count CheckCount refuses. Only the shards that receive a server config hold lists: the
// others are entries with no servers, no configs and no requests.
func (p *Plan) Split(cfgs []experiment.Config, n int) error {
	if err := CheckCount(n); err != nil {
		return err
	}
	shardOf, used := assign(cfgs, n)
	mine := make([][]experiment.Config, used)
	for _, c := range cfgs {
		i := shardOf[c.ServerID]
		mine[i] = append(mine[i], c)
	}
	p.Shards = make([]Shard, n)
	for i := range p.Shards {
		p.Shards[i] = Shard{Index: i, Servers: []string{}, Configs: []string{}}
	}
	for i, sc := range mine {
		s := &p.Shards[i]
		s.Requests = experiment.Requests(sc)
		for _, c := range sc {
			if !slices.Contains(s.Servers, c.ServerID) {
				s.Servers = append(s.Servers, c.ServerID)
			}
			s.Configs = append(s.Configs, c.ID)
		}
	}
	return nil
}

// shardOf maps the id of each config of a split plan to the index of its shard.
func (p *Plan) shardOf() map[string]int {
	m := map[string]int{}
	for _, s := range p.Shards {
		for _, id := range s.Configs {
			m[id] = s.Index
		}
	}
	return m
}

// The environment variables that `runner FILE --shard auto` reads.
const (
	// EnvJobIndex is the index of a pod of a Kubernetes Indexed Job, set by Kubernetes.
	EnvJobIndex = "JOB_COMPLETION_INDEX"
	// EnvShards is the shard count; an Indexed Job exposes none, so the exported Job sets it.
	EnvShards = "RUNNER_SHARDS"
	// EnvSlurmIndex is the task id of a Slurm job array, set by Slurm.
	EnvSlurmIndex = "SLURM_ARRAY_TASK_ID"
	// EnvSlurmMin is the array's lowest task id (an array may start at 1), set by Slurm.
	EnvSlurmMin = "SLURM_ARRAY_TASK_MIN"
	// EnvSlurmCount is the number of tasks of the array, set by Slurm.
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
)

// Which names the shard a machine runs.
type Which struct {
	Index int
	Count int
	// Source is where the index came from: "flag", EnvJobIndex or EnvSlurmIndex.
	Source string
}

// ParseShard reads the value of --shard: "I/N" (0 ≤ I < N ≤ MaxShards), "auto/N", or "auto".
// With auto the index comes from the environment, read through getenv: JOB_COMPLETION_INDEX (a
// Kubernetes Indexed Job) or else SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN when that is
// set (a Slurm job array). Plain auto takes the count from RUNNER_SHARDS or else
// SLURM_ARRAY_TASK_COUNT; with auto/N, a count in the environment must agree with N.
//
// Every number, from the flag or a variable, is read by readNumber: decimal digits alone, so
// that a value is refused in the same words from either source. An empty value is refused: a
// script that writes --shard "$IDX" with IDX unset would otherwise run the whole plan on every
// machine. The error says what is wrong and where the value came from.
func ParseShard(spec string, getenv func(string) string) (Which, error) {
	if spec == "" {
		return Which{}, errors.New(`--shard "" is empty: want I/N (shard I of N, from 0), auto/N or auto (is the variable meant to hold it unset?)`)
	}
	idx, count, ok := strings.Cut(spec, "/")
	if spec == "auto" {
		idx, count, ok = "auto", "", true
	}
	if !ok || idx == "" || count == "" && spec != "auto" {
		return Which{}, fmt.Errorf("--shard %q: want I/N (shard I of N, from 0), auto/N or auto", spec)
	}
	var w Which
	if count != "" {
		n, err := readCount(count, strconv.Quote(count))
		if err != nil {
			return Which{}, fmt.Errorf("--shard %q: %w", spec, err)
		}
		w.Count = n
	}
	if idx != "auto" {
		i, err := readNumber(idx, "shard index", strconv.Quote(idx))
		if err != nil {
			return Which{}, fmt.Errorf("--shard %q: %w", spec, err)
		}
		if i >= w.Count {
			return Which{}, fmt.Errorf("--shard %q: shard index %s is out of range: the shards of %d are numbered 0 to %d", spec, idx, w.Count, w.Count-1)
		}
		w.Index, w.Source = i, "flag"
		return w, nil
	}
	return indexFromEnv(spec, w, getenv)
}

// indexFromEnv completes w, whose count the flag may have given, from the environment.
func indexFromEnv(spec string, w Which, getenv func(string) string) (Which, error) {
	// from names a variable and its value, as the errors show it.
	from := func(name string) string { return name + "=" + strconv.Quote(getenv(name)) }
	// The count first: the index is checked against it.
	for _, name := range []string{EnvShards, EnvSlurmCount} {
		v := getenv(name)
		if v == "" {
			continue
		}
		n, err := readCount(v, from(name))
		if err != nil {
			return Which{}, fmt.Errorf("--shard %s: %w", spec, err)
		}
		if w.Count != 0 && n != w.Count {
			return Which{}, fmt.Errorf("--shard %s: %s=%d says %d shards, the flag %d", spec, name, n, n, w.Count)
		}
		w.Count = n
	}
	if w.Count == 0 {
		return Which{}, fmt.Errorf("--shard auto: no shard count: set %s (for a Kubernetes Indexed Job), run in a Slurm job array (%s), or give it as --shard auto/N", EnvShards, EnvSlurmCount)
	}

	w.Source = EnvJobIndex
	if getenv(EnvJobIndex) == "" {
		w.Source = EnvSlurmIndex
	}
	v := getenv(w.Source)
	if v == "" {
		return Which{}, fmt.Errorf("--shard %s: no shard index in the environment: neither %s (a Kubernetes Indexed Job) nor %s (a Slurm job array) is set; give the index as --shard I/%d", spec, EnvJobIndex, EnvSlurmIndex, w.Count)
	}
	i, err := readNumber(v, "shard index", from(w.Source))
	if err != nil {
		return Which{}, fmt.Errorf("--shard %s: %w", spec, err)
	}
	where := w.Source + "=" + v
	if w.Source == EnvSlurmIndex {
		if m := getenv(EnvSlurmMin); m != "" {
			lo, err := readNumber(m, "lowest task id of the array", from(EnvSlurmMin))
			if err != nil {
				return Which{}, fmt.Errorf("--shard %s: %w", spec, err)
			}
			i -= lo
			where += " minus " + EnvSlurmMin + "=" + m
		}
	}
	if i < 0 || i >= w.Count {
		return Which{}, fmt.Errorf("--shard %s: shard index %d (%s) is out of range: the shards of %d are numbered 0 to %d", spec, i, where, w.Count, w.Count-1)
	}
	w.Index = i
	return w, nil
}

// readNumber reads a shard index or count, what, as the flag or a variable gives it: decimal
// digits alone, with no sign, space or leading zero (but "0"), so that "+1", "01" and " 1" are
// refused alike from either source rather than read as 1 from one and refused by the other.
// from names the value in the error: "01" for the flag, JOB_COMPLETION_INDEX="01" for a
// variable. A number too long for an int saturates, to be refused as out of range.
func readNumber(v, what, from string) (int, error) {
	if v == "" || strings.Trim(v, "0123456789") != "" || len(v) > 1 && v[0] == '0' {
		return 0, fmt.Errorf("the %s %s is not a whole number written in decimal digits alone (no sign, space or leading zero)", what, from)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		// Digits alone fail only by being too many.
		n = math.MaxInt
	}
	return n, nil
}

// readCount reads a shard count with readNumber and checks it is between 1 and MaxShards.
func readCount(v, from string) (int, error) {
	n, err := readNumber(v, "shard count", from)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("the shard count %s is not a whole number of at least 1", from)
	}
	return n, checkMost(n, from)
}
