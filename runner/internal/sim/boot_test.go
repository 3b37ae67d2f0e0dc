package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBoot(t *testing.T) {
	cases := []struct {
		name     string
		cfg      func(*Config)
		wantKind string // "" means boot succeeds
		wantLog  []string
	}{
		{"ok", nil, "", []string{"vLLM API server version 0.0.0+sim", "Model loading took"}},
		{"bf16 forced", func(c *Config) { c.BootFailure = "bf16" }, "bf16",
			[]string{"ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0", "Tesla T4", "--dtype=half",
				"RuntimeError: Engine core initialization failed"}},
		{"bfloat16 on a T4", func(c *Config) { c.GPU = "Tesla T4"; c.Dtype = "bfloat16" }, "bf16",
			[]string{"compute capability 7.5"}},
		{"bfloat16 on a V100", func(c *Config) { c.GPU = "Tesla V100-PCIE-32GB"; c.Dtype = "bfloat16" }, "bf16",
			[]string{"compute capability 7.0"}},
		{"half on a T4", func(c *Config) { c.GPU = "Tesla T4"; c.Dtype = "half" }, "", nil},
		{"bfloat16 on an A100", func(c *Config) { c.GPU = "NVIDIA A100-SXM4-40GB"; c.Dtype = "bfloat16" }, "", nil},
		{"kv cache", func(c *Config) { c.BootFailure = "kv-cache"; c.BootDelay = time.Millisecond }, "kv-cache",
			[]string{"max seq len (2048)", "max_model_len"}},
		{"oom", func(c *Config) { c.BootFailure = "oom" }, "oom", []string{"CUDA out of memory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &lockedBuffer{}
			c := testConfig()
			c.Log = log
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			err := Boot(context.Background(), c)
			var be *BootError
			switch {
			case tc.wantKind == "" && err != nil:
				t.Fatalf("Boot: %v", err)
			case tc.wantKind != "" && (!errors.As(err, &be) || be.Kind != tc.wantKind):
				t.Fatalf("Boot: %v, want a %s BootError", err, tc.wantKind)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, log.String())
				}
			}
			for i, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
				if !strings.HasPrefix(line, "(APIServer pid=4242) ") && !strings.HasPrefix(line, "RuntimeError: ") {
					t.Errorf("log line %d is not in vLLM's layout: %q", i, line)
				}
			}
		})
	}
}

func TestBootDelay(t *testing.T) {
	c := testConfig()
	c.BootDelay = 30 * time.Millisecond
	start := time.Now()
	if err := Boot(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < c.BootDelay {
		t.Errorf("Boot took %v, less than its delay %v", d, c.BootDelay)
	}
	c.BootDelay = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Boot(ctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("Boot with a cancelled context: %v, want context.Canceled", err)
	}
	c.Jitter = 2
	if err := Boot(context.Background(), c); err == nil {
		t.Errorf("Boot accepted an invalid config")
	}
}

func TestLogReady(t *testing.T) {
	log := &lockedBuffer{}
	c := testConfig()
	c.Log = log
	c.DevMode = true
	LogReady(c, "http://127.0.0.1:9999")
	out := log.String()
	for _, w := range []string{"Starting vLLM API server 0 on http://127.0.0.1:9999", "Route: /v1/completions, Methods: POST",
		"Route: /reset_prefix_cache, Methods: POST", "Started server process [4242]"} {
		if !strings.Contains(out, w) {
			t.Errorf("LogReady lacks %q:\n%s", w, out)
		}
	}
	if !strings.HasSuffix(out, "(APIServer pid=4242) INFO:     Application startup complete.\n") {
		t.Errorf("LogReady does not end with uvicorn's startup line:\n%s", out)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := map[string]func(*Config){
		"empty model":      func(c *Config) { c.Model = "" },
		"tiny context":     func(c *Config) { c.MaxModelLen = 1 },
		"negative delay":   func(c *Config) { c.DecodePerToken = -1 },
		"empty pattern":    func(c *Config) { c.TokensPerEvent = nil },
		"zero in pattern":  func(c *Config) { c.TokensPerEvent = []int{1, 0} },
		"jitter 1":         func(c *Config) { c.Jitter = 1 },
		"negative slots":   func(c *Config) { c.MaxConcurrency = -1 },
		"zero block size":  func(c *Config) { c.BlockSize = 0 },
		"eos above 1":      func(c *Config) { c.EOSProbability = 1.5 },
		"error format":     func(c *Config) { c.ErrorFormat = "xml" },
		"boot failure":     func(c *Config) { c.BootFailure = "segfault" },
		"bad server fault": func(c *Config) { c.Faults = []Fault{{Kind: "nope"}} },
		"negative split":   func(c *Config) { c.SplitEvery = -2 },
	}
	for name, mutate := range bad {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
	c := DefaultConfig()
	c.PrefixCaching, c.BlockSize = false, 0
	if err := c.Validate(); err != nil {
		t.Errorf("block size matters only with caching on: %v", err)
	}
}

func TestParsePattern(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "4": "4", "1,3,1": "1,3,1", " 2 , 5 ": "2,5"} {
		p, err := ParsePattern(in)
		if err != nil || FormatPattern(p) != want {
			t.Errorf("ParsePattern(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1,,2", "a", "1.5"} {
		if p, err := ParsePattern(in); err == nil {
			t.Errorf("ParsePattern(%q) = %v, want an error", in, p)
		}
	}
}
