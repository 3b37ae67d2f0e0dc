package tabular

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestFloat(t *testing.T) {
	tests := []struct {
		x        float64
		decimals int
		want     string
	}{
		{1.5, 6, "1.500000"},
		{2, 6, "2.000000"},
		{2, -1, "2"},
		{0.1, -1, "0.1"},
		{-3.25, 2, "-3.25"},
		{math.NaN(), 6, ""},
		{math.Inf(1), -1, ""},
		{math.Inf(-1), 3, ""},
	}
	for _, tt := range tests {
		if got := Float(tt.x, tt.decimals); got != tt.want {
			t.Errorf("Float(%v, %d) = %q, want %q", tt.x, tt.decimals, got, tt.want)
		}
	}
}

func TestNullAndList(t *testing.T) {
	v := struct {
		A, B, C *float64
		L, M    []string
	}{Null(1.25), Null(math.NaN()), Null(math.Inf(1)), List(nil), List([]string{"x"})}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"A":1.25,"B":null,"C":null,"L":[],"M":["x"]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLinesAndWriteCSV(t *testing.T) {
	header := []string{"a", "b"}
	rows := [][]string{{"1", "x,y"}, {"", `say "hi"`}, {"2", "two\nlines"}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, header, rows); err != nil {
		t.Fatal(err)
	}
	want := "a,b\n1,\"x,y\"\n,\"say \"\"hi\"\"\"\n2,\"two\nlines\"\n"
	if buf.String() != want {
		t.Errorf("WriteCSV wrote %q, want %q", buf.String(), want)
	}
	if got := string(Lines(append([][]string{header}, rows...)...)); got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errFull
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteErrorsAreReturned(t *testing.T) {
	rows := make([][]string, 2000)
	for i := range rows {
		rows[i] = []string{"some", "cells", "to fill the buffer"}
	}
	if err := WriteCSV(&failAfter{n: 10}, []string{"h"}, rows); !errors.Is(err, errFull) {
		t.Errorf("WriteCSV: %v, want %v", err, errFull)
	}
	w := NewErrWriter(&failAfter{n: 3})
	w.Write([]byte("ab"))
	w.Write([]byte("cd"))
	if n, err := w.Write([]byte("e")); n != 0 || !errors.Is(err, errFull) || !errors.Is(w.Err(), errFull) {
		t.Errorf("after a failed write: %d, %v, Err %v", n, err, w.Err())
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 configs", 1: "1 config", 2: "2 configs"} {
		if got := Plural(n, "config"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestGroupWarnings(t *testing.T) {
	tests := []struct {
		name string
		rows []Noted
		want []Warning
	}{
		{"none", []Noted{{Group: "a", Metric: "x"}}, nil},
		{"every row of a group", []Noted{
			{Group: "a", Label: "A", Metric: "x", Warnings: []string{"few", "odd"}},
			{Group: "a", Label: "A", Metric: "y", Warnings: []string{"few"}},
			{Group: "b", Label: "B", Metric: "x", Warnings: []string{"few"}},
			{Group: "b", Label: "B", Metric: "y"},
		}, []Warning{
			{Group: "a", Label: "A", Text: "few", Metrics: []string{"all metrics"}},
			{Group: "a", Label: "A", Text: "odd", Metrics: []string{"x"}},
			{Group: "b", Label: "B", Text: "few", Metrics: []string{"x"}},
		}},
		{"a group of one row names its metric", []Noted{
			{Group: "a", Label: "A", Metric: "x", Warnings: []string{"few"}},
		}, []Warning{{Group: "a", Label: "A", Text: "few", Metrics: []string{"x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GroupWarnings(tt.rows); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		text, first, rest string
		width             int
		want              string
	}{
		{"a short line", "  ", "    ", 20, "  a short line"},
		{"one two three four five", "", "  ", 9, "one two\n  three\n  four\n  five"},
		{"exactly ten", "", "", 11, "exactly ten"},
		{"a verylongwordthatdoesnotfit here", "- ", "  ", 10, "- a\n  verylongwordthatdoesnotfit\n  here"},
		{"ü ü ü ü", "", "", 3, "ü ü\nü ü"}, // characters, not bytes
		{"", "x", "y", 5, ""},
	}
	for _, tt := range tests {
		if got := Wrap(tt.text, tt.width, tt.first, tt.rest); got != tt.want {
			t.Errorf("Wrap(%q, %d, %q, %q) = %q, want %q", tt.text, tt.width, tt.first, tt.rest, got, tt.want)
		}
	}
}

func TestWriteLabelled(t *testing.T) {
	var b strings.Builder
	if err := WriteLabelled(&b, "head\n  a  1\n  b  2\n  a  3\n", map[int]string{1: "first", 3: "second"}); err != nil {
		t.Fatal(err)
	}
	want := "head\n  first\n  a  1\n  b  2\n  second\n  a  3\n"
	if b.String() != want {
		t.Errorf("WriteLabelled wrote\n%q\nwant\n%q", b.String(), want)
	}
	if err := WriteLabelled(&failAfter{n: 1}, "x\ny\n", nil); err == nil {
		t.Error("a failing writer's error was dropped")
	}
}
