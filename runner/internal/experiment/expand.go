package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
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

// idLen is the number of hex characters of a config or server id.
const idLen = 12

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

func (p *point) get(path string) (cell, bool) {
	for _, c := range p.cells {
		if c.f.path == path {
			return c, true
		}
	}
	return cell{}, false
}

// expander expands one experiment, collecting every problem.
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

// axisDef is one resolved axis.
type axisDef struct {
	f     *field
	cells []cell
}

func (x *expander) expand() []Config {
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
	baseSrc := map[string]string{}
	for _, f := range fields {
		if f.isSet(&base) {
			baseSrc[f.path] = f.path
		}
	}
	for path, set := range map[string]bool{
		"server.args": len(base.Server.Args) > 0, "server.env": len(base.Server.Env) > 0,
		"server.command": len(base.Server.Command) > 0, "request.stop": len(base.Request.Stop) > 0,
		"request.extra": len(base.Request.Extra) > 0,
	} {
		if set {
			baseSrc[path] = path
		}
	}

	axes := x.axes(&base)
	if len(x.errs) > 0 {
		return nil
	}
	total := 1
	for _, a := range axes {
		total *= len(a.cells)
		if total > MaxConfigs {
			x.errorf("matrix", "the matrix expands to more than %d configs", MaxConfigs)
			return nil
		}
	}

	// The cartesian product, first axis outermost.
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

	points = x.exclude(axes, points)
	points = x.include(axes, points)
	if len(points) > MaxConfigs {
		x.errorf("matrix", "the matrix expands to more than %d configs", MaxConfigs)
		return nil
	}

	order := map[string]int{} // the display order of fields: axes first, then include-only fields
	for i, a := range axes {
		order[a.f.path] = i
	}
	for i, f := range fields {
		if _, ok := order[f.path]; !ok {
			order[f.path] = len(axes) + i
		}
	}

	cfgs := make([]Config, 0, len(points))
	seen := map[string]int{}
	for _, p := range points {
		slices.SortStableFunc(p.cells, func(a, b cell) int { return order[a.f.path] - order[b.f.path] })
		c := base.clone()
		src := maps.Clone(baseSrc)
		var labels []string
		for _, cl := range p.cells {
			cl.f.set(&c, cl.norm)
			src[cl.f.path] = cl.src
			v := formatValue(cl.raw)
			c.Axes = append(c.Axes, AxisValue{Path: cl.f.path, Value: v})
			labels = append(labels, cl.f.short()+"="+shorten(v))
		}
		c.Label = "default"
		if len(labels) > 0 {
			c.Label = strings.Join(labels, ",")
		}
		if !x.resolve(&c, src) {
			continue
		}
		id, sid, err := ids(&c)
		if err != nil {
			x.errorf(src["request.extra"], "%v", err)
			continue
		}
		c.ID, c.ServerID, c.Index = id, sid, len(cfgs)
		if j, dup := seen[id]; dup {
			x.errorf(p.src, "config %s is the same as config %s (id %s)", c.Label, cfgs[j].Label, id)
			continue
		}
		seen[id] = len(cfgs)
		cfgs = append(cfgs, c)
	}
	// Under load, each config's requests run as one block (a load point): no order can mix
	// them with another config's.
	if e.Order.Mode != "sequential" && slices.ContainsFunc(cfgs, func(c Config) bool { return c.Load != nil }) {
		x.errorf("order.mode", "order %s mixes the requests of different configs, but each load point runs as one block: set order: sequential, or remove the load section", e.Order.Mode)
	}
	if n := Requests(cfgs); n > MaxRequests {
		at := "repetitions"
		if _, ok := x.e.pos[at]; !ok {
			at = "matrix"
		}
		x.errorf(at, "the run would send %s requests (%d configs × (%d warm-up + %d repetitions), plus one first request per server boot); one run may send at most %d: lower repetitions or warmup, or split the matrix into several experiment files",
			requestCount(n), len(cfgs), x.e.Warmup, x.e.Repetitions, MaxRequests)
	}
	return cfgs
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

// shorten keeps long values (literal prompts) readable in labels: one line, at most n runes.
func shorten(s string) string {
	const n = 24
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
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

// Boots reports whether the engine starts a server process (every engine but endpoint).
func Boots(engine string) bool { return enginefacts.Boots(engine) }

// CanResetCache reports whether engine can empty its prefix cache, so that cache: reset is
// possible (for endpoint, possible if the running server offers it).
func CanResetCache(engine string) bool { return enginefacts.CanReset(engine) }

// resetProblem says why a config cannot reset the prefix cache, or "" when it can. It depends
// on the engine, and for an engine whose reset needs a variable (vllm and sim:
// VLLM_SERVER_DEV_MODE) on server.env, which may turn it off.
func resetProblem(c *Config) string {
	eng := c.Server.Engine
	e, _ := enginefacts.Lookup(eng)
	if !e.CanReset {
		// The engines to switch to are those the runner boots: whether a running server can
		// reset is known only once the runner connects to it.
		var can []string
		for _, o := range enginefacts.All() {
			if o.CanReset && o.Boots {
				can = append(can, o.Name)
			}
		}
		return fmt.Sprintf("engine %s cannot empty its prefix cache: set cache: keep (its default), or use an engine that can (%s)", eng, strings.Join(can, ", "))
	}
	if name := e.ResetEnv; name != "" {
		if v, ok := c.Server.Env[name]; ok && v != "1" && !slices.ContainsFunc(c.Server.Args, isDevModeFlag) {
			return fmt.Sprintf("engine %s empties its prefix cache only with %s=1, and server.env sets it to %q: set cache: keep, or leave %s out of server.env", eng, name, v, name)
		}
	}
	return ""
}

// isDevModeFlag reports whether a server argument turns on runner sim's reset endpoint.
func isDevModeFlag(a string) bool {
	return a == "--dev-mode" || a == "-dev-mode" || a == "--dev-mode=true" || a == "-dev-mode=true"
}

// resolve applies defaults to one config, checks it on its own, and resolves its prompt. src
// maps each field path to where its value was written.
func (x *expander) resolve(c *Config, src map[string]string) bool {
	n := len(x.errs)
	// missing reports a field that is not set: the path is the field, the position its section.
	missing := func(path, section, format string, args ...any) {
		p := section
		if _, ok := x.e.pos[section]; !ok && x.e.pos != nil {
			p = ""
		}
		x.errorAt(p, path, format, args...)
	}
	// about names the config in a message when one of the fields involved comes from the
	// matrix; otherwise the problem is the same for every config and is reported once.
	about := func(paths ...string) string {
		for _, p := range paths {
			if s := src[p]; strings.HasPrefix(s, "matrix.") || strings.HasPrefix(s, "request.prompts[") {
				return " (config " + c.Label + ")"
			}
		}
		return ""
	}
	if c.Server.Engine == "" {
		c.Server.Engine = DefaultEngine
	}
	if c.Request.API == "" {
		c.Request.API = DefaultAPI
	}
	eng := c.Server.Engine

	set := map[string]bool{
		"server.args": len(c.Server.Args) > 0, "server.env": len(c.Server.Env) > 0,
		"server.command": len(c.Server.Command) > 0,
	}
	for _, f := range fields {
		set[f.path] = f.isSet(c)
	}
	e, _ := enginefacts.Lookup(eng)
	for _, name := range enginefacts.ServerFields {
		if p := "server." + name; set[p] && !e.Takes(name) {
			x.errorf(src[p], "does not apply to engine %s; it is for %s%s", eng, strings.Join(enginefacts.Taking(name), ", "), about(p, "server.engine"))
		}
	}
	for _, name := range e.Requires {
		p := "server." + name
		switch {
		case set[p]:
		case name == "model":
			what := "the model the server loads"
			if !e.Boots {
				what = "sent as the request's model field"
			}
			missing(p, "server", "is required for engine %s (%s)%s", eng, what, about("server.engine"))
		default:
			missing(p, "server", "is required for engine %s%s", eng, about("server.engine"))
		}
	}
	// An engine that takes its command line from the file needs the port in it, unless the
	// file fixes the port.
	if e.Takes("command") && set["server.command"] && c.Server.Port == 0 &&
		!slices.ContainsFunc(append(slices.Clone(c.Server.Command), c.Server.Args...), func(a string) bool { return strings.Contains(a, "{port}") }) {
		x.errorf(src["server.command"], "must pass the port with a {port} placeholder, or server.port must be set%s", about("server.engine", "server.port"))
	}

	// A reset the engine cannot do would fail every request at run time; without an explicit
	// cache, such a config defaults to keep (applyDefaults).
	if set["cache"] && c.Cache == "reset" {
		if msg := resetProblem(c); msg != "" {
			x.errorf(src["cache"], "%s%s", msg, about("cache", "server.engine", "server.env", "server.args"))
		}
	}

	x.checkLoad(c, src, set, about)

	var sources []string
	for _, p := range []string{"request.prompt", "request.prompt_name", "request.prompt_tokens"} {
		if set[p] {
			sources = append(sources, p)
		}
	}
	switch len(sources) {
	case 0:
		missing("request", "request", "no prompt: set one of request.prompt, request.prompt_tokens or request.prompts")
	case 1:
	default:
		// The conflict is the same at every value of an axis: report it once, at the axis.
		at := src[sources[1]]
		if i := strings.LastIndex(at, "["); i > 0 && strings.HasPrefix(at, "matrix.") && !strings.Contains(at, "matrix.include[") {
			at = at[:i]
		}
		x.errorf(at, "%s and %s both choose the prompt; keep one", sources[0], sources[1])
	}
	if set["request.prompt_name"] {
		i := slices.IndexFunc(x.e.Request.Prompts, func(np NamedPrompt) bool { return np.Name == c.Request.PromptName })
		if i < 0 {
			var names []string
			for _, np := range x.e.Request.Prompts {
				names = append(names, np.Name)
			}
			if len(names) == 0 {
				x.errorf(src["request.prompt_name"], "names prompt %q, but request.prompts is empty", c.Request.PromptName)
			} else {
				x.errorf(src["request.prompt_name"], "no prompt named %q in request.prompts%s", c.Request.PromptName, suggest(c.Request.PromptName, names))
			}
		} else {
			c.Request.Prompt = x.e.Request.Prompts[i].Text
		}
	}

	if !set["request.max_tokens"] {
		missing("request.max_tokens", "request", "is required (set it in request or sweep it in matrix)")
	}
	if c.Request.MinTokens != nil && c.Request.MaxTokens > 0 && *c.Request.MinTokens > c.Request.MaxTokens {
		x.errorf(src["request.min_tokens"], "min_tokens %d is more than max_tokens %d%s", *c.Request.MinTokens, c.Request.MaxTokens, about("request.min_tokens", "request.max_tokens"))
	}
	if m := c.Server.MaxModelLen; m > 0 && c.Request.MaxTokens > 0 {
		fit := []string{"request.prompt_tokens", "request.max_tokens", "server.max_model_len"}
		if c.Request.MaxTokens >= m {
			// Too long whatever the prompt: the same problem for every config with this value.
			x.errorf(src["request.max_tokens"], "max_tokens %d leaves no room for a prompt within max_model_len %d", c.Request.MaxTokens, m)
		} else if c.Request.PromptTokens > 0 && c.Request.PromptTokens+c.Request.MaxTokens > m {
			// Point at a value the matrix varies, since that is the one to change.
			at := src["request.prompt_tokens"]
			for _, p := range fit {
				if s, ok := src[p]; ok && s != p {
					at = s
					break
				}
			}
			x.errorf(at, "prompt_tokens %d + max_tokens %d = %d does not fit max_model_len %d%s",
				c.Request.PromptTokens, c.Request.MaxTokens, c.Request.PromptTokens+c.Request.MaxTokens, m, about(fit...))
		}
	}
	if len(x.errs) > n {
		return false
	}
	applyDefaults(c)
	return true
}

// checkLoad checks a config's load and how it treats the prefix cache under it.
func (x *expander) checkLoad(c *Config, src map[string]string, set map[string]bool, about func(...string) string) {
	l := c.Load
	if l == nil {
		if c.Cache == "reset_per_config" {
			x.errorf(src["cache"], "reset_per_config empties the prefix cache once before a load point, and this experiment has no load section: set cache: reset (before every request) or keep, or add a load section (load: {concurrency: 1} sends one request at a time)%s", about("cache"))
		}
		return
	}
	// where points at a load field, or at the load section when the field is not written.
	where := func(p string) string {
		if s, ok := src[p]; ok {
			return s
		}
		return "load"
	}
	open := set["load.rate"]
	if open && set["load.concurrency"] {
		at := src["load.rate"]
		if strings.HasPrefix(src["load.concurrency"], "matrix.") {
			at = src["load.concurrency"]
		}
		x.errorf(at, "load.concurrency (a closed loop) and load.rate (an open loop) are both set: choose one per load point; cap an open loop with load.max_concurrency; to measure both kinds, write them in two experiment files%s", about("load.rate", "load.concurrency"))
		return
	}
	if !open {
		for _, p := range []string{"load.arrival", "load.burstiness", "load.max_concurrency"} {
			if set[p] {
				x.errorf(src[p], "applies to an open loop only: set load.rate (requests per second), or remove %s%s", p, about(p))
			}
		}
	}
	if set["load.burstiness"] && set["load.arrival"] && l.Arrival != "gamma" {
		x.errorf(src["load.burstiness"], "is the shape of gamma arrivals, and load.arrival is %s: set load.arrival: gamma, or remove load.burstiness%s", l.Arrival, about("load.burstiness", "load.arrival"))
	}
	if c.Cache == "reset" && (open || l.Concurrency > 1) {
		// The message names no value, so that an axis gives one error, not one per value.
		what := "load.concurrency above 1 keeps several requests in flight"
		at := where("load.concurrency")
		if open {
			what = "load.rate sends requests without waiting for the last to end"
			at = where("load.rate")
		}
		x.errorf(src["cache"], "cache: reset empties the prefix cache before every request, which cannot be done with more than one request in flight (%s, line %d): set cache: reset_per_config (empty it once before each load point) or cache: keep%s",
			what, x.e.lookup(at).Line, about("cache"))
	}
	if c.Cache == "reset_per_config" {
		if msg := resetProblem(c); msg != "" {
			x.errorf(src["cache"], "%s%s", msg, about("cache", "server.engine", "server.env", "server.args"))
		}
	}
}

// applyDefaults fills what a config leaves unset. Warm-up is not among them: 0 is a valid count,
// so its default is applied when the file is read.
func applyDefaults(c *Config) {
	if c.Server.Engine == "" {
		c.Server.Engine = DefaultEngine
	}
	if c.Request.API == "" {
		c.Request.API = DefaultAPI
	}
	if l := c.Load; l != nil {
		if l.Rate > 0 {
			if l.Arrival == "" {
				l.Arrival = DefaultArrival
				if l.Burstiness != 0 {
					l.Arrival = "gamma"
				}
			}
			if l.Arrival == "gamma" && l.Burstiness == 0 {
				l.Burstiness = DefaultBurstiness
			}
		} else if l.Concurrency == 0 {
			l.Concurrency = 1
		}
		if l.Prompts == "" {
			l.Prompts = DefaultPrompts
		}
	}
	if c.Cache == "" {
		c.Cache = DefaultCache
		if c.Load != nil {
			// One reset per load point: a reset before every request would need the
			// requests one at a time, which a load point does not promise.
			c.Cache = "reset_per_config"
		}
		if resetProblem(c) != "" {
			c.Cache = "keep"
		}
	}
	if c.Repetitions == 0 {
		c.Repetitions = DefaultRepetitions
	}
	if c.Timeouts.Request == 0 {
		c.Timeouts.Request = DefaultRequestTimeout
	}
	s := &c.Server
	e, _ := enginefacts.Lookup(s.Engine)
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = e.ReadyTimeout
	}
	for _, name := range enginefacts.ServerFields {
		if v, ok := e.Defaults[name]; ok {
			if f := fieldByPath("server." + name); !f.isSet(c) {
				f.set(c, v)
			}
		}
	}
}

// canonServer is the content of a server config that its id is computed from. Field names are
// the file's; empty fields are left out, so a field added later does not change existing ids.
type canonServer struct {
	Engine       string            `json:"engine"`
	Model        string            `json:"model,omitempty"`
	Dtype        string            `json:"dtype,omitempty"`
	MaxModelLen  int               `json:"max_model_len,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	ReadyTimeout string            `json:"ready_timeout,omitempty"`
	Host         string            `json:"host,omitempty"`
	Port         int               `json:"port,omitempty"`
	URL          string            `json:"url,omitempty"`
	APIKeyEnv    string            `json:"api_key_env,omitempty"`
	Entrypoint   string            `json:"entrypoint,omitempty"`
	Command      []string          `json:"command,omitempty"`
	ReadyPath    string            `json:"ready_path,omitempty"`
}

// canonRequest is the content of a request that a config id is computed from.
type canonRequest struct {
	API          string         `json:"api"`
	Prompt       string         `json:"prompt,omitempty"`
	PromptName   string         `json:"prompt_name,omitempty"`
	PromptTokens int            `json:"prompt_tokens,omitempty"`
	MaxTokens    int            `json:"max_tokens"`
	IgnoreEOS    *bool          `json:"ignore_eos,omitempty"`
	MinTokens    *int           `json:"min_tokens,omitempty"`
	Temperature  *float64       `json:"temperature,omitempty"`
	Seed         *int           `json:"seed,omitempty"`
	Stop         []string       `json:"stop,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// canonConfig is the whole content a config id is computed from.
type canonConfig struct {
	Server      canonServer       `json:"server"`
	Request     canonRequest      `json:"request"`
	Repetitions int               `json:"repetitions"`
	Warmup      int               `json:"warmup"`
	Cache       string            `json:"cache"`
	Timeouts    map[string]string `json:"timeouts"`
	// Load is left out for a config without a load section, so that adding loads changed no
	// existing id.
	Load *canonLoad `json:"load,omitempty"`
}

// canonLoad is the content of a load that a config id is computed from.
type canonLoad struct {
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Arrival        string  `json:"arrival,omitempty"`
	Burstiness     float64 `json:"burstiness,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	Seed           int64   `json:"seed,omitempty"`
	Prompts        string  `json:"prompts"`
}

// durationText renders a duration canonically, or "" for zero.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// ids computes the config id and the server id: the first 12 hex digits of the sha256 of their
// canonical encodings.
func ids(c *Config) (id, serverID string, err error) {
	cb, sb, err := canonical(c)
	if err != nil {
		return "", "", err
	}
	return hash(cb), hash(sb), nil
}

// canonical encodes a config's content, and its server's, as JSON. JSON encodes struct fields in
// declaration order and map keys sorted, so the bytes are the same on any machine; the file's
// path, the experiment's name and the config's position play no part.
func canonical(c *Config) (config, server []byte, err error) {
	s := c.Server
	cs := canonServer{
		Engine: s.Engine, Model: s.Model, Dtype: s.Dtype, MaxModelLen: s.MaxModelLen,
		Args: s.Args, Env: s.Env, ReadyTimeout: durationText(s.ReadyTimeout), Host: s.Host,
		Port: s.Port, URL: s.URL, APIKeyEnv: s.APIKeyEnv, Entrypoint: s.Entrypoint,
		Command: s.Command, ReadyPath: s.ReadyPath,
	}
	r := c.Request
	cc := canonConfig{
		Server: cs,
		Request: canonRequest{
			API: r.API, Prompt: r.Prompt, PromptName: r.PromptName, PromptTokens: r.PromptTokens,
			MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, MinTokens: r.MinTokens,
			Temperature: r.Temperature, Seed: r.Seed, Stop: r.Stop, Extra: r.Extra,
		},
		Repetitions: c.Repetitions,
		Warmup:      c.Warmup,
		Cache:       c.Cache,
		Timeouts:    map[string]string{"request": durationText(c.Timeouts.Request)},
	}
	if l := c.Load; l != nil {
		cc.Load = &canonLoad{Concurrency: l.Concurrency, Rate: l.Rate, Arrival: l.Arrival, Burstiness: l.Burstiness,
			MaxConcurrency: l.MaxConcurrency, Seed: l.Seed, Prompts: l.Prompts}
	}
	if server, err = json.Marshal(cs); err != nil {
		return nil, nil, fmt.Errorf("encode server config: %w", err)
	}
	if config, err = json.Marshal(cc); err != nil {
		return nil, nil, fmt.Errorf("encode config: %w", err)
	}
	return config, server, nil
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:idLen]
}
