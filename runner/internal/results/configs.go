package results

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// ConfigRow is one row of configs.csv: a config and its axis values. Read back, each axis's
// Path is its column name (see AxisColumn), not the dotted path, which the manifest keeps.
type ConfigRow struct {
	Index    int
	ID       string
	ServerID string
	Label    string
	Axes     []experiment.AxisValue
}

func configsFixed() []column[ConfigRow] {
	return []column[ConfigRow]{
		intCol("config_index", func(c *ConfigRow) *int { return &c.Index }),
		strCol("config_id", func(c *ConfigRow) *string { return &c.ID }),
		strCol("server_id", func(c *ConfigRow) *string { return &c.ServerID }),
		strCol("label", func(c *ConfigRow) *string { return &c.Label }),
	}
}

// AxisColumn returns the column name of an axis path: lower case, and every character other
// than a-z, 0-9 and _ replaced by _ ("request.max_tokens" → "request_max_tokens").
func AxisColumn(path string) string {
	b := []byte(strings.ToLower(path))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "axis"
	}
	return string(b)
}

// configsTable returns the columns of configs.csv for configs whose axes are paths, in that
// order. Axis columns follow the fixed ones; a name that would repeat another gets a suffix
// _2, _3, ...
func configsTable(paths []string) *Table[ConfigRow] {
	t := &Table[ConfigRow]{file: ConfigsFile, cols: configsFixed()}
	used := map[string]bool{"schema_version": true}
	for _, c := range t.cols {
		used[c.Name] = true
	}
	for _, p := range paths {
		name := AxisColumn(p)
		for i := 2; used[name]; i++ {
			name = AxisColumn(p) + "_" + strconv.Itoa(i)
		}
		used[name] = true
		path, kind := p, axisKind(p)
		t.cols = append(t.cols, column[ConfigRow]{Column: Column{Name: name, Kind: kind},
			get: func(c *ConfigRow) string {
				for _, a := range c.Axes {
					if a.Path == path {
						return axisCell(kind, a.Value)
					}
				}
				return ""
			}})
	}
	return t
}

// axisKind returns the kind of the column of the axis path: its field's type.
func axisKind(path string) Kind {
	switch experiment.AxisType(path) {
	case "int":
		return KindInt
	case "float":
		return KindFloat
	case "bool":
		return KindBool
	}
	return KindString
}

// axisCell writes the value of an axis whose column has kind k. A number is written with a
// decimal point, as every float column's cells are, so that a whole value such as a rate of 2
// loads as a float.
func axisCell(k Kind, v string) string {
	if k == KindFloat && !strings.ContainsAny(v, ".eEnN") {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return v + ".0"
		}
	}
	return escapeCell(v, "")
}

// axisPaths returns the axis paths of configs in order of first appearance.
func axisPaths(configs []ConfigRow) []string {
	var paths []string
	seen := map[string]bool{}
	for _, c := range configs {
		for _, a := range c.Axes {
			if !seen[a.Path] {
				seen[a.Path] = true
				paths = append(paths, a.Path)
			}
		}
	}
	return paths
}

// ConfigRows returns the configs.csv rows of expanded configs.
func ConfigRows(configs []experiment.Config) []ConfigRow {
	rows := make([]ConfigRow, len(configs))
	for i, c := range configs {
		rows[i] = ConfigRow{Index: c.Index, ID: c.ID, ServerID: c.ServerID, Label: c.Label, Axes: c.Axes}
	}
	return rows
}

// ConfigsCSV is configs.csv: one row per config, in expansion order, its fixed columns (the
// Columns) followed by one column per axis path of the folder's configs (ColumnsOf), which
// Write derives from its rows. Read back, every column after the fixed ones is an axis, in file
// order; an empty cell is an axis that the config does not set.
var ConfigsCSV = &Table[ConfigRow]{file: ConfigsFile, cols: configsFixed(),
	extra: readAxes,
	shape: func(_ *Table[ConfigRow], rows []ConfigRow) *Table[ConfigRow] {
		return configsTable(axisPaths(rows))
	},
	inFolder: func(_ *Table[ConfigRow], configs []ConfigRow, _ func(string) bool) []Column {
		return configsTable(axisPaths(configs)).Columns()
	},
}

// readAxes reads the cells of the columns after the fixed ones as the config's axes.
func readAxes(c *ConfigRow, names, vals []string) error {
	for i, n := range names {
		if vals[i] == "" {
			continue
		}
		v, err := unescapeCell(vals[i])
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		c.Axes = append(c.Axes, experiment.AxisValue{Path: n, Value: v})
	}
	return nil
}
