package tabular

// Noted is what GroupWarnings needs of one row of a table: the group it belongs to (a config,
// say), the label it is shown by, the metric it describes and its warnings.
type Noted struct {
	Group    string
	Label    string
	Metric   string
	Warnings []string
}

// Warning is one distinct warning of a group of rows, with the metrics it concerns.
type Warning struct {
	Group   string // the group's Noted.Group
	Label   string
	Text    string
	Metrics []string // "all metrics" alone when the warning concerns every row of its group
}

// GroupWarnings merges the warnings of each run of rows of one group: one entry per distinct
// text, in order of first appearance, with the metrics it concerns. A warning that concerns
// every row of a group of more than one row concerns "all metrics".
func GroupWarnings(rows []Noted) []Warning {
	var out []Warning
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Group == rows[i].Group {
			j++
		}
		var group []Warning
		for _, r := range rows[i:j] {
			for _, w := range r.Warnings {
				k := 0
				for k < len(group) && group[k].Text != w {
					k++
				}
				if k == len(group) {
					group = append(group, Warning{Group: r.Group, Label: r.Label, Text: w})
				}
				group[k].Metrics = append(group[k].Metrics, r.Metric)
			}
		}
		for k := range group {
			if len(group[k].Metrics) == j-i && j-i > 1 {
				group[k].Metrics = []string{"all metrics"}
			}
		}
		out = append(out, group...)
		i = j
	}
	return out
}
