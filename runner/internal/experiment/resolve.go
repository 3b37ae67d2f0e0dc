package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
)

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
// maps each field path to where its value was written. It reports false when it recorded a
// problem.
func (x *expander) resolve(c *Config, src map[string]string) bool {
	n := len(x.errs)
	if c.Server.Engine == "" {
		c.Server.Engine = DefaultEngine
	}
	if c.Request.API == "" {
		c.Request.API = DefaultAPI
	}
	r := &configCheck{x: x, c: c, src: src, set: fieldsSet(c)}
	r.checkEngine()
	r.checkReset()
	r.checkLoad()
	r.resolvePrompt()
	r.checkTokens()
	if len(x.errs) > n {
		return false
	}
	applyDefaults(c)
	return true
}

// configCheck is one config being checked, with what it sets and where each of its values was
// written, so that a problem is reported at the value to change.
type configCheck struct {
	x   *expander
	c   *Config
	src map[string]string // field path → where its value was written
	set map[string]bool   // field path → whether the config sets it, before its prompt is resolved
}

// fieldsSet reports, for each field path, whether c sets it.
func fieldsSet(c *Config) map[string]bool {
	set := map[string]bool{
		"server.args": len(c.Server.Args) > 0, "server.env": len(c.Server.Env) > 0,
		"server.command": len(c.Server.Command) > 0,
	}
	for _, f := range fields {
		set[f.path] = f.isSet(c)
	}
	return set
}

// missing reports a field that is not set: the path is the field, the position its section.
func (r *configCheck) missing(path, section, format string, args ...any) {
	p := section
	if _, ok := r.x.e.pos[section]; !ok && r.x.e.pos != nil {
		p = ""
	}
	r.x.errorAt(p, path, format, args...)
}

// about names the config in a message when one of the fields involved comes from the matrix;
// otherwise the problem is the same for every config and is reported once.
func (r *configCheck) about(paths ...string) string {
	for _, p := range paths {
		if s := r.src[p]; strings.HasPrefix(s, "matrix.") || strings.HasPrefix(s, "request.prompts[") {
			return " (config " + r.c.Label + ")"
		}
	}
	return ""
}

// checkEngine checks the server fields against the engine: each must be one it takes, those it
// requires must be there, and a command line it takes from the file must say the port.
func (r *configCheck) checkEngine() {
	x, c, src, set := r.x, r.c, r.src, r.set
	eng := c.Server.Engine
	e, _ := enginefacts.Lookup(eng)
	for _, name := range enginefacts.ServerFields {
		if p := "server." + name; set[p] && !e.Takes(name) {
			x.errorf(src[p], "does not apply to engine %s; it is for %s%s", eng, strings.Join(enginefacts.Taking(name), ", "), r.about(p, "server.engine"))
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
			r.missing(p, "server", "is required for engine %s (%s)%s", eng, what, r.about("server.engine"))
		default:
			r.missing(p, "server", "is required for engine %s%s", eng, r.about("server.engine"))
		}
	}
	// An engine that takes its command line from the file needs the port in it, unless the
	// file fixes the port.
	if e.Takes("command") && set["server.command"] && c.Server.Port == 0 &&
		!slices.ContainsFunc(append(slices.Clone(c.Server.Command), c.Server.Args...), func(a string) bool { return strings.Contains(a, "{port}") }) {
		x.errorf(src["server.command"], "must pass the port with a {port} placeholder, or server.port must be set%s", r.about("server.engine", "server.port"))
	}
}

// checkReset checks that an explicit cache: reset is one the engine can do. A reset the engine
// cannot do would fail every request at run time; without an explicit cache, such a config
// defaults to keep (applyDefaults).
func (r *configCheck) checkReset() {
	if r.set["cache"] && r.c.Cache == "reset" {
		if msg := resetProblem(r.c); msg != "" {
			r.x.errorf(r.src["cache"], "%s%s", msg, r.about("cache", "server.engine", "server.env", "server.args"))
		}
	}
}

// resolvePrompt checks that exactly one field chooses the prompt, and turns a prompt name into
// the text of the named prompt.
func (r *configCheck) resolvePrompt() {
	x, c, src := r.x, r.c, r.src
	var sources []string
	for _, p := range []string{"request.prompt", "request.prompt_name", "request.prompt_tokens"} {
		if r.set[p] {
			sources = append(sources, p)
		}
	}
	switch len(sources) {
	case 0:
		r.missing("request", "request", "no prompt: set one of request.prompt, request.prompt_tokens or request.prompts")
	case 1:
	default:
		// The conflict is the same at every value of an axis: report it once, at the axis.
		at := src[sources[1]]
		if i := strings.LastIndex(at, "["); i > 0 && strings.HasPrefix(at, "matrix.") && !strings.Contains(at, "matrix.include[") {
			at = at[:i]
		}
		x.errorf(at, "%s and %s both choose the prompt; keep one", sources[0], sources[1])
	}
	if !r.set["request.prompt_name"] {
		return
	}
	i := slices.IndexFunc(x.e.Request.Prompts, func(np NamedPrompt) bool { return np.Name == c.Request.PromptName })
	if i >= 0 {
		c.Request.Prompt = x.e.Request.Prompts[i].Text
		return
	}
	var names []string
	for _, np := range x.e.Request.Prompts {
		names = append(names, np.Name)
	}
	if len(names) == 0 {
		x.errorf(src["request.prompt_name"], "names prompt %q, but request.prompts is empty", c.Request.PromptName)
	} else {
		x.errorf(src["request.prompt_name"], "no prompt named %q in request.prompts%s", c.Request.PromptName, suggest(c.Request.PromptName, names))
	}
}

// checkTokens checks the token counts: max_tokens is required, min_tokens may not pass it, and
// the prompt and the output must fit the model's context.
func (r *configCheck) checkTokens() {
	x, c, src := r.x, r.c, r.src
	if !r.set["request.max_tokens"] {
		r.missing("request.max_tokens", "request", "is required (set it in request or sweep it in matrix)")
	}
	if c.Request.MinTokens != nil && c.Request.MaxTokens > 0 && *c.Request.MinTokens > c.Request.MaxTokens {
		x.errorf(src["request.min_tokens"], "min_tokens %d is more than max_tokens %d%s", *c.Request.MinTokens, c.Request.MaxTokens, r.about("request.min_tokens", "request.max_tokens"))
	}
	m := c.Server.MaxModelLen
	if m <= 0 || c.Request.MaxTokens <= 0 {
		return
	}
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
			c.Request.PromptTokens, c.Request.MaxTokens, c.Request.PromptTokens+c.Request.MaxTokens, m, r.about(fit...))
	}
}

// checkLoad checks a config's load and how it treats the prefix cache under it.
func (r *configCheck) checkLoad() {
	x, c, src, set, about := r.x, r.c, r.src, r.set, r.about
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
		x.errorf(at, "load.concurrency (a closed loop) and load.rate (an open loop) are both set: choose one per load point, and cap an open loop with load.max_concurrency; matrix.include adds a point of the other kind only as an entry whose axis values match no config (one that matches configs sets its fields on them), else write the two kinds in two experiment files%s", about("load.rate", "load.concurrency"))
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
