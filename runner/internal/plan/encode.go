package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Encoder writes a Plan in one format.
type Encoder interface {
	Encode(*Plan) error
}

// The encoders implement Encoder.
var (
	_ Encoder = (*TextEncoder)(nil)
	_ Encoder = (*JSONEncoder)(nil)
	_ Encoder = (*CSVEncoder)(nil)
)

// formats are the output formats of a Plan, in the order help lists them.
var formats = tabular.NewFormats(
	tabular.Format[Encoder]{Name: "text", New: func(w io.Writer) Encoder { return NewTextEncoder(w) }},
	tabular.Format[Encoder]{Name: "json", New: func(w io.Writer) Encoder { return NewJSONEncoder(w) }},
	tabular.Format[Encoder]{Name: "csv", New: func(w io.Writer) Encoder { return NewCSVEncoder(w) }},
)

// Formats returns the names of the output formats, in the order help lists them.
func Formats() []string { return formats.Names() }

// NewEncoder returns the encoder of a format named by Formats over w.
func NewEncoder(format string, w io.Writer) (Encoder, error) { return formats.New(format, w) }

// TextEncoder writes a Plan as aligned tables, configs then servers, and a totals line.
type TextEncoder struct{ w io.Writer }

// NewTextEncoder returns a TextEncoder writing to w.
func NewTextEncoder(w io.Writer) *TextEncoder { return &TextEncoder{w: w} }

// Encode writes p.
func (e *TextEncoder) Encode(p *Plan) error {
	w := tabular.NewErrWriter(e.w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "experiment %s (%s)\n\n", p.Experiment, p.File)
	head := []string{"#", "id", "server"}
	for _, a := range p.Axes {
		head = append(head, shortAxis(a))
	}
	head = append(head, "requests")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, c := range p.Configs {
		row := []string{strconv.Itoa(c.Index), c.ID, c.ServerID}
		for _, a := range p.Axes {
			row = append(row, textCell(c.AxisValue(a)))
		}
		row = append(row, fmt.Sprintf("%d (%d+%d)", c.Requests, c.Warmup, c.Repetitions))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	fmt.Fprintln(tw, "\nserver\tengine\tmodel\tconfigs")
	for _, s := range p.Servers {
		engine := s.Engine
		if !s.Boots {
			engine += " (not booted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", s.ID, engine, textCell(s.Model), s.Configs)
	}
	tw.Flush()
	t := p.Totals
	fmt.Fprintf(w, "\n%s, %s, %s (%d first + %d warm-up + %d measured)\n",
		tabular.Plural(t.Configs, "config"), tabular.Plural(t.ServerBoots, "server boot"), tabular.Plural(t.Requests, "request"),
		t.FirstRequests, t.WarmupRequests, t.MeasuredRequests)
	if p.Shards != nil {
		fmt.Fprintf(w, "\n%s, balanced by requests:\n\n", tabular.Plural(len(p.Shards), "shard"))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "shard\tservers\tconfigs\trequests\tserver ids")
		for _, s := range p.Shards {
			ids := strings.Join(s.Servers, " ")
			if ids == "" {
				ids = "- (an empty folder)"
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\n", s.Index, len(s.Servers), len(s.Configs), s.Requests, ids)
		}
		tw.Flush()
	}
	return w.Err()
}

// shortAxis names an axis column: the field name without its section.
func shortAxis(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

// textCell keeps a table cell on one line and never empty.
func textCell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(s)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:37]) + "..."
	}
	return s
}

// JSONEncoder writes a Plan as one indented JSON object with "configs", "servers" and
// "totals".
type JSONEncoder struct{ w io.Writer }

// NewJSONEncoder returns a JSONEncoder writing to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder { return &JSONEncoder{w: w} }

// Encode writes p.
func (e *JSONEncoder) Encode(p *Plan) error {
	enc := json.NewEncoder(e.w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// CSVEncoder writes one row per config of a Plan: index, id, server_id, label, one column per
// axis (named by the field, empty where a config does not set it), warmup, repetitions,
// requests; and, for a plan split into shards, shard (the index of the shard that runs the
// config) and shard_requests (the requests of that whole shard, its first requests included).
type CSVEncoder struct{ w io.Writer }

// NewCSVEncoder returns a CSVEncoder writing to w.
func NewCSVEncoder(w io.Writer) *CSVEncoder { return &CSVEncoder{w: w} }

// Encode writes p.
func (e *CSVEncoder) Encode(p *Plan) error {
	head := []string{"index", "id", "server_id", "label"}
	for _, a := range p.Axes {
		head = append(head, shortAxis(a))
	}
	head = append(head, "warmup", "repetitions", "requests")
	shardOf := p.shardOf()
	if p.Shards != nil {
		head = append(head, "shard", "shard_requests")
	}
	rows := make([][]string, 0, len(p.Configs))
	for _, c := range p.Configs {
		row := []string{strconv.Itoa(c.Index), c.ID, c.ServerID, c.Label}
		for _, a := range p.Axes {
			row = append(row, c.AxisValue(a))
		}
		row = append(row, strconv.Itoa(c.Warmup), strconv.Itoa(c.Repetitions), strconv.Itoa(c.Requests))
		if p.Shards != nil {
			shard, requests := "", ""
			if i, ok := shardOf[c.ID]; ok {
				shard, requests = strconv.Itoa(i), strconv.Itoa(p.Shards[i].Requests)
			}
			row = append(row, shard, requests)
		}
		rows = append(rows, row)
	}
	return tabular.WriteCSV(e.w, head, rows)
}
