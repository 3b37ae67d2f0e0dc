package results

import (
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Column constructors. Each binds a column name to a field through an accessor that returns
// the field's address, so one function serves both directions.

func intCol[T any](name string, f func(*T) *int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt, Required: true},
		get: func(v *T) string { return formatInt(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseInt(s); return err }}
}

// zeroIsMissingIntCol writes 0 as an empty cell, for fields where 0 means "no value".
func zeroIsMissingIntCol[T any](name string, f func(*T) *int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt},
		get: func(v *T) string {
			if *f(v) == 0 {
				return ""
			}
			return formatInt(*f(v))
		},
		set: func(v *T, s string) (err error) {
			if s == "" {
				*f(v) = 0
				return nil
			}
			*f(v), err = parseInt(s)
			return err
		}}
}

func optIntCol[T any](name string, f func(*T) **int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt},
		get: func(v *T) string { return formatOptInt(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseOptInt(s); return err }}
}

// msCol is a duration that may be missing and is never below zero; signedMsCol one that may
// be (a difference of two clocks).
func msCol[T any](name string, f func(*T) **time.Duration) column[T] {
	c := signedMsCol(name, f)
	c.NonNegative = true
	return c
}

func signedMsCol[T any](name string, f func(*T) **time.Duration) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return formatMs(*p)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			d, err := parseMs(s)
			if err != nil {
				return err
			}
			*f(v) = &d
			return nil
		}}
}

func reqMsCol[T any](name string, f func(*T) *time.Duration) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat, Required: true, NonNegative: true},
		get: func(v *T) string { return formatMs(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseMs(s); return err }}
}

func floatCol[T any](name string, decimals int, f func(*T) *float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string { return tabular.Float(*f(v), decimals) },
		set: func(v *T, s string) (err error) { *f(v), err = parseFloat(s); return err }}
}

func boolCol[T any](name string, f func(*T) *bool) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindBool, Required: true},
		get: func(v *T) string { return formatBool(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseBool(s); return err }}
}

// optBoolCol is a bool column whose value may be unknown (nil): an empty cell.
func optBoolCol[T any](name string, f func(*T) **bool) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindBool},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return formatBool(*p)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			b, err := parseBool(s)
			if err != nil {
				return err
			}
			*f(v) = &b
			return nil
		}}
}

func timeCol[T any](name string, f func(*T) *time.Time) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindTime},
		get: func(v *T) string { return formatTime(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseTime(s); return err }}
}

func strCol[T any](name string, f func(*T) *string) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string { return escapeCell(*f(v), "") },
		set: func(v *T, s string) (err error) { *f(v), err = unescapeCell(s); return err }}
}

// typedStrCol is strCol for the string-based enum types of package record.
func typedStrCol[T any, S ~string](name string, f func(*T) *S) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string { return escapeCell(string(*f(v)), "") },
		set: func(v *T, s string) error {
			u, err := unescapeCell(s)
			*f(v) = S(u)
			return err
		}}
}

// enumCol is typedStrCol for a column whose cells are one of values.
func enumCol[T any, S ~string](name string, values []S, f func(*T) *S) column[T] {
	c := typedStrCol(name, f)
	for _, v := range values {
		c.Values = append(c.Values, string(v))
	}
	return c
}

// listCol stores a list of short texts in one cell, joined by "; "; each item is escaped with
// ';' as \x3b so that the join is unambiguous. Empty items are not kept.
func listCol[T any](name string, f func(*T) *[]string) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string {
			var parts []string
			for _, s := range *f(v) {
				if s != "" {
					parts = append(parts, escapeCell(s, ";"))
				}
			}
			return strings.Join(parts, "; ")
		},
		set: func(v *T, s string) error {
			*f(v) = nil
			if s == "" {
				return nil
			}
			for _, p := range strings.Split(s, "; ") {
				u, err := unescapeCell(p)
				if err != nil {
					return err
				}
				*f(v) = append(*f(v), u)
			}
			return nil
		}}
}

// zeroIsMissingFloatCol writes 0 as an empty cell, for fields where 0 means "no value".
func zeroIsMissingFloatCol[T any](name string, decimals int, f func(*T) *float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if *f(v) == 0 {
				return ""
			}
			return tabular.Float(*f(v), decimals)
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = 0
				return nil
			}
			x, err := parseFloat(s)
			*f(v) = x
			return err
		}}
}

func optFloatCol[T any](name string, decimals int, f func(*T) **float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return tabular.Float(*p, decimals)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			x, err := parseFloat(s)
			if err != nil {
				return err
			}
			*f(v) = &x
			return nil
		}}
}
