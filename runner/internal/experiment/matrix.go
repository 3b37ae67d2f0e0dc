package experiment

import (
	"fmt"
	"slices"
)

// cell is one field value of a matrix point, with the path in the file that gave it.
type cell struct {
	f    *field
	raw  any    // as written: the text of an axis value
	norm any    // as the field's setter takes it
	src  string // e.g. matrix.request.max_tokens[1]
}

// point is one combination of the matrix before it becomes a Config.
type point struct {
	cells []cell
	src   string // where the point came from: "matrix" or matrix.include[i]
}

// get returns the point's cell of the field at path, if it has one.
func (p *point) get(path string) (cell, bool) {
	for _, c := range p.cells {
		if c.f.path == path {
			return c, true
		}
	}
	return cell{}, false
}

// axisDef is one resolved axis.
type axisDef struct {
	f     *field
	cells []cell
}

// axes resolves the matrix axes, checking each value against its field. When the file lists
// named prompts and chooses none, the prompts form an implicit first axis.
func (x *expander) axes(base *Config) []axisDef {
	e := x.e
	var out []axisDef
	explicit := map[string]bool{}
	for _, a := range e.Matrix.Axes {
		explicit[a.Path] = true
	}
	if len(e.Request.Prompts) > 0 && !explicit["request.prompt_name"] && base.Request.PromptName == "" {
		f := fieldByPath("request.prompt_name")
		a := axisDef{f: f}
		for i, np := range e.Request.Prompts {
			a.cells = append(a.cells, cell{f: f, raw: np.Name, norm: np.Name, src: keyPath(indexPath("request.prompts", i), "name")})
		}
		out = append(out, a)
	}
	for _, a := range e.Matrix.Axes {
		ap := "matrix." + a.Path
		f := fieldByPath(a.Path)
		if f == nil || !f.axis {
			x.errorf(ap, "unknown axis %q", a.Path)
			continue
		}
		if len(a.Values) == 0 {
			x.errorf(ap, "an axis must have at least one value")
			continue
		}
		if slices.ContainsFunc(out, func(d axisDef) bool { return d.f == f }) {
			x.errorf(ap, "%s is swept twice", a.Path)
			continue
		}
		if f.isSet(base) {
			x.errorf(f.path, "is also swept by the matrix axis %s; set it in one place", a.Path)
		}
		d := axisDef{f: f}
		seen := map[any]int{} // value → index
		for i, raw := range a.Values {
			vp := indexPath(ap, i)
			norm, msg := f.normalize(raw)
			if msg != "" {
				x.errorf(vp, "%s", msg)
				continue
			}
			if j, dup := seen[norm]; dup {
				x.errorf(vp, "value %s is already listed at %s", formatValue(raw), indexPath(ap, j))
				continue
			}
			seen[norm] = i
			d.cells = append(d.cells, cell{f: f, raw: raw, norm: norm, src: vp})
		}
		out = append(out, d)
	}
	return out
}

// entryCells checks an include or exclude entry and returns its cells in field-table order.
func (x *expander) entryCells(list string, i int, m map[string]any) ([]cell, bool) {
	ep := indexPath("matrix."+list, i)
	if len(m) == 0 {
		x.errorf(ep, "an entry must name at least one field")
		return nil, false
	}
	var out []cell
	ok := true
	for _, f := range fields {
		raw, has := m[f.path]
		if !has {
			continue
		}
		if !f.axis {
			x.errorf(keyPath(ep, f.path), "%s cannot be a matrix axis; it applies to the whole experiment", f.path)
			ok = false
			continue
		}
		norm, msg := f.normalize(raw)
		if msg != "" {
			x.errorf(keyPath(ep, f.path), "%s", msg)
			ok = false
			continue
		}
		out = append(out, cell{f: f, raw: raw, norm: norm, src: keyPath(ep, f.path)})
	}
	for k := range m {
		if fieldByPath(k) == nil {
			x.errorf(keyPath(ep, k), "unknown axis %q", k)
			ok = false
		}
	}
	return out, ok
}

// exclude drops the points that match an exclude entry on every field it names. An entry that
// matches no point is an error: it is most likely a typo.
func (x *expander) exclude(axes []axisDef, points []*point) []*point {
	drop := make([]bool, len(points))
	for i, m := range x.e.Matrix.Exclude {
		cells, ok := x.entryCells("exclude", i, m)
		if !ok {
			continue
		}
		for _, c := range cells {
			if !slices.ContainsFunc(axes, func(a axisDef) bool { return a.f == c.f }) {
				x.errorf(c.src, "%s", notAxisMsg(c.f.path))
				ok = false
			}
		}
		if !ok {
			continue
		}
		matched := false
		for j, p := range points {
			if matches(p, cells) {
				drop[j], matched = true, true
			}
		}
		if !matched {
			x.errorf(indexPath("matrix.exclude", i), "this entry matches no config of the matrix")
		}
	}
	var out []*point
	for j, p := range points {
		if !drop[j] {
			out = append(out, p)
		}
	}
	return out
}

// notAxisMsg is the problem of an exclude entry naming a field that is not swept.
func notAxisMsg(path string) string {
	return fmt.Sprintf("%s is not a matrix axis, so this entry can exclude nothing", path)
}

// matches reports whether a point has every one of the cells' values.
func matches(p *point, cells []cell) bool {
	for _, c := range cells {
		pc, ok := p.get(c.f.path)
		if !ok || pc.norm != c.norm {
			return false
		}
	}
	return true
}

// include applies the include list the way CI matrices do: an entry whose axis values match
// existing points adds its other fields to each of them; an entry that matches none is added as
// a point of its own.
func (x *expander) include(axes []axisDef, points []*point) []*point {
	original := len(points)
	for i, m := range x.e.Matrix.Include {
		cells, ok := x.entryCells("include", i, m)
		if !ok {
			continue
		}
		var onAxes, others []cell
		for _, c := range cells {
			if slices.ContainsFunc(axes, func(a axisDef) bool { return a.f == c.f }) {
				onAxes = append(onAxes, c)
			} else {
				others = append(others, c)
			}
		}
		matched := false
		for _, p := range points[:original] {
			if !matches(p, onAxes) {
				continue
			}
			matched = true
			for _, c := range others {
				if j := slices.IndexFunc(p.cells, func(pc cell) bool { return pc.f == c.f }); j >= 0 {
					p.cells[j] = c
				} else {
					p.cells = append(p.cells, c)
				}
			}
		}
		switch {
		case matched && len(others) == 0:
			x.errorf(indexPath("matrix.include", i), "this entry only repeats configs the matrix already has")
		case !matched:
			points = append(points, &point{cells: slices.Clone(cells), src: indexPath("matrix.include", i)})
			if len(points) > MaxConfigs {
				return points // reported by the caller
			}
		}
	}
	return points
}

// product returns the cartesian product of the axes, the first axis outermost. It reports false,
// having recorded the problem, when the product has more than MaxConfigs points.
func (x *expander) product(axes []axisDef) ([]*point, bool) {
	total := 1
	for _, a := range axes {
		total *= len(a.cells)
		if total > MaxConfigs {
			x.errorf("matrix", "the matrix expands to more than %d configs", MaxConfigs)
			return nil, false
		}
	}
	var points []*point
	idx := make([]int, len(axes))
	for range total {
		p := &point{src: "matrix"}
		for i, a := range axes {
			p.cells = append(p.cells, a.cells[idx[i]])
		}
		points = append(points, p)
		for i := len(axes) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(axes[i].cells) {
				break
			}
			idx[i] = 0
		}
	}
	return points, true
}
