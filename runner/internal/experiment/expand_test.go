package experiment

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mustExpand parses a file and expands it, failing the test on any error.
func mustExpand(t *testing.T, yaml string) []Config {
	t.Helper()
	e, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatalf("Expand: %v", err)
	}
	return cfgs
}

// labels lists the configs' labels.
func labels(cfgs []Config) []string {
	var out []string
	for _, c := range cfgs {
		out = append(out, c.Label)
	}
	return out
}

func TestExpandOrder(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"no matrix", head + okServer + okRequest, []string{"default"}},
		{"one axis keeps the file's order", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [64, 16, 256]\n",
			[]string{"max_tokens=64", "max_tokens=16", "max_tokens=256"}},
		{"first axis varies slowest", head + okServer + "request:\n  prompt_tokens: 8\nmatrix:\n  server.dtype: [half, float]\n  request.max_tokens: [16, 64, 256]\n",
			[]string{"dtype=half,max_tokens=16", "dtype=half,max_tokens=64", "dtype=half,max_tokens=256", "dtype=float,max_tokens=16", "dtype=float,max_tokens=64", "dtype=float,max_tokens=256"}},
		{"exclude drops matching points", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  server.dtype: [half, float]\n  exclude:\n    - {request.prompt_tokens: 64, server.dtype: float}\n",
			[]string{"prompt_tokens=16,dtype=half", "prompt_tokens=16,dtype=float", "prompt_tokens=64,dtype=half"}},
		{"a partial exclude drops every match", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  server.dtype: [half, float]\n  exclude:\n    - {server.dtype: float}\n",
			[]string{"prompt_tokens=16,dtype=half", "prompt_tokens=64,dtype=half"}},
		{"include extends matching points", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  include:\n    - {request.prompt_tokens: 64, request.temperature: 0.5}\n",
			[]string{"prompt_tokens=16", "prompt_tokens=64,temperature=0.5"}},
		{"include adds a point of its own", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  include:\n    - {request.prompt_tokens: 900, request.max_tokens: 4}\n",
			[]string{"prompt_tokens=16", "prompt_tokens=64", "prompt_tokens=900,max_tokens=4"}},
		{"include of only new fields extends every point", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  include:\n    - {request.seed: 7}\n",
			[]string{"prompt_tokens=16,seed=7", "prompt_tokens=64,seed=7"}},
		{"include after exclude", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 64]\n  exclude:\n    - {request.prompt_tokens: 64}\n  include:\n    - {request.prompt_tokens: 64, request.seed: 1}\n",
			[]string{"prompt_tokens=16", "prompt_tokens=64,seed=1"}},
		{"named prompts are an implicit first axis", head + okServer + "request:\n  prompts:\n    - {name: short, text: Hi}\n    - {name: long, text: Tell me a story}\nmatrix:\n  request.max_tokens: [8, 16]\n",
			[]string{"prompt_name=short,max_tokens=8", "prompt_name=short,max_tokens=16", "prompt_name=long,max_tokens=8", "prompt_name=long,max_tokens=16"}},
		{"an explicit prompt axis chooses and orders", head + okServer + "request:\n  max_tokens: 8\n  prompts:\n    - {name: a, text: A}\n    - {name: b, text: B}\n    - {name: c, text: C}\nmatrix:\n  request.prompt_name: [c, a]\n",
			[]string{"prompt_name=c", "prompt_name=a"}},
		{"one named prompt chosen", head + okServer + "request:\n  max_tokens: 8\n  prompt_name: b\n  prompts:\n    - {name: a, text: A}\n    - {name: b, text: B}\n",
			[]string{"default"}},
		{"long literal prompts are shortened in labels", head + okServer + "request:\n  max_tokens: 8\nmatrix:\n  request.prompt: [\"Once upon a time, in a land far away\", \"Hi\"]\n",
			[]string{"prompt=Once upon a time, in ...", "prompt=Hi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := mustExpand(t, tc.yaml)
			if got := labels(cfgs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("labels:\n got %q\nwant %q", got, tc.want)
			}
			for i, c := range cfgs {
				if c.Index != i {
					t.Errorf("config %d has Index %d", i, c.Index)
				}
			}
		})
	}
}

func TestExpandResolvesConfigs(t *testing.T) {
	cfgs := mustExpand(t, head+"server:\n  model: m\n  max_model_len: 1024\n  env: {B: 2, A: x}\nrequest:\n  prompts:\n    - {name: short, text: Hi}\n    - {name: long, text: Tell me a story}\n  max_tokens: 8\n  ignore_eos: true\n  stop: [\"\\n\"]\nmatrix:\n  server.dtype: [half]\n")
	if len(cfgs) != 2 {
		t.Fatalf("got %d configs, want 2", len(cfgs))
	}
	c := cfgs[1]
	if c.Request.Prompt != "Tell me a story" || c.Request.PromptName != "long" || c.Request.PromptTokens != 0 || len(c.Request.Prompts) != 0 {
		t.Errorf("prompt not resolved: %+v", c.Request)
	}
	wantAxes := []AxisValue{{"request.prompt_name", "long"}, {"server.dtype", "half"}}
	if !reflect.DeepEqual(c.Axes, wantAxes) {
		t.Errorf("axes: got %v, want %v", c.Axes, wantAxes)
	}
	if c.Server.Dtype != "half" || c.Server.MaxModelLen != 1024 || c.Server.Env["B"] != "2" {
		t.Errorf("server: %+v", c.Server)
	}
	if c.Request.IgnoreEOS == nil || !*c.Request.IgnoreEOS || !reflect.DeepEqual(c.Request.Stop, []string{"\n"}) {
		t.Errorf("request: %+v", c.Request)
	}
	// Defaults.
	s := c.Server
	if s.Engine != "vllm" || s.Host != "127.0.0.1" || s.Port != 0 || s.ReadyTimeout != 10*time.Minute || s.Entrypoint != "serve" {
		t.Errorf("server defaults: %+v", s)
	}
	if c.Request.API != "completions" || c.Repetitions != 10 || c.Warmup != 1 || c.Cache != "reset" || c.Timeouts.Request != 5*time.Minute {
		t.Errorf("defaults: api %q, repetitions %d, warmup %d, cache %q, timeout %v", c.Request.API, c.Repetitions, c.Warmup, c.Cache, c.Timeouts.Request)
	}
	if c.ServerID != cfgs[0].ServerID {
		t.Errorf("request axes must not change the server id: %s vs %s", c.ServerID, cfgs[0].ServerID)
	}
	if c.ID == cfgs[0].ID {
		t.Errorf("different prompts gave the same id %s", c.ID)
	}
}

func TestEngineDefaults(t *testing.T) {
	tests := []struct {
		server string
		check  func(Server) bool
	}{
		{"server:\n  engine: sim\n", func(s Server) bool {
			return s.Model == "sim-model" && s.ReadyTimeout == 30*time.Second && s.Host == "127.0.0.1" && s.Entrypoint == ""
		}},
		{"server:\n  engine: endpoint\n  model: m\n  url: http://h:8000\n", func(s Server) bool {
			return s.Host == "" && s.ReadyTimeout == 30*time.Second && s.ReadyPath == "/v1/models"
		}},
		{"server:\n  engine: command\n  model: m\n  command: [srv, --port, \"{port}\"]\n", func(s Server) bool {
			return s.ReadyPath == "/v1/models" && s.ReadyTimeout == 10*time.Minute && s.Host == "127.0.0.1"
		}},
		{"server:\n  engine: vllm\n  model: m\n  entrypoint: api_server\n  ready_timeout: 20m\n", func(s Server) bool {
			return s.Entrypoint == "api_server" && s.ReadyTimeout == 20*time.Minute
		}},
	}
	for _, tc := range tests {
		cfgs := mustExpand(t, head+tc.server+okRequest)
		if !tc.check(cfgs[0].Server) {
			t.Errorf("%s: unexpected defaults %+v", tc.server, cfgs[0].Server)
		}
	}
}

// TestCacheDefault checks that a config defaults to cache: reset only where the engine can
// empty its prefix cache, and records keep otherwise, so that the recorded mode is what
// happened.
func TestCacheDefault(t *testing.T) {
	const command = "server:\n  engine: command\n  model: m\n  command: [srv, --port, \"{port}\"]\n"
	tests := []struct {
		name, yaml string
		want       []string // cache per config, in expansion order
	}{
		{"vllm", head + okServer + okRequest, []string{"reset"}},
		{"sim", head + "server:\n  engine: sim\n" + okRequest, []string{"reset"}},
		{"ollama", head + "server:\n  engine: ollama\n  model: m.gguf\n" + okRequest, []string{"reset"}},
		{"endpoint", head + "server:\n  engine: endpoint\n  model: m\n  url: http://h:8000\n" + okRequest, []string{"reset"}},
		{"command", head + command + okRequest, []string{"keep"}},
		{"llamacpp", head + "server:\n  engine: llamacpp\n  model: m.gguf\n" + okRequest, []string{"reset"}},
		{"vllm without dev mode", head + "server:\n  model: m\n  env: {VLLM_SERVER_DEV_MODE: \"0\"}\n" + okRequest, []string{"keep"}},
		{"sim without dev mode but the flag", head + "server:\n  engine: sim\n  args: [--dev-mode]\n  env: {VLLM_SERVER_DEV_MODE: \"0\"}\n" + okRequest, []string{"reset"}},
		{"engine axis", head + "server:\n  model: m.gguf\n" + okRequest + "matrix:\n  server.engine: [sglang, vllm]\n", []string{"reset", "reset"}},
		{"engine axis without dev mode", head + "server:\n  model: m\n  env: {VLLM_SERVER_DEV_MODE: \"0\"}\n" + okRequest + "matrix:\n  server.engine: [sglang, vllm]\n", []string{"reset", "keep"}},
		{"explicit keep", head + command + okRequest + "cache: keep\n", []string{"keep"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := mustExpand(t, tc.yaml)
			var got []string
			for _, c := range cfgs {
				got = append(got, c.Cache)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cache %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWarmupZeroIsKept(t *testing.T) {
	cfgs := mustExpand(t, head+okServer+okRequest+"warmup: 0\n")
	if cfgs[0].Warmup != 0 {
		t.Errorf("warmup: got %d, want 0", cfgs[0].Warmup)
	}
}

func TestServerIDs(t *testing.T) {
	cfgs := mustExpand(t, head+okServer+"request:\n  prompt_tokens: 16\nmatrix:\n  server.dtype: [half, float]\n  request.max_tokens: [8, 16]\n")
	byServer := map[string][]string{}
	for _, c := range cfgs {
		byServer[c.ServerID] = append(byServer[c.ServerID], c.Label)
	}
	if len(byServer) != 2 {
		t.Fatalf("got %d server ids, want 2: %v", len(byServer), byServer)
	}
	for id, ls := range byServer {
		if len(ls) != 2 || strings.Split(ls[0], ",")[0] != strings.Split(ls[1], ",")[0] {
			t.Errorf("server %s groups %v; want the two configs of one dtype", id, ls)
		}
	}
}

// TestStableIDs checks that a config's id depends on its content only.
func TestStableIDs(t *testing.T) {
	idsOf := func(yaml string) []string {
		var out []string
		for _, c := range mustExpand(t, yaml) {
			out = append(out, c.ID+"/"+c.ServerID)
		}
		return out
	}
	minimal := head + "server:\n  model: m\n  env: {A: \"1\", B: x}\nrequest:\n  prompt: hi\n  max_tokens: 8\n  extra: {top_p: 0.9, top_k: 5}\n"
	base := idsOf(minimal)

	same := map[string]string{
		"another name and description": "version: 1\nname: other\ndescription: x\n" + strings.TrimPrefix(minimal, head),
		"explicit defaults": head + "server:\n  engine: vllm\n  model: m\n  host: 127.0.0.1\n  port: 0\n  entrypoint: serve\n  ready_timeout: 10m\n  env: {A: \"1\", B: x}\n" +
			"request:\n  api: completions\n  prompt: hi\n  max_tokens: 8\n  extra: {top_p: 0.9, top_k: 5}\nrepetitions: 10\nwarmup: 1\ncache: reset\ntimeouts:\n  request: 5m\norder: sequential\n",
		"keys in another order":       head + "request:\n  extra: {top_k: 5, top_p: 0.9}\n  max_tokens: 8\n  prompt: hi\nserver:\n  env: {B: x, A: 1}\n  model: m\n",
		"durations written otherwise": head + "server:\n  model: m\n  ready_timeout: 600s\n  env: {A: \"1\", B: x}\nrequest:\n  prompt: hi\n  max_tokens: 8\n  extra: {top_p: 0.9, top_k: 5}\ntimeouts:\n  request: 300s\n",
		"order of the experiment":     minimal + "order: {mode: shuffled, seed: 3}\n",
	}
	for name, yaml := range same {
		if got := idsOf(yaml); !reflect.DeepEqual(got, base) {
			t.Errorf("%s: ids %v, want %v", name, got, base)
		}
	}
	// The same content at another position of a matrix keeps its id.
	swept := idsOf(head + "server:\n  model: m\n  env: {A: \"1\", B: x}\nrequest:\n  prompt: hi\n  extra: {top_p: 0.9, top_k: 5}\nmatrix:\n  request.max_tokens: [4, 8]\n")
	if swept[1] != base[0] {
		t.Errorf("a config swept to the same content: id %s, want %s", swept[1], base[0])
	}

	differ := map[string]string{
		"max_tokens":  strings.Replace(minimal, "max_tokens: 8", "max_tokens: 9", 1),
		"prompt":      strings.Replace(minimal, "prompt: hi", "prompt: hello", 1),
		"env value":   strings.Replace(minimal, "B: x", "B: y", 1),
		"extra value": strings.Replace(minimal, "top_k: 5", "top_k: 6", 1),
		"repetitions": minimal + "repetitions: 5\n",
		"warmup":      minimal + "warmup: 0\n",
		"cache":       minimal + "cache: keep\n",
		"timeout":     minimal + "timeouts:\n  request: 1m\n",
	}
	for name, yaml := range differ {
		got := idsOf(yaml)
		if got[0] == base[0] {
			t.Errorf("changing %s kept the id %s", name, got[0])
		}
		serverChanged := got[0][strings.Index(got[0], "/"):] != base[0][strings.Index(base[0], "/"):]
		if wantChanged := name == "env value"; serverChanged != wantChanged {
			t.Errorf("changing %s: server id changed %v, want %v", name, serverChanged, wantChanged)
		}
	}
}

// TestIDIsPinned guards the id scheme itself: ids join result folders across runs and machines,
// so a change to the canonical encoding must be deliberate. The expected values were computed
// once from this file with the encoding documented in the README.
func TestIDIsPinned(t *testing.T) {
	cfgs := mustExpand(t, head+"server:\n  model: TinyLlama/TinyLlama-1.1B-Chat-v1.0\n  dtype: half\n  max_model_len: 1024\nrequest:\n  prompt: KV caching helps inference servers because\n  max_tokens: 100\n")
	c := cfgs[0]
	canon, sid, err := canonical(&c)
	if err != nil {
		t.Fatal(err)
	}
	wantServer := `{"engine":"vllm","model":"TinyLlama/TinyLlama-1.1B-Chat-v1.0","dtype":"half","max_model_len":1024,"ready_timeout":"10m0s","host":"127.0.0.1","entrypoint":"serve"}`
	if string(sid) != wantServer {
		t.Errorf("server encoding:\n got %s\nwant %s", sid, wantServer)
	}
	wantConfig := `{"server":` + wantServer + `,"request":{"api":"completions","prompt":"KV caching helps inference servers because","max_tokens":100},"repetitions":10,"warmup":1,"cache":"reset","timeouts":{"request":"5m0s"}}`
	if string(canon) != wantConfig {
		t.Errorf("config encoding:\n got %s\nwant %s", canon, wantConfig)
	}
	if c.ID != hash(canon) || c.ServerID != hash(sid) || len(c.ID) != 12 {
		t.Errorf("ids %s/%s are not the first 12 hex digits of the encodings' sha256", c.ID, c.ServerID)
	}
}

func TestConfigsDoNotShare(t *testing.T) {
	cfgs := mustExpand(t, head+"server:\n  model: m\n  args: [--a]\n  env: {A: x}\nrequest:\n  prompt: hi\n  stop: [s]\n  extra: {k: v}\nmatrix:\n  request.max_tokens: [1, 2]\n")
	cfgs[0].Server.Args[0] = "changed"
	cfgs[0].Server.Env["A"] = "changed"
	cfgs[0].Request.Stop[0] = "changed"
	cfgs[0].Request.Extra["k"] = "changed"
	c := cfgs[1]
	if c.Server.Args[0] != "--a" || c.Server.Env["A"] != "x" || c.Request.Stop[0] != "s" || c.Request.Extra["k"] != "v" {
		t.Errorf("configs share slices or maps: %+v %+v", c.Server, c.Request)
	}
}

// TestExpandBuiltInCode checks Expand on an experiment that was not read from a file: its
// problems are reported by field path, without a position.
func TestExpandBuiltInCode(t *testing.T) {
	e := &Experiment{
		Name:    "code",
		Server:  Server{Engine: "sim"},
		Request: Request{PromptTokens: 16},
		Matrix: Matrix{Axes: []Axis{
			{Path: "request.max_tokens", Values: []any{8, int64(16)}},
		}},
		Repetitions: 3,
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(cfgs); !reflect.DeepEqual(got, []string{"max_tokens=8", "max_tokens=16"}) {
		t.Errorf("labels %v", got)
	}
	if cfgs[0].Server.Model != "sim-model" || cfgs[1].Request.MaxTokens != 16 || cfgs[0].Repetitions != 3 {
		t.Errorf("configs: %+v", cfgs)
	}

	bad := &Experiment{Matrix: Matrix{Axes: []Axis{
		{Path: "request.max_token", Values: []any{8}},
		{Path: "request.prompt_tokens", Values: []any{"many"}},
	}}}
	_, err = bad.Expand()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	want := "matrix.request.max_token: unknown axis \"request.max_token\"\nmatrix.request.prompt_tokens[0]: must be an integer, not \"many\""
	if err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// BenchmarkParseExpand measures loading a committed sweep: YAML, schema check, decoding and
// expansion.
func BenchmarkParseExpand(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "experiments", "prefill-sweep.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e, err := Parse("prefill-sweep.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Expand(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRequestsSaturates(t *testing.T) {
	tests := []struct {
		cfgs []Config
		want int
	}{
		{nil, 0},
		{[]Config{{ServerID: "a", Warmup: 1, Repetitions: 2}, {ServerID: "a", Repetitions: 3}, {ServerID: "b", Repetitions: 1}}, 1 + 3 + 3 + 1 + 1},
		{[]Config{{ServerID: "a", Warmup: math.MaxInt, Repetitions: math.MaxInt}}, math.MaxInt},
		{[]Config{{ServerID: "a", Repetitions: math.MaxInt - 1}, {ServerID: "b", Repetitions: math.MaxInt - 1}}, math.MaxInt},
	}
	for _, tt := range tests {
		if got := Requests(tt.cfgs); got != tt.want {
			t.Errorf("Requests(%+v) = %d, want %d", tt.cfgs, got, tt.want)
		}
	}
}

// TestLoadPoints checks what a load section makes of configs: defaults, the cache rule, ids
// that differ by load and not by the objective, and configs that share no load.
func TestLoadPoints(t *testing.T) {
	base := head + "server:\n  model: m\nrequest:\n  prompt: hi\n  max_tokens: 8\n"
	cfgs := mustExpand(t, base+"slo: {ttft_ms: 200, e2e_ms: 900}\nmatrix:\n  load.concurrency: [1, 4]\n")
	if len(cfgs) != 2 {
		t.Fatalf("%d configs, want 2", len(cfgs))
	}
	for i, want := range []int{1, 4} {
		c := cfgs[i]
		if c.Load == nil || c.Load.Concurrency != want || c.Load.Rate != 0 || c.Load.Prompts != "distinct" {
			t.Errorf("config %d: load %+v", i, c.Load)
		}
		if c.Cache != "reset_per_config" {
			t.Errorf("config %d: cache %q, want reset_per_config under load", i, c.Cache)
		}
		if len(c.SLO) != 2 || c.SLO[0] != (Bound{"ttft_ms", 200}) || c.SLO[1] != (Bound{"e2e_ms", 900}) {
			t.Errorf("config %d: slo %+v", i, c.SLO)
		}
	}
	if cfgs[0].Label != "concurrency=1" || cfgs[0].ID == cfgs[1].ID || cfgs[0].ServerID != cfgs[1].ServerID {
		t.Errorf("labels %q, ids %s %s, servers %s %s", cfgs[0].Label, cfgs[0].ID, cfgs[1].ID, cfgs[0].ServerID, cfgs[1].ServerID)
	}
	cfgs[0].Load.Concurrency = 99
	if cfgs[1].Load.Concurrency != 4 {
		t.Error("configs share their load")
	}

	// The objective is no part of the id; the load is, and an explicit default is the default.
	noSLO := mustExpand(t, base+"matrix:\n  load.concurrency: [1, 4]\n")
	explicit := mustExpand(t, base+"load:\n  prompts: distinct\nmatrix:\n  load.concurrency: [1, 4]\n")
	if noSLO[1].ID != cfgs[1].ID || explicit[1].ID != cfgs[1].ID {
		t.Errorf("ids %s (no slo), %s (explicit default), want %s", noSLO[1].ID, explicit[1].ID, cfgs[1].ID)
	}
	plain := mustExpand(t, base)
	if plain[0].Load != nil || plain[0].Cache != "reset" || plain[0].ID == cfgs[0].ID {
		t.Errorf("without load: load %+v cache %q id %s", plain[0].Load, plain[0].Cache, plain[0].ID)
	}

	// Open loops: poisson by default, gamma implied by burstiness.
	open := mustExpand(t, base+"load:\n  rate: 2.5\n  max_concurrency: 8\nmatrix:\n  load.burstiness: [0.5]\n")
	if l := open[0].Load; l.Arrival != "gamma" || l.Burstiness != 0.5 || l.Rate != 2.5 || l.MaxConcurrency != 8 || l.Concurrency != 0 {
		t.Errorf("open loop with burstiness: %+v", l)
	}
	poisson := mustExpand(t, base+"load: {rate: 3}\n")
	if l := poisson[0].Load; l.Arrival != "poisson" || l.Burstiness != 0 || !l.Open() || l.InFlight() != 0 {
		t.Errorf("open loop: %+v", l)
	}
	// An engine that cannot reset keeps its cache under load too.
	keep := mustExpand(t, head+"server:\n  engine: command\n  command: [srv, --port, \"{port}\"]\n  model: m\nrequest:\n  prompt: hi\n  max_tokens: 8\nload: {concurrency: 2}\n")
	if keep[0].Cache != "keep" {
		t.Errorf("command under load: cache %q, want keep", keep[0].Cache)
	}
	// An empty load section is a load point of one request at a time.
	one := mustExpand(t, base+"load: {}\n")
	if l := one[0].Load; l == nil || l.Concurrency != 1 || l.InFlight() != 1 {
		t.Errorf("empty load section: %+v", l)
	}
}
