package results

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestFormatMs(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0.000000"},
		{1, "0.000001"},
		{time.Microsecond, "0.001000"},
		{12345678 * time.Nanosecond, "12.345678"},
		{3 * time.Second, "3000.000000"},
		{-1500 * time.Microsecond, "-1.500000"},
		{math.MaxInt64, "9223372036854.775807"},
		{math.MinInt64, "-9223372036854.775808"},
	}
	for _, tt := range tests {
		if got := formatMs(tt.d); got != tt.want {
			t.Errorf("formatMs(%d) = %q, want %q", tt.d, got, tt.want)
		}
		back, err := parseMs(tt.want)
		if err != nil || back != tt.d {
			t.Errorf("parseMs(%q) = %d, %v; want %d", tt.want, back, err, tt.d)
		}
	}
}

func TestParseMs(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "12.3", want: 12300 * time.Microsecond},
		{in: "12", want: 12 * time.Millisecond},
		{in: "12.", want: 12 * time.Millisecond},
		{in: ".5", want: 500 * time.Microsecond},
		{in: "0.0000004", want: 0},     // rounded to the nearest nanosecond
		{in: "0.0000006", want: 1},     //
		{in: "1e3", want: time.Second}, // what a tool that rewrote the file might leave
		{in: "-0.25", want: -250 * time.Microsecond},
		{in: "NaN", bad: true},
		{in: "inf", bad: true},
		{in: "", bad: true},
		{in: "12ms", bad: true},
		{in: "9223372036854.775808", bad: true}, // one nanosecond past the largest duration
		{in: "99999999999999999999", bad: true},
	}
	for _, tt := range tests {
		got, err := parseMs(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseMs(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseMs(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestEscapeCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, with commas", "plain text, with commas"},
		{"max_tokens=64,prompt_tokens=512", "max_tokens=64,prompt_tokens=512"},
		{"two\nlines\r\n", `two\nlines\r\n`},
		{`back\slash`, `back\\slash`},
		{"tab\there", `tab\there`},
		{"bell\a", `bell\x07`},
		{"héllo 日本", "héllo 日本"},
		{"bad \xff byte", `bad \xff byte`},
		{"line\u2028sep", `line\xe2\x80\xa8sep`},
		{"c1\u0085", `c1\xc2\x85`},
	}
	for _, tt := range tests {
		got := escapeCell(tt.in, "")
		if got != tt.want {
			t.Errorf("escapeCell(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := unescapeCell(got)
		if err != nil || back != tt.in {
			t.Errorf("unescapeCell(%q) = %q, %v; want %q", got, back, err, tt.in)
		}
	}
	if got := escapeCell("a;b", ";"); got != `a\x3bb` {
		t.Errorf("escapeCell with extra ';' = %q", got)
	}
	for _, bad := range []string{`trailing\`, `\q`, `\x4`, `\xzz`} {
		if _, err := unescapeCell(bad); err == nil {
			t.Errorf("unescapeCell(%q) succeeded", bad)
		}
	}
}

func FuzzEscapeCell(f *testing.F) {
	for _, s := range []string{"", "a,b", "x\ny", `\`, "\xff\xfe", "\u2029", "semi;colon"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, extra := range []string{"", ";"} {
			e := escapeCell(s, extra)
			if strings.ContainsAny(e, "\r\n"+extra) || !utf8.ValidString(e) || strings.ContainsRune(e, 0x2028) {
				t.Fatalf("escapeCell(%q, %q) = %q holds a line break, an extra byte or invalid UTF-8", s, extra, e)
			}
			back, err := unescapeCell(e)
			if err != nil || back != s {
				t.Fatalf("unescapeCell(escapeCell(%q)) = %q, %v", s, back, err)
			}
		}
	})
}

func FuzzMs(f *testing.F) {
	for _, n := range []int64{0, 1, -1, 999999, 1000000, math.MaxInt64, math.MinInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		s := formatMs(time.Duration(n))
		if !strings.Contains(s, ".") {
			t.Fatalf("formatMs(%d) = %q has no decimal point", n, s)
		}
		back, err := parseMs(s)
		if err != nil || int64(back) != n {
			t.Fatalf("parseMs(formatMs(%d) = %q) = %d, %v", n, s, back, err)
		}
	})
}

func TestTimeFormat(t *testing.T) {
	in := time.Date(2026, 11, 29, 9, 12, 0, 5, time.FixedZone("CET", 3600))
	s := formatTime(in)
	if s != "2026-11-29T08:12:00.000000005Z" {
		t.Errorf("formatTime = %q", s)
	}
	back, err := parseTime(s)
	if err != nil || !back.Equal(in) || back.Location() != time.UTC {
		t.Errorf("parseTime(%q) = %v, %v", s, back, err)
	}
	if formatTime(time.Time{}) != "" {
		t.Error("the zero time is not an empty cell")
	}
	if _, err := parseTime("2026-11-29 08:12"); err == nil {
		t.Error("parseTime accepted a non-RFC 3339 time")
	}
}
