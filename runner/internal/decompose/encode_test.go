package decompose

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// failWriter fails every write.
type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

func TestEncoders(t *testing.T) {
	sweeps := []Sweep{{Name: "api=chat",
		Prefill: Fit{Model: Prefill, Skipped: "one prompt length only"},
		Decode:  Fit{Model: Decode, Skipped: "no rows", Warnings: []string{"a | note"}}}}
	tests := []struct {
		name string
		enc  func(w *bytes.Buffer) interface{ Encode([]Sweep) error }
		fail interface{ Encode([]Sweep) error }
		want []string
	}{
		{"text", func(w *bytes.Buffer) interface{ Encode([]Sweep) error } { return NewTextEncoder(w) }, NewTextEncoder(failWriter{}),
			[]string{"\n" + Heading + ":\n  api=chat:\n", "    decode   e2e_ms ≈ ttft_ms + c·(output_tokens − 1)\n             not fitted: no rows\n             note: a | note\n"}},
		{"markdown", func(w *bytes.Buffer) interface{ Encode([]Sweep) error } { return NewMarkdownEncoder(w) }, NewMarkdownEncoder(failWriter{}),
			[]string{"\n**Prefill/decode fit** (least squares", "| api=chat | `ttft_ms ≈ a + b·prompt_tokens` | not fitted: one prompt length only |  |\n", `a \| note`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.enc(&buf).Encode(nil); err != nil || buf.Len() != 0 {
				t.Errorf("no sweeps: wrote %q, %v", buf.String(), err)
			}
			if err := tt.enc(&buf).Encode(sweeps); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("lacks %q:\n%s", w, buf.String())
				}
			}
			if err := tt.fail.Encode(sweeps); !errors.Is(err, errFull) {
				t.Errorf("failing writer: %v", err)
			}
		})
	}
}

func TestToJSON(t *testing.T) {
	if got, _ := json.Marshal(ToJSON(nil)); string(got) != "[]" {
		t.Errorf("no sweeps: %s, want []", got)
	}
	fits := ToJSON([]Sweep{{Name: "all configs", Prefill: Fit{Model: Prefill, Skipped: "x"}, Decode: Fit{Model: Decode, Skipped: "y"}}})
	if len(fits) != 2 || fits[0].Model != "prefill" || fits[1].Model != "decode" || fits[0].R2 != nil ||
		fits[0].Coefficients == nil || fits[1].Warnings == nil || fits[0].Rows != "per_request" {
		t.Errorf("%+v", fits)
	}
}
