package orchestrate

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// floorExperiment returns an experiment that sends prompts of each of lengths on route api to
// the simulator at url, with and without a load section.
func floorExperiment(t *testing.T, url, api, lengths, load string) (*experiment.Experiment, []experiment.Config) {
	t.Helper()
	src := fmt.Sprintf(`version: 1
name: floor
server:
  engine: endpoint
  url: %s
  model: sim-model
request:
  api: %s
  max_tokens: 4
  ignore_eos: true
matrix:
  request.prompt_tokens: %s
warmup: 1
repetitions: 2
cache: keep
%s`, url, api, lengths, load)
	e, err := experiment.Parse(filepath.Join(t.TempDir(), "floor.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return e, cfgs
}

// TestPromptBelowFloorFailsAlone checks that a prompt_tokens value below what the server bills
// for its shortest prompt fails only its own config, with a class of its own and a message
// that names the floor, while the server's other lengths are measured: alone and under load,
// on both routes, with the floor as the simulator's fixed template makes it.
func TestPromptBelowFloorFailsAlone(t *testing.T) {
	for _, tt := range []struct{ api, load string }{
		{"completions", ""},
		{"chat", ""},
		{"completions", "load:\n  concurrency: 2\n"},
	} {
		t.Run(tt.api+map[bool]string{true: " under load"}[tt.load != ""], func(t *testing.T) {
			floor, ok := enginefacts.PromptFloor("sim", tt.api)
			if !ok {
				t.Fatalf("no prompt floor of the simulator's %s route in the engine table", tt.api)
			}
			url := startSim(t, true)
			e, cfgs := floorExperiment(t, url, tt.api, fmt.Sprintf("[%d, 16, 32]", floor-1), tt.load)
			var rows []record.Request
			keep := SubscriberFunc(func(ev Event) error {
				switch ev := ev.(type) {
				case RequestMeasured:
					rows = append(rows, ev.Record)
				case RequestNotSent:
					rows = append(rows, ev.Record)
				}
				return nil
			})
			out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{keep}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Sent != experiment.Requests(cfgs) {
				t.Fatalf("outcome %+v", out)
			}
			want := fmt.Sprintf("prompt_tokens %d is below the %d tokens", floor-1, floor)
			for _, r := range rows {
				short := *r.PromptTokensRequested < floor
				switch {
				case short && (r.ErrorClass != record.ErrPromptTooShort || !strings.HasPrefix(r.Error, want)):
					t.Errorf("prompt_tokens %d, %s: %s %q, want %s beginning %q", *r.PromptTokensRequested, r.Phase, r.ErrorClass, r.Error, record.ErrPromptTooShort, want)
				case !short && r.Status != record.StatusOK:
					t.Errorf("prompt_tokens %d, %s: %s %s %q, want ok", *r.PromptTokensRequested, r.Phase, r.Status, r.ErrorClass, r.Error)
				}
			}
		})
	}
}

// TestSimPromptFloorKnown checks the engine table's prompt floors of the simulator against
// the simulator itself, which `runner validate` warns by: a prompt of one token cannot be
// built, and the reason names the floor of the table.
func TestSimPromptFloorKnown(t *testing.T) {
	url := startSim(t, true)
	api := &openai.Client{BaseURL: url}
	for _, route := range []string{"completions", "chat"} {
		floor, ok := enginefacts.PromptFloor("sim", route)
		if !ok {
			t.Fatalf("no prompt floor of the simulator's %s route", route)
		}
		_, cfgs := floorExperiment(t, url, route, fmt.Sprintf("[%d, %d]", floor-1, floor), "")
		ps, err := preparePrompts(context.Background(), groupByServer(cfgs)[0], api, "sim-model", nil, true)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("prompt_tokens %d is below the %d tokens ", floor-1, floor)
		if got := ps.tooShort(cfgs[0]); !strings.HasPrefix(got, want) {
			t.Errorf("%s: prompt_tokens %d: %q, want it to begin %q", route, floor-1, got, want)
		}
		if got := ps.tooShort(cfgs[1]); got != "" {
			t.Errorf("%s: prompt_tokens %d, the floor itself: %q", route, floor, got)
		}
	}
}
