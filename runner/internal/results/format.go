package results

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// timeLayout is RFC 3339 in UTC with a fixed nine-digit fraction, so that every timestamp in a
// column has the same width and sorts as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime writes t in UTC with nanoseconds; the zero time is a missing value.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// parseTime reads an RFC 3339 timestamp (any fraction, any offset) and returns it in UTC.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an RFC 3339 timestamp: %q", s)
	}
	return t.UTC(), nil
}

// formatMs writes a duration as milliseconds with exactly six decimals: nanosecond resolution,
// and always a decimal point, so that analysis tools read the column as a float.
func formatMs(d time.Duration) string {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = uint64(-d) // for math.MinInt64 the two's complement gives the right magnitude
	}
	s := strconv.FormatUint(u/1e6, 10) + "." + fmt.Sprintf("%06d", u%1e6)
	if neg {
		s = "-" + s
	}
	return s
}

// parseMs reads milliseconds back into a duration, exactly for up to six decimals and rounded
// to the nearest nanosecond beyond that.
func parseMs(s string) (time.Duration, error) {
	bad := fmt.Errorf("not a number of milliseconds: %q", s)
	body := strings.TrimPrefix(s, "-")
	neg := len(body) < len(s)
	ip, fp, hasDot := strings.Cut(body, ".")
	if isDigits(ip) && (!hasDot || isDigits(fp)) && len(fp) <= 6 && len(ip) <= 19 {
		// Exact path: whole·10⁶ + fraction in unsigned arithmetic, checked against the range
		// of a duration.
		whole, err := strconv.ParseUint(ip, 10, 64)
		frac := uint64(0)
		if fp != "" {
			frac, _ = strconv.ParseUint(fp+strings.Repeat("0", 6-len(fp)), 10, 64)
		}
		limit := uint64(math.MaxInt64)
		if neg {
			limit++
		}
		if err != nil || whole > (limit-frac)/1e6 {
			return 0, bad
		}
		u := whole*1e6 + frac
		if neg {
			return time.Duration(-u), nil
		}
		return time.Duration(u), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	ns := math.Round(f * 1e6)
	if ns > math.MaxInt64 || ns < math.MinInt64 {
		return 0, bad
	}
	return time.Duration(ns), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseFloat reads a float cell; an empty cell is NaN (missing). The text "NaN" and infinities
// are refused: a missing value is an empty cell.
func parseFloat(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a finite number: %q", s)
	}
	return f, nil
}

func formatInt(n int) string { return strconv.Itoa(n) }

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	return n, nil
}

func formatOptInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func parseOptInt(s string) (*int, error) {
	if s == "" {
		return nil, nil
	}
	n, err := parseInt(s)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func formatBool(b bool) string { return strconv.FormatBool(b) }

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("not true or false: %q", s)
}

// escapeCell makes a string safe for a CSV cell that must hold no line breaks and only valid
// UTF-8: a backslash becomes \\, a line feed \n, a carriage return \r, a tab \t, any other
// control character (C0 or C1), Unicode line or paragraph separator, or invalid byte \xHH
// per byte, and each byte of extra likewise \xHH. Ordinary text
// is left as it is, so ids and labels stay readable; unescapeCell reverses it exactly.
func escapeCell(s, extra string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 || strings.IndexByte(extra, c) >= 0 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029:
			// C1 controls and the Unicode line and paragraph separators: some tools break
			// lines at them, so they are escaped byte by byte.
			for j := 0; j < size; j++ {
				fmt.Fprintf(&b, `\x%02x`, s[i+j])
			}
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f || size == 1 && strings.IndexByte(extra, c) >= 0:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

var errBadEscape = errors.New("bad escape")

// unescapeCell reverses escapeCell.
func unescapeCell(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("%w: trailing backslash in %q", errBadEscape, s)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			if i+3 > len(s) {
				return "", fmt.Errorf("%w: short \\x in %q", errBadEscape, s)
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("%w: \\x%s in %q", errBadEscape, s[i+1:i+3], s)
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", fmt.Errorf("%w: \\%c in %q", errBadEscape, s[i], s)
		}
	}
	return b.String(), nil
}
