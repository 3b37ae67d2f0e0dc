package plan

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// shape builds configs from server sizes: sizes[s] lists the (warm-up + repetitions) of each
// config of server s; the configs follow one another in the order given by order (indexes into
// the flattened list), or server by server when order is nil.
func shape(sizes [][]int, order []int) []experiment.Config {
	var flat []experiment.Config
	for s, cs := range sizes {
		for k, n := range cs {
			flat = append(flat, experiment.Config{
				ID: fmt.Sprintf("c%d.%d", s, k), ServerID: fmt.Sprintf("s%d", s),
				Warmup: n % 2, Repetitions: n - n%2,
			})
		}
	}
	if order != nil {
		shuffled := make([]experiment.Config, len(flat))
		for i, j := range order {
			shuffled[i] = flat[j]
		}
		flat = shuffled
	}
	for i := range flat {
		flat[i].Index = i
	}
	return flat
}

// ids returns the config ids of each shard.
func ids(shards [][]experiment.Config) [][]string {
	out := make([][]string, len(shards))
	for i, s := range shards {
		out[i] = []string{}
		for _, c := range s {
			out[i] = append(out[i], c.ID)
		}
	}
	return out
}

func TestShards(t *testing.T) {
	tests := []struct {
		name  string
		sizes [][]int
		n     int
		want  [][]string
	}{
		{
			// Requests per server (one first request each): 10 8 7 5 4 3. LPT: 10→0, 8→1, 7→1
			// (15), 5→0 (15), 4→0 on a tie (19), 3→1 (18).
			name:  "lpt",
			sizes: [][]int{{9}, {7}, {6}, {4}, {3}, {2}},
			n:     2,
			want:  [][]string{{"c0.0", "c3.0", "c4.0"}, {"c1.0", "c2.0", "c5.0"}},
		},
		{
			name:  "equal servers go round in plan order",
			sizes: [][]int{{2, 2}, {4}, {3, 1}, {1, 1, 1, 1}},
			n:     3,
			want:  [][]string{{"c0.0", "c0.1", "c3.0", "c3.1", "c3.2", "c3.3"}, {"c1.0"}, {"c2.0", "c2.1"}},
		},
		{
			name:  "more shards than servers",
			sizes: [][]int{{5, 5}, {3}},
			n:     4,
			want:  [][]string{{"c0.0", "c0.1"}, {"c1.0"}, {}, {}},
		},
		{
			name:  "one shard holds everything",
			sizes: [][]int{{1}, {2}, {3}},
			n:     1,
			want:  [][]string{{"c0.0", "c1.0", "c2.0"}},
		},
		{
			name: "no configs",
			n:    2,
			want: [][]string{{}, {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(Shards(shape(tt.sizes, nil), tt.n)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Shards(%v, %d) = %v, want %v", tt.sizes, tt.n, got, tt.want)
			}
		})
	}
	for _, n := range []int{0, -1} {
		if got := Shards(shape([][]int{{1}}, nil), n); got != nil {
			t.Errorf("Shards(n=%d) = %v, want nil", n, got)
		}
	}
}

// randomShape draws an experiment of 1 to maxServers server configs, each of 1 to 6 configs of
// 0 to 60 requests, in a random plan order (the configs of one server need not be adjacent).
func randomShape(r *rand.Rand, maxServers int) []experiment.Config {
	sizes := make([][]int, 1+r.IntN(maxServers))
	total := 0
	for s := range sizes {
		sizes[s] = make([]int, 1+r.IntN(6))
		for k := range sizes[s] {
			sizes[s][k] = r.IntN(61)
		}
		total += len(sizes[s])
	}
	return shape(sizes, r.Perm(total))
}

// checkShards checks every property the assignment of cfgs to n shards must have, and returns
// the requests of each shard.
func checkShards(t *testing.T, cfgs []experiment.Config, n int) []int {
	t.Helper()
	shards := Shards(cfgs, n)
	if again := Shards(slices.Clone(cfgs), n); !reflect.DeepEqual(ids(again), ids(shards)) {
		t.Fatalf("two assignments of one plan differ: %v and %v", ids(shards), ids(again))
	}
	if len(shards) != n {
		t.Fatalf("%d shards, want %d", len(shards), n)
	}
	seen := map[string]int{}
	serverShard := map[string]int{}
	load := make([]int, n)
	for i, s := range shards {
		load[i] = experiment.Requests(s)
		for k, c := range s {
			seen[c.ID]++
			if j, ok := serverShard[c.ServerID]; ok && j != i {
				t.Fatalf("server %s is split between shards %d and %d", c.ServerID, j, i)
			}
			serverShard[c.ServerID] = i
			if k > 0 && s[k-1].Index >= c.Index {
				t.Fatalf("shard %d runs config %d after config %d: not in plan order", i, c.Index, s[k-1].Index)
			}
		}
	}
	for _, c := range cfgs {
		if seen[c.ID] != 1 {
			t.Fatalf("config %s is in %d shards, want 1", c.ID, seen[c.ID])
		}
	}
	if len(seen) != len(cfgs) {
		t.Fatalf("the shards hold %d configs, the plan %d", len(seen), len(cfgs))
	}

	servers := map[string]int{}
	for _, c := range cfgs {
		if _, ok := servers[c.ServerID]; !ok {
			servers[c.ServerID] = 1
		}
		servers[c.ServerID] += c.Warmup + c.Repetitions
	}
	largest, total := 0, 0
	for _, r := range servers {
		largest = max(largest, r)
		total += r
	}
	if sum := sumInts(load); sum != total {
		t.Fatalf("the shards send %d requests, the plan %d", sum, total)
	}
	hi, lo := slices.Max(load), slices.Min(load)
	if hi-lo > largest {
		t.Fatalf("shard loads %v: max − min = %d, more than the largest server config's %d requests", load, hi-lo, largest)
	}
	// Greedy list scheduling: the busiest shard was the least busy one when it got its last
	// server, so it sends at most total/n + (1 − 1/n)·largest, within largest of the lower bound
	// max(total/n, largest) of any assignment.
	if float64(hi) > float64(total)/float64(n)+float64(largest)*float64(n-1)/float64(n)+1e-9 {
		t.Fatalf("shard loads %v: busiest %d exceeds total/n + (1 − 1/n)·largest = %d/%d + %d·(%d−1)/%d", load, hi, total, n, largest, n, n)
	}
	return load
}

func sumInts(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// optimal returns the smallest busiest-shard load over every assignment of the server sizes to
// n shards, by exhaustive search.
func optimal(sizes []int, n int) int {
	best := sumInts(sizes)
	load := make([]int, n)
	var place func(i int)
	place = func(i int) {
		if slices.Max(load) >= best {
			return
		}
		if i == len(sizes) {
			best = slices.Max(load)
			return
		}
		for s := range load {
			load[s] += sizes[i]
			place(i + 1)
			load[s] -= sizes[i]
			if load[s] == 0 {
				break // the empty shards are interchangeable
			}
		}
	}
	place(0)
	return best
}

// serverSizes returns the requests of each server config of cfgs.
func serverSizes(cfgs []experiment.Config) []int {
	index := map[string]int{}
	var sizes []int
	for _, c := range cfgs {
		i, ok := index[c.ServerID]
		if !ok {
			i = len(sizes)
			index[c.ServerID] = i
			sizes = append(sizes, 1)
		}
		sizes[i] += c.Warmup + c.Repetitions
	}
	return sizes
}

func TestShardsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 3))
	for trial := range 3000 {
		cfgs := randomShape(r, 16)
		n := 1 + r.IntN(12)
		t.Run(fmt.Sprintf("%d", trial), func(t *testing.T) { checkShards(t, cfgs, n) })
	}
}

func TestShardsWithinFourThirdsOfOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 4))
	for trial := range 600 {
		cfgs := randomShape(r, 8)
		n := 2 + r.IntN(3)
		load := checkShards(t, cfgs, n)
		opt := optimal(serverSizes(cfgs), n)
		// Graham: LPT ≤ (4/3 − 1/(3n))·OPT.
		if bound := (4.0/3.0 - 1.0/(3.0*float64(n))) * float64(opt); float64(slices.Max(load)) > bound+1e-9 {
			t.Errorf("trial %d: busiest shard %d requests (loads %v), optimal %d: above LPT's bound %.2f", trial, slices.Max(load), load, opt, bound)
		}
	}
}

// FuzzShards checks the assignment's properties over shapes drawn from the fuzzer's seed.
func FuzzShards(f *testing.F) {
	f.Add(uint64(1), uint8(3))
	f.Add(uint64(42), uint8(1))
	f.Add(uint64(7), uint8(40))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		checkShards(t, randomShape(r, 24), 1+int(n%32))
	})
}

func TestFingerprint(t *testing.T) {
	a := Fingerprint("abc", 3)
	if len(a) != 64 || a != Fingerprint("abc", 3) {
		t.Errorf("fingerprint %q is not a stable sha256", a)
	}
	for _, other := range []string{Fingerprint("abc", 4), Fingerprint("abd", 3), Fingerprint("abc3", 0)} {
		if other == a {
			t.Errorf("fingerprint %s shared by another plan", a)
		}
	}
}

func TestSplitEncodings(t *testing.T) {
	p := testPlan(t, shardYAML)
	cfgs := make([]experiment.Config, len(p.Configs))
	for i, c := range p.Configs {
		cfgs[i] = experiment.Config{ID: c.ID, ServerID: c.ServerID, Index: c.Index, Warmup: c.Warmup, Repetitions: c.Repetitions}
	}
	if err := p.Split(cfgs, 3); err != nil {
		t.Fatal(err)
	}
	if len(p.Shards) != 3 || len(p.Shards[2].Configs) != 0 || p.Shards[2].Requests != 0 {
		t.Fatalf("shards %+v, want 3, the last empty", p.Shards)
	}
	total := 0
	for _, s := range p.Shards {
		total += s.Requests
	}
	if total != p.Totals.Requests {
		t.Errorf("the shards send %d requests, the plan %d", total, p.Totals.Requests)
	}

	var text bytes.Buffer
	if err := NewTextEncoder(&text).Encode(p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n3 shards, balanced by requests:\n", "shard  servers  configs  requests  server ids\n",
		fmt.Sprintf("\n0      1        2        %d", p.Shards[0].Requests), "\n2      0        0        0         - (an empty folder)\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	var js bytes.Buffer
	if err := NewJSONEncoder(&js).Encode(p); err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Shards, p.Shards) {
		t.Errorf("json shards %+v, want %+v", back.Shards, p.Shards)
	}

	var cs bytes.Buffer
	if err := NewCSVEncoder(&cs).Encode(p); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if head := rows[0][len(rows[0])-2:]; !reflect.DeepEqual(head, []string{"shard", "shard_requests"}) {
		t.Fatalf("csv header ends %v", head)
	}
	for _, row := range rows[1:] {
		id, shard := row[1], row[len(row)-2]
		if want := fmt.Sprint(p.shardOf()[id]); shard != want {
			t.Errorf("config %s: shard %s, want %s", id, shard, want)
		}
	}

	// Without shards, the plan's output is what it was.
	q := testPlan(t, shardYAML)
	js.Reset()
	if err := NewJSONEncoder(&js).Encode(q); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), `"shards"`) {
		t.Errorf("json of an unsplit plan names shards:\n%s", js.String())
	}
}

// shardYAML has two server configs (two max_model_len), of two configs each.
const shardYAML = `version: 1
name: shard-test
server:
  engine: sim
  model: sim-model
request:
  api: completions
  prompt_tokens: 16
matrix:
  server.max_model_len: [512, 1024]
  request.max_tokens: [8, 16]
warmup: 1
repetitions: 2
`

func TestParseShard(t *testing.T) {
	tests := []struct {
		spec string
		env  map[string]string
		want Which
		err  string // a part of the error, "" for none
	}{
		{spec: "0/1", want: Which{0, 1, "flag"}},
		{spec: "2/3", want: Which{2, 3, "flag"}},
		{spec: "2/3", env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, want: Which{2, 3, "flag"}},
		{spec: "3/3", err: `--shard "3/3": shard index 3 is out of range: the shards of 3 are numbered 0 to 2`},
		{spec: "-1/3", err: `--shard "-1/3": the shard index "-1" is not a whole number written in decimal digits alone (no sign, space or leading zero)`},
		{spec: "+1/3", err: `--shard "+1/3": the shard index "+1" is not a whole number written in decimal digits alone`},
		{spec: "01/3", err: `the shard index "01" is not a whole number written in decimal digits alone`},
		{spec: "1/03", err: `the shard count "03" is not a whole number written in decimal digits alone`},
		{spec: " 1/3", err: `the shard index " 1" is not a whole number written in decimal digits alone`},
		{spec: "1 /3", err: `the shard index "1 " is not a whole number written in decimal digits alone`},
		{spec: "1/3 ", err: `the shard count "3 " is not a whole number written in decimal digits alone`},
		{spec: "1/+3", err: `the shard count "+3" is not a whole number written in decimal digits alone`},
		{spec: "0x1/3", err: `the shard index "0x1" is not a whole number`},
		{spec: "1_0/30", err: `the shard index "1_0" is not a whole number`},
		{spec: "１/3", err: `the shard index "１" is not a whole number`},
		{spec: "0/10000", want: Which{0, 10000, "flag"}},
		{spec: "0/10001", err: `--shard "0/10001": the shard count "10001" is more than 10000, the most a plan may be split into`},
		{spec: "0/99999999999999999999999", err: `the shard count "99999999999999999999999" is more than 10000`},
		{spec: "99999999999999999999999/3", err: `--shard "99999999999999999999999/3": shard index 99999999999999999999999 is out of range: the shards of 3 are numbered 0 to 2`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": " 1"}, err: `--shard auto/3: the shard index JOB_COMPLETION_INDEX=" 1" is not a whole number written in decimal digits alone (no sign, space or leading zero)`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "01"}, err: `the shard index JOB_COMPLETION_INDEX="01" is not a whole number written in decimal digits alone`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "+1"}, err: `the shard index JOB_COMPLETION_INDEX="+1" is not a whole number`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "1 "}, err: `the shard index JOB_COMPLETION_INDEX="1 " is not a whole number`},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "-1"}, err: `the shard index SLURM_ARRAY_TASK_ID="-1" is not a whole number`},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "RUNNER_SHARDS": " 2"}, err: `--shard auto: the shard count RUNNER_SHARDS=" 2" is not a whole number written in decimal digits alone`},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "RUNNER_SHARDS": "10001"}, err: `--shard auto: the shard count RUNNER_SHARDS="10001" is more than 10000, the most a plan may be split into`},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "02"}, err: `the shard count SLURM_ARRAY_TASK_COUNT="02" is not a whole number`},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "+1"}, err: `the lowest task id of the array SLURM_ARRAY_TASK_MIN="+1" is not a whole number`},
		{spec: "0/0", err: `--shard "0/0": the shard count "0" is not a whole number of at least 1`},
		{spec: "x", err: `--shard "x": want I/N (shard I of N, from 0), auto/N or auto`},
		{spec: "", err: `--shard "" is empty: want I/N (shard I of N, from 0), auto/N or auto`},
		{spec: "1/", err: "want I/N"},
		{spec: "/3", err: "want I/N"},
		{spec: "a/3", err: `the shard index "a" is not a whole number`},
		{spec: "1/b", err: `the shard count "b" is not a whole number`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "1"}, want: Which{1, 3, "JOB_COMPLETION_INDEX"}},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "2"}, want: Which{2, 3, "SLURM_ARRAY_TASK_ID"}},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1"}, want: Which{2, 3, "SLURM_ARRAY_TASK_ID"}},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "SLURM_ARRAY_TASK_ID": "2"}, want: Which{0, 3, "JOB_COMPLETION_INDEX"}},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "RUNNER_SHARDS": "4"}, want: Which{3, 4, "JOB_COMPLETION_INDEX"}},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2"}, want: Which{1, 2, "SLURM_ARRAY_TASK_ID"}},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": " 1 ", "SLURM_ARRAY_TASK_COUNT": "2"}, err: `the shard index SLURM_ARRAY_TASK_ID=" 1 " is not a whole number`},
		{spec: "auto/3", err: "--shard auto/3: no shard index in the environment: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (a Slurm job array) is set; give the index as --shard I/3"},
		{spec: "auto", env: map[string]string{"RUNNER_SHARDS": "3"}, err: "no shard index in the environment"},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, err: "--shard auto: no shard count: set RUNNER_SHARDS"},
		{spec: "auto", err: "no shard count"},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, err: "--shard auto/3: shard index 3 (JOB_COMPLETION_INDEX=3) is out of range: the shards of 3 are numbered 0 to 2"},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "1"}, err: "shard index -1 (SLURM_ARRAY_TASK_ID=0 minus SLURM_ARRAY_TASK_MIN=1) is out of range"},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "one"}, err: `JOB_COMPLETION_INDEX="one" is not a whole number`},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "x"}, err: `SLURM_ARRAY_TASK_MIN="x" is not a whole number`},
		{spec: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "RUNNER_SHARDS": "4"}, err: "RUNNER_SHARDS=4 says 4 shards, the flag 3"},
		{spec: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"}, err: "SLURM_ARRAY_TASK_COUNT=2 says 2 shards, the flag 3"},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "RUNNER_SHARDS": "0"}, err: `--shard auto: the shard count RUNNER_SHARDS="0" is not a whole number of at least 1`},
	}
	for _, tt := range tests {
		t.Run(tt.spec+fmt.Sprint(tt.env), func(t *testing.T) {
			got, err := ParseShard(tt.spec, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseShard(%q) = %+v, %v; want an error with %q", tt.spec, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseShard(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
			}
		})
	}
}

// TestParseShardSourcesAgree checks that a number the flag refuses is refused from the
// environment too, in the same words but for the source it names, and one the flag accepts is
// accepted from the environment.
func TestParseShardSourcesAgree(t *testing.T) {
	for _, v := range []string{"1", "0", "2", " 1", "1 ", "01", "+1", "-1", "1.0", "1e0", "٣", "x", "00"} {
		fromFlag, ferr := ParseShard(v+"/3", func(string) string { return "" })
		fromEnv, eerr := ParseShard("auto/3", func(k string) string { return map[string]string{EnvJobIndex: v}[k] })
		if (ferr == nil) != (eerr == nil) {
			t.Errorf("index %q: from the flag %v, from %s %v", v, ferr, EnvJobIndex, eerr)
			continue
		}
		if ferr == nil {
			if fromFlag.Index != fromEnv.Index {
				t.Errorf("index %q: %d from the flag, %d from %s", v, fromFlag.Index, fromEnv.Index, EnvJobIndex)
			}
			continue
		}
		fbody := strings.Replace(ferr.Error(), fmt.Sprintf("--shard %q: ", v+"/3"), "", 1)
		ebody := strings.Replace(eerr.Error(), "--shard auto/3: ", "", 1)
		if want := strings.Replace(fbody, strconv.Quote(v), EnvJobIndex+"="+strconv.Quote(v), 1); ebody != want {
			t.Errorf("index %q: from the flag %q, from %s %q: want the same words", v, ferr, EnvJobIndex, eerr)
		}
	}
}

// FuzzParseShard checks that any --shard value either fails or names a shard in range.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "2/3", "auto", "auto/4", "x", "3/3", "-0/1", "+1/2"} {
		f.Add(s, "1", "")
	}
	f.Fuzz(func(t *testing.T, spec, index, count string) {
		env := map[string]string{"JOB_COMPLETION_INDEX": index, "RUNNER_SHARDS": count}
		w, err := ParseShard(spec, func(k string) string { return env[k] })
		if err == nil && (w.Index < 0 || w.Index >= w.Count || w.Source == "") {
			t.Errorf("ParseShard(%q) = %+v: not a shard", spec, w)
		}
	})
}

// BenchmarkShards splits a plan of 10,000 configs on 1,000 server configs over 64 shards.
func BenchmarkShards(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := make([][]int, 1000)
	for s := range sizes {
		sizes[s] = make([]int, 10)
		for k := range sizes[s] {
			sizes[s][k] = r.IntN(50)
		}
	}
	cfgs := shape(sizes, r.Perm(10000))
	b.ResetTimer()
	for range b.N {
		Shards(cfgs, 64)
	}
}

// allocated returns the bytes of heap that f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestShardsCostFollowsConfigs asks for a split of three server configs into a hundred million
// shards: what it allocates must follow the configs, never the shard count (a machine was once
// killed for memory planning that many), and a plan refuses a count above MaxShards.
func TestShardsCostFollowsConfigs(t *testing.T) {
	const huge = 100_000_000
	cfgs := shape([][]int{{5, 5}, {3}, {2, 2, 2}}, nil)
	const most = 1 << 20 // far above what three server configs need, far below a slot per shard
	if n := allocated(func() { Shards(cfgs, huge) }); n > most {
		t.Errorf("Shards(%d) allocated %d bytes", huge, n)
	}
	var got []experiment.Config
	if n := allocated(func() { got = ShardConfigs(cfgs, huge, 1) }); n > most {
		t.Errorf("ShardConfigs(%d, 1) allocated %d bytes", huge, n)
	}
	if want := Shards(cfgs, 3)[1]; !reflect.DeepEqual(ids([][]experiment.Config{got}), ids([][]experiment.Config{want})) {
		t.Errorf("shard 1 of %d holds %v, want %v, as shard 1 of 3", huge, ids([][]experiment.Config{got}), ids([][]experiment.Config{want}))
	}
	if empty := ShardConfigs(cfgs, huge, huge-1); empty == nil || len(empty) != 0 {
		t.Errorf("the last shard of %d = %v, want empty", huge, empty)
	}
	p := &Plan{}
	var err error
	if n := allocated(func() { err = p.Split(cfgs, huge) }); n > most {
		t.Errorf("Split(%d) allocated %d bytes", huge, n)
	}
	if want := "the shard count 100000000 is more than 10000, the most a plan may be split into"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Split(%d) = %v, want an error holding %q", huge, err, want)
	}
	if err := CheckCount(MaxShards); err != nil {
		t.Errorf("CheckCount(MaxShards) = %v", err)
	}
}

// TestShardMatchesShards checks that the shard ShardConfigs returns is the one Shards assigns, for every
// index of every count up to past the server configs.
func TestShardMatchesShards(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 200 {
		cfgs := randomShape(r, 10)
		for n := 1; n <= 14; n++ {
			all := Shards(cfgs, n)
			for i := range n {
				if got := ShardConfigs(cfgs, n, i); !reflect.DeepEqual(got, all[i]) {
					t.Fatalf("ShardConfigs(n=%d, %d) = %v, want %v", n, i, ids([][]experiment.Config{got}), ids(all[i:i+1]))
				}
			}
			if ShardConfigs(cfgs, n, n) != nil || ShardConfigs(cfgs, n, -1) != nil {
				t.Fatalf("ShardConfigs(n=%d) of an index out of range is not nil", n)
			}
		}
	}
}
