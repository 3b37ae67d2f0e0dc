package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Limits on the work one experiment file may ask for. They are far above any useful benchmark
// (a million requests of a few seconds each is weeks of GPU time) and keep a typo such as
// repetitions: 1000000000 from turning into a run that fills the disk, and every total below
// them from overflowing.
const (
	MaxConfigs     = 10_000    // configs one experiment may expand to
	MaxRepetitions = 100_000   // measured requests per config
	MaxWarmup      = 10_000    // warm-up requests per config
	MaxRequests    = 1_000_000 // requests per run, first requests and warm-ups included
)

type expander struct {
	e    *Experiment
	errs ErrorList
}

// errorf records a problem about the field written at src, at its position in the file.
func (x *expander) errorf(src, format string, args ...any) {
	x.errorAt(src, src, format, args...)
}

// errorAt records a problem about path at the file position of at, or of its nearest enclosing
// field.
func (x *expander) errorAt(at, path, format string, args ...any) {
	p := x.e.lookup(at)
	x.errs = append(x.errs, &Error{File: x.e.Path, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// lookup finds the position of a field path, or of its nearest enclosing field.
func (e *Experiment) lookup(path string) pos {
	for {
		if p, ok := e.pos[path]; ok {
			return p
		}
		i := max(strings.LastIndexAny(path, ".["), 0)
		// Axis names contain dots; try the matrix key itself before cutting into it.
		if rest, ok := strings.CutPrefix(path, "matrix."); ok && !strings.ContainsAny(rest, "[") && i > 0 {
			i = len("matrix")
		}
		if path == "" {
			return pos{}
		}
		path = path[:i]
	}
}

// Expand returns the experiment's configs in a deterministic order: the cartesian product of the
// matrix axes, the first axis varying slowest, less the excluded points, then the points the
// include list adds. Each config has its defaults applied and exactly one resolved prompt, and is
// checked on its own (prompt_tokens + max_tokens must fit max_model_len, fields must apply to the
// engine, ...). The error, if any, is an ErrorList.
func (e *Experiment) Expand() ([]Config, error) {
	x := &expander{e: e}
	cfgs := x.expand()
	if len(x.errs) > 0 {
		return nil, x.errs.sort()
	}
	return cfgs, nil
}

// expand builds the points of the matrix and turns each into a checked Config with its ids.
func (x *expander) expand() []Config {
	base, baseSrc := x.base()
	axes := x.axes(&base)
	if len(x.errs) > 0 {
		return nil
	}
	points, ok := x.product(axes)
	if !ok {
		return nil
	}
	points = x.exclude(axes, points)
	points = x.include(axes, points)
	if len(points) > MaxConfigs {
		x.errorf("matrix", "the matrix expands to more than %d configs", MaxConfigs)
		return nil
	}

	order := displayOrder(axes)
	cfgs := make([]Config, 0, len(points))
	seen := map[string]int{} // config id → index in cfgs
	for _, p := range points {
		c, ok := x.config(base, baseSrc, p, order)
		if !ok {
			continue
		}
		c.Index = len(cfgs)
		if j, dup := seen[c.ID]; dup {
			x.errorf(p.src, "config %s is the same as config %s (id %s)", c.Label, cfgs[j].Label, c.ID)
			continue
		}
		seen[c.ID] = len(cfgs)
		cfgs = append(cfgs, c)
	}
	x.checkRun(cfgs)
	return cfgs
}

// base returns the config every point starts from, the experiment's own sections without the
// named prompts (each point resolves its own), and where each field it sets was written: at its
// own path, since the sections are written once for the whole file.
func (x *expander) base() (Config, map[string]string) {
	e := x.e
	base := Config{
		Server:      e.Server,
		Request:     e.Request,
		Repetitions: e.Repetitions,
		Warmup:      e.Warmup,
		Cache:       e.Cache,
		Timeouts:    e.Timeouts,
		Load:        e.Load,
		SLO:         e.SLO,
	}
	base = base.clone()
	base.Request.Prompts = nil
	src := map[string]string{}
	for _, f := range fields {
		if f.isSet(&base) {
			src[f.path] = f.path
		}
	}
	for path, set := range map[string]bool{
		"server.args": len(base.Server.Args) > 0, "server.env": len(base.Server.Env) > 0,
		"server.command": len(base.Server.Command) > 0, "request.stop": len(base.Request.Stop) > 0,
		"request.extra": len(base.Request.Extra) > 0,
	} {
		if set {
			src[path] = path
		}
	}
	return base, src
}

// displayOrder ranks the fields the way a config's label and axis values list them: the axes
// first, in their order, then the fields that only include entries set, in field-table order.
func displayOrder(axes []axisDef) map[string]int {
	order := map[string]int{}
	for i, a := range axes {
		order[a.f.path] = i
	}
	for i, f := range fields {
		if _, ok := order[f.path]; !ok {
			order[f.path] = len(axes) + i
		}
	}
	return order
}

// config applies a point's values to a copy of base, checks and resolves the result, and gives
// it its label and ids. It reports false when it recorded a problem; Index is left to the caller.
func (x *expander) config(base Config, baseSrc map[string]string, p *point, order map[string]int) (Config, bool) {
	slices.SortStableFunc(p.cells, func(a, b cell) int { return order[a.f.path] - order[b.f.path] })
	c := base.clone()
	src := maps.Clone(baseSrc)
	for _, cl := range p.cells {
		cl.f.set(&c, cl.norm)
		src[cl.f.path] = cl.src
		c.Axes = append(c.Axes, AxisValue{Path: cl.f.path, Value: formatValue(cl.raw)})
	}
	c.Label = label(p.cells)
	if !x.resolve(&c, src) {
		return Config{}, false
	}
	id, sid, err := ids(&c)
	if err != nil {
		x.errorf(src["request.extra"], "%v", err)
		return Config{}, false
	}
	c.ID, c.ServerID = id, sid
	return c, true
}

// checkRun checks what the configs ask of the run as a whole: an order their load points allow,
// and no more requests than one run may send.
func (x *expander) checkRun(cfgs []Config) {
	e := x.e
	// Under load, each config's requests run as one block (a load point): no order can mix
	// them with another config's.
	if e.Order.Mode != "sequential" && slices.ContainsFunc(cfgs, func(c Config) bool { return c.Load != nil }) {
		x.errorf("order.mode", "order %s mixes the requests of different configs, but each load point runs as one block: set order: sequential, or remove the load section", e.Order.Mode)
	}
	if n := Requests(cfgs); n > MaxRequests {
		at := "repetitions"
		if _, ok := e.pos[at]; !ok {
			at = "matrix"
		}
		x.errorf(at, "the run would send %s requests (%d configs × (%d warm-up + %d repetitions), plus one first request per server boot); one run may send at most %d: lower repetitions or warmup, or split the matrix into several experiment files",
			requestCount(n), len(cfgs), e.Warmup, e.Repetitions, MaxRequests)
	}
}

// Requests returns the number of requests a run of cfgs sends: one first request per server
// boot, then every config's warm-up and measured requests. It saturates at the largest int
// instead of overflowing.
func Requests(cfgs []Config) int {
	total := 0
	boots := map[string]bool{}
	for _, c := range cfgs {
		if !boots[c.ServerID] {
			boots[c.ServerID] = true
			total = AddSat(total, 1)
		}
		total = AddSat(total, AddSat(max(c.Warmup, 0), max(c.Repetitions, 0)))
	}
	return total
}

// AddSat adds two non-negative ints, saturating at the largest int, for totals that must not
// overflow.
func AddSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// requestCount writes a request total, saying "more than" when it saturated.
func requestCount(n int) string {
	if n == math.MaxInt {
		return fmt.Sprintf("more than %d", math.MaxInt-1)
	}
	return fmt.Sprint(n)
}

// clone copies a config deeply enough that setting a field of the copy leaves c alone.
func (c Config) clone() Config {
	c.Server.Args = slices.Clone(c.Server.Args)
	c.Server.Command = slices.Clone(c.Server.Command)
	c.Server.Env = maps.Clone(c.Server.Env)
	c.Request.Stop = slices.Clone(c.Request.Stop)
	c.Request.Extra = maps.Clone(c.Request.Extra)
	if c.Load != nil {
		l := *c.Load
		c.Load = &l
	}
	c.SLO = slices.Clone(c.SLO)
	c.Axes = nil
	return c
}
