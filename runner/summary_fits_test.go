package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSummaryFitsAgreeWithReport checks that runner summary shows the same prefill/decode fit
// as the report's fits.csv, on a folder that sweeps both prompt and output lengths.
func TestSummaryFitsAgreeWithReport(t *testing.T) {
	t.Parallel()
	dir := sweepFolder(t, "new")
	text, stderr, code := runCmd(t, "summary", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, w := range []string{"prefill/decode fit (least squares over per-request rows; 95% intervals from Student's t):",
		"  all configs:\n    prefill  ttft_ms ≈ a + b·prompt_tokens\n             a = ", "35 requests of 6 configs (prompt tokens reported)",
		"    decode   e2e_ms ≈ ttft_ms + c·(output_tokens − 1)\n             c = "} {
		if !strings.Contains(text, w) {
			t.Errorf("text summary lacks %q:\n%s", w, text)
		}
	}
	md, _, _ := runCmd(t, "summary", dir, "--format", "markdown")
	if !strings.Contains(md, "| all configs | `ttft_ms ≈ a + b·prompt_tokens` | a = ") {
		t.Errorf("markdown summary lacks the prefill row:\n%s", md)
	}

	js, _, _ := runCmd(t, "summary", dir, "--format", "json")
	var doc struct {
		Fits []struct {
			Sweep, Model string
			Coefficients []struct {
				Name     string
				Estimate *float64
				CILow    *float64 `json:"ci_low"`
				CIHigh   *float64 `json:"ci_high"`
			}
			R2 *float64
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range doc.Fits {
		for _, c := range f.Coefficients {
			got[c.Name+"_estimate"], got[c.Name+"_low"], got[c.Name+"_high"] = *c.Estimate, *c.CILow, *c.CIHigh
		}
		got[f.Model+"_r2"] = *f.R2
	}

	out := t.TempDir()
	if _, stderr, code := runCmd(t, "report", dir, "-o", out); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	file, err := os.Open(filepath.Join(out, "fits.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	recs, err := csv.NewReader(file).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("fits.csv: %d records, %v", len(recs), err)
	}
	col := map[string]string{}
	for i, h := range recs[0] {
		col[h] = recs[1][i]
	}
	pairs := map[string]string{"a_estimate": "a_ms", "a_low": "a_ci_low_ms", "a_high": "a_ci_high_ms",
		"b_estimate": "b_ms_per_token", "b_low": "b_ci_low_ms_per_token", "b_high": "b_ci_high_ms_per_token",
		"c_estimate": "c_ms_per_token", "c_low": "c_ci_low_ms_per_token", "c_high": "c_ci_high_ms_per_token",
		"prefill_r2": "prefill_r2", "decode_r2": "decode_r2"}
	for k, c := range pairs {
		v, err := strconv.ParseFloat(col[c], 64)
		if err != nil {
			t.Fatalf("fits.csv %s: %v", c, err)
		}
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-6 {
			t.Errorf("summary %s = %v, fits.csv %s = %v", k, g, c, v)
		}
	}
}
