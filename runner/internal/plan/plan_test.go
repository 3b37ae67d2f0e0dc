package plan

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

const endpointYAML = `version: 1
name: plan-test
server:
  engine: endpoint
  url: http://127.0.0.1:8000
  model: local-model
request:
  api: chat
  prompts:
    - name: greeting
      text: "Hello!"
    - name: story
      text: "Tell me a story."
matrix:
  request.max_tokens: [32, 128]
warmup: 1
repetitions: 3
`

// testPlan loads, expands and plans an experiment file with the given content.
func testPlan(t *testing.T, body string) *Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := experiment.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return New(e, cfgs)
}

func TestNew(t *testing.T) {
	p := testPlan(t, endpointYAML)
	want := Totals{Configs: 4, Servers: 1, ServerBoots: 0, FirstRequests: 1, WarmupRequests: 4, MeasuredRequests: 12, Requests: 17}
	if p.Totals != want {
		t.Errorf("totals %+v, want %+v", p.Totals, want)
	}
	if got := []string{"request.prompt_name", "request.max_tokens"}; !reflect.DeepEqual(p.Axes, got) {
		t.Errorf("axes %v, want %v", p.Axes, got)
	}
	if len(p.Servers) != 1 || p.Servers[0].Boots || p.Servers[0].Configs != 4 {
		t.Errorf("servers %+v, want one endpoint that does not boot, with 4 configs", p.Servers)
	}
	if c := p.Configs[3]; c.AxisValue("request.prompt_name") != "story" || c.AxisValue("request.max_tokens") != "128" ||
		c.AxisValue("engine.dtype") != "" || c.Requests != 4 {
		t.Errorf("last config %+v", c)
	}
}

func TestNewEncoder(t *testing.T) {
	for _, f := range Formats() {
		if _, err := NewEncoder(f, &bytes.Buffer{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	_, err := NewEncoder("xml", &bytes.Buffer{})
	if err == nil || err.Error() != `unknown format "xml" (want text, json, csv)` {
		t.Errorf("xml: %v", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	p := testPlan(t, endpointYAML)
	var buf bytes.Buffer
	if err := NewJSONEncoder(&buf).Encode(p); err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, p) {
		t.Errorf("read back %+v, want %+v", back, *p)
	}
}

func TestCSV(t *testing.T) {
	p := testPlan(t, endpointYAML)
	var buf bytes.Buffer
	if err := NewCSVEncoder(&buf).Encode(p); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantHead := []string{"index", "id", "server_id", "label", "prompt_name", "max_tokens", "warmup", "repetitions", "requests"}
	if !reflect.DeepEqual(rows[0], wantHead) || len(rows) != 5 {
		t.Fatalf("header %v and %d rows", rows[0], len(rows)-1)
	}
	if got := rows[4][4:]; !reflect.DeepEqual(got, []string{"story", "128", "1", "3", "4"}) {
		t.Errorf("last row ends %v", got)
	}
}

func TestText(t *testing.T) {
	p := testPlan(t, endpointYAML)
	var buf bytes.Buffer
	if err := NewTextEncoder(&buf).Encode(p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"experiment plan-test (", "endpoint (not booted)",
		"\n4 configs, 0 server boots, 17 requests (1 first + 4 warm-up + 12 measured)\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

func TestEncodersReturnWriteErrors(t *testing.T) {
	p := testPlan(t, endpointYAML)
	for _, f := range Formats() {
		enc, _ := NewEncoder(f, failWriter{})
		if err := enc.Encode(p); !errors.Is(err, errFull) {
			t.Errorf("%s: %v, want %v", f, err, errFull)
		}
	}
}
