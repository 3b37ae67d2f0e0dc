package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// JSONVersion is the version of the json format's layout, its "version" field.
const JSONVersion = 1

// JSONEncoder writes a Report as one indented JSON object: "version", "alpha", "ci_level",
// "join_by", "old" and "new" (the folders), "environment" (every field, with "differs" and
// "matters"), "only_old" and "only_new", "rows" (as the csv format's columns, a missing value
// null, warnings a list), "gate" ("result": off, pass or fail; "thresholds"; "strict";
// "reasons") and "warnings". DecodeJSON reads it back.
type JSONEncoder struct{ w io.Writer }

// NewJSONEncoder returns a JSONEncoder writing to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder { return &JSONEncoder{w: w} }

type jsonReport struct {
	Version    int          `json:"version"`
	Alpha      float64      `json:"alpha"`
	CILevel    float64      `json:"ci_level"`
	JoinBy     JoinBy       `json:"join_by"`
	Old        jsonFolder   `json:"old"`
	New        jsonFolder   `json:"new"`
	Env        []jsonEnv    `json:"environment"`
	EnvDiffers bool         `json:"environment_differs"`
	OnlyOld    []jsonConfig `json:"only_old"`
	OnlyNew    []jsonConfig `json:"only_new"`
	Rows       []jsonRow    `json:"rows"`
	Gate       jsonGate     `json:"gate"`
	Warnings   []string     `json:"warnings"`
}

type jsonFolder struct {
	Dir           string         `json:"dir"`
	Experiment    string         `json:"experiment"`
	Status        results.Status `json:"status"`
	StartTime     time.Time      `json:"start_time"`
	RunnerVersion string         `json:"runner_version"`
	Configs       int            `json:"configs"`
	Measured      int            `json:"measured_requests"`
	Failed        int            `json:"failed_requests"`
}

type jsonEnv struct {
	Name    string `json:"name"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Differs bool   `json:"differs"`
	Matters bool   `json:"matters"`
}

type jsonConfig struct {
	ID    string `json:"config_id"`
	Label string `json:"label"`
}

type jsonSample struct {
	N      int      `json:"n"`
	Failed int      `json:"failed"`
	Median *float64 `json:"median"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
}

type jsonRow struct {
	ConfigID    string       `json:"config_id"`
	Label       string       `json:"label"`
	Metric      string       `json:"metric"`
	Unit        string       `json:"unit"`
	Presence    Presence     `json:"presence"`
	Old         jsonSample   `json:"old"`
	New         jsonSample   `json:"new"`
	ChangePct   *float64     `json:"change_pct"`
	P           *float64     `json:"p_value"`
	Test        stats.Method `json:"test"`
	MinP        *float64     `json:"min_p"`
	Significant bool         `json:"significant"`
	Verdict     Verdict      `json:"verdict"`
	Threshold   string       `json:"threshold"`
	Gate        GateVerdict  `json:"gate"`
	Warnings    []string     `json:"warnings"`
}

type jsonThreshold struct {
	Metric    string  `json:"metric"`
	Direction string  `json:"direction"` // +, - or ±
	Percent   float64 `json:"percent"`
	Rule      string  `json:"rule"` // as --fail-on takes it
}

type jsonGate struct {
	Result     GateResult      `json:"result"`
	Thresholds []jsonThreshold `json:"thresholds"`
	Strict     bool            `json:"strict"`
	Reasons    []string        `json:"reasons"`
}

func unptr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

var directions = map[Direction]string{Up: "+", Down: "-", Either: "±"}

// Encode writes r.
func (e *JSONEncoder) Encode(r *Report) error {
	out := jsonReport{Version: JSONVersion, Alpha: r.Alpha, CILevel: r.CILevel, JoinBy: r.JoinBy,
		Old: toJSONFolder(r.Old), New: toJSONFolder(r.New), Env: []jsonEnv{}, EnvDiffers: len(DifferingEnv(r.Env)) > 0,
		OnlyOld: toJSONConfigs(r.OnlyOld), OnlyNew: toJSONConfigs(r.OnlyNew), Rows: []jsonRow{},
		Gate:     jsonGate{Result: r.Gate.Result, Thresholds: []jsonThreshold{}, Strict: r.Gate.Strict, Reasons: tabular.List(r.Gate.Reasons)},
		Warnings: tabular.List(r.Warnings)}
	for _, f := range r.Env {
		out.Env = append(out.Env, jsonEnv{Name: f.Name, Old: f.Old, New: f.New, Differs: f.Differs(), Matters: f.Matters})
	}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, jsonRow{ConfigID: row.ConfigID, Label: row.Label, Metric: row.Metric, Unit: row.Unit,
			Presence: row.Presence, Old: toJSONSample(row.Old), New: toJSONSample(row.New), ChangePct: tabular.Null(row.ChangePct),
			P: tabular.Null(row.P), Test: row.Test, MinP: tabular.Null(row.MinP), Significant: row.Significant, Verdict: row.Verdict,
			Threshold: row.Threshold, Gate: row.Gate, Warnings: tabular.List(row.Warnings)})
	}
	for _, t := range r.Gate.Thresholds {
		out.Gate.Thresholds = append(out.Gate.Thresholds, jsonThreshold{Metric: t.Metric, Direction: directions[t.Direction],
			Percent: t.Percent, Rule: t.String()})
	}
	enc := json.NewEncoder(e.w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func toJSONFolder(f Folder) jsonFolder {
	return jsonFolder{Dir: f.Dir, Experiment: f.Experiment, Status: f.Status, StartTime: f.Start, RunnerVersion: f.RunnerVersion,
		Configs: f.Configs, Measured: f.Measured, Failed: f.Failed}
}

func toJSONConfigs(cs []ConfigRef) []jsonConfig {
	out := []jsonConfig{}
	for _, c := range cs {
		out = append(out, jsonConfig{ID: c.ID, Label: c.Label})
	}
	return out
}

func toJSONSample(s Sample) jsonSample {
	return jsonSample{N: s.N, Failed: s.Failed, Median: tabular.Null(s.Median), CILow: tabular.Null(s.CILow), CIHigh: tabular.Null(s.CIHigh)}
}

// DecodeJSON reads a Report that JSONEncoder wrote. It refuses another layout version. Empty
// lists read back as nil.
func DecodeJSON(r io.Reader) (*Report, error) {
	var in jsonReport
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("decode diff json: %w", err)
	}
	if in.Version != JSONVersion {
		return nil, fmt.Errorf("decode diff json: version %d is not supported (this runner writes %d)", in.Version, JSONVersion)
	}
	rep := &Report{Alpha: in.Alpha, CILevel: in.CILevel, JoinBy: in.JoinBy, Old: fromJSONFolder(in.Old), New: fromJSONFolder(in.New),
		Gate:     Gate{Result: in.Gate.Result, Strict: in.Gate.Strict, Reasons: nilIfEmpty(in.Gate.Reasons)},
		Warnings: nilIfEmpty(in.Warnings)}
	for _, f := range in.Env {
		rep.Env = append(rep.Env, EnvField{Name: f.Name, Old: f.Old, New: f.New, Matters: f.Matters})
	}
	for _, c := range in.OnlyOld {
		rep.OnlyOld = append(rep.OnlyOld, ConfigRef{ID: c.ID, Label: c.Label})
	}
	for _, c := range in.OnlyNew {
		rep.OnlyNew = append(rep.OnlyNew, ConfigRef{ID: c.ID, Label: c.Label})
	}
	for _, row := range in.Rows {
		rep.Rows = append(rep.Rows, Row{ConfigID: row.ConfigID, Label: row.Label, Metric: row.Metric, Unit: row.Unit,
			Presence: row.Presence, Old: fromJSONSample(row.Old), New: fromJSONSample(row.New), ChangePct: unptr(row.ChangePct),
			P: unptr(row.P), Test: row.Test, MinP: unptr(row.MinP), Significant: row.Significant, Verdict: row.Verdict,
			Threshold: row.Threshold, Gate: row.Gate, Warnings: nilIfEmpty(row.Warnings)})
	}
	for _, t := range in.Gate.Thresholds {
		th := Threshold{Metric: t.Metric, Percent: t.Percent, Direction: -2}
		for d, s := range directions {
			if s == t.Direction {
				th.Direction = d
			}
		}
		if th.Direction == -2 {
			return nil, fmt.Errorf("decode diff json: threshold %s: direction %q is not +, - or ±", t.Rule, t.Direction)
		}
		rep.Gate.Thresholds = append(rep.Gate.Thresholds, th)
	}
	return rep, nil
}

func fromJSONFolder(f jsonFolder) Folder {
	return Folder{Dir: f.Dir, Experiment: f.Experiment, Status: f.Status, Start: f.StartTime, RunnerVersion: f.RunnerVersion,
		Configs: f.Configs, Measured: f.Measured, Failed: f.Failed}
}

func fromJSONSample(s jsonSample) Sample {
	return Sample{N: s.N, Failed: s.Failed, Median: unptr(s.Median), CILow: unptr(s.CILow), CIHigh: unptr(s.CIHigh)}
}

func nilIfEmpty(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	return xs
}
