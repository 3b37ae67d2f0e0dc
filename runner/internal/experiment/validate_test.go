package experiment

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// head is a valid start of a file: the version and the name, so that cases only write what they
// test. It takes lines 1 and 2; a case's own lines start at line 3.
const head = "version: 1\nname: t\n"

// okServer and okRequest complete a valid file.
const (
	okServer  = "server:\n  model: m\n"
	okRequest = "request:\n  prompt: hi\n  max_tokens: 8\n"
)

// validationCases lists one file per rule, with every error it must give, each as
// "line:col: path: start of the message". schema marks the rules that the JSON Schema alone
// also enforces, so that editors using it catch them too.
var validationCases = []struct {
	name   string
	yaml   string
	want   []string
	schema bool
}{
	// The file as a whole.
	{"syntax error", head + "server: [\n  model: m\n", []string{"3:1: invalid YAML: did not find expected ',' or ']'"}, false},
	{"tab indentation", head + "server:\n\tmodel: m\n", []string{"4:2: invalid YAML: found character that cannot start any token"}, false},
	// yaml.v3 names the line of the value before the tab; the error must point at the tab.
	{"tab after a value", head + "server:\n  model: m\n\tengine: sim\n", []string{"5:1: invalid YAML: found a tab character that violates indentation"}, false},
	{"tab after a value, indented", head + "server:\n  model: m\n  \t engine: sim\n", []string{"5:3: invalid YAML: found a tab character that violates indentation"}, false},
	// yaml.v3 reads the whole input before it parses, and places what it cannot read at 1:1;
	// the error must point at the offending byte.
	{"invalid UTF-8", head + okServer + "request:\n  prompt: h\xffi\n  max_tokens: 8\n", []string{"6:12: invalid YAML: invalid leading UTF-8 octet (byte 0xff)"}, false},
	{"truncated UTF-8", head + "description: caf\xc3\n" + okServer + okRequest, []string{"3:17: invalid YAML: "}, false},
	{"control character", head + "description: \"a\x07b\"\n" + okServer + okRequest, []string{"3:16: invalid YAML: control characters are not allowed (U+0007)"}, false},
	{"control character after a multi-byte one", head + okServer + okRequest + "description: é\x01\n", []string{"8:15: invalid YAML: control characters are not allowed (U+0001)"}, false},
	{"empty file", "", []string{"1:1: file is empty"}, false},
	{"only comments", "# nothing here\n", []string{"1:1: file is empty"}, false},
	{"two documents", head + okServer + okRequest + "---\nversion: 1\n", []string{"8:1: more than one YAML document"}, false},
	{"not a mapping", "- version: 1\n", []string{"1:1: must be a mapping (key: value lines), not a list"}, true},
	{"duplicate key", head + okServer + okRequest + "name: u\n", []string{"8:1: name: duplicate key \"name\" (first given at line 2)"}, false},
	{"duplicate nested key", head + "server:\n  model: m\n  model: n\n" + okRequest, []string{"5:3: server.model: duplicate key \"model\" (first given at line 4)"}, false},
	{"complex key", head + okServer + okRequest + "? [a, b]\n: c\n", []string{"8:3: a key must be a plain string"}, false},
	{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
		[]string{"1:1: document is too large or too deeply nested"}, false},

	// Top level.
	{"missing version and name", okServer + okRequest, []string{"1:1: name: missing required field \"name\"", "1:1: version: missing required field \"version\""}, true},
	{"unsupported version", "version: 2\nname: t\n" + okServer + okRequest, []string{"1:10: version: unsupported version 2"}, true},
	{"version as a float", "version: 1.0\nname: t\n" + okServer + okRequest, []string{"1:10: version: must be 1, not 1.0"}, false},
	{"version as text", "version: \"1\"\nname: t\n" + okServer + okRequest, []string{"1:10: version: must be 1, not \"1\""}, true},
	{"name with capitals", "version: 1\nname: Prefill Sweep\n" + okServer + okRequest, []string{"2:7: name: must use only a-z, 0-9"}, true},
	{"name starting with a dot", "version: 1\nname: ..\n" + okServer + okRequest, []string{"2:7: name: must use only a-z, 0-9"}, true},
	{"name too long", "version: 1\nname: " + strings.Repeat("a", 65) + "\n" + okServer + okRequest, []string{"2:7: name: must be at most 64 characters"}, true},
	{"name as a number", "version: 1\nname: 12\n" + okServer + okRequest, []string{"2:7: name: must be a string, not 12 (quote it)"}, true},
	{"description as a list", head + "description: [a]\n" + okServer + okRequest, []string{"3:14: description: must be a string, not a list"}, true},
	{"unknown top-level key", head + "descripton: x\n" + okServer + okRequest, []string{"3:1: descripton: unknown field \"descripton\" (did you mean \"description\"?)"}, true},
	{"misplaced request key", head + okServer + okRequest + "max_tokens: 8\n", []string{"8:1: max_tokens: unknown field \"max_tokens\" (it belongs under request: request.max_tokens)"}, true},
	{"misplaced server key", head + okServer + okRequest + "args: [a]\n", []string{"8:1: args: unknown field \"args\" (it belongs under server)"}, true},
	{"repetitions zero", head + okServer + okRequest + "repetitions: 0\n", []string{"8:14: repetitions: must be between 1 and 100000, not 0"}, true},
	{"repetitions as text", head + okServer + okRequest + "repetitions: ten\n", []string{"8:14: repetitions: must be an integer, not \"ten\""}, true},
	{"warmup negative", head + okServer + okRequest + "warmup: -1\n", []string{"8:9: warmup: must be between 0 and 10000, not -1"}, true},
	{"repetitions a billion", head + okServer + okRequest + "repetitions: 1000000000\n", []string{"8:14: repetitions: must be between 1 and 100000, not 1000000000"}, true},
	{"repetitions at the int64 maximum", head + okServer + okRequest + "repetitions: 9223372036854775807\n", []string{"8:14: repetitions: must be between 1 and 100000, not 9223372036854775807"}, true},
	{"warmup at the int64 maximum", head + okServer + okRequest + "warmup: 9223372036854775807\n", []string{"8:9: warmup: must be between 0 and 10000, not 9223372036854775807"}, true},
	{"run too large", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nrepetitions: 100000\nwarmup: 10\n",
		[]string{"9:14: repetitions: the run would send 1100111 requests (11 configs × (10 warm-up + 100000 repetitions), plus one first request per server boot); one run may send at most 1000000"}, false},
	{"cache typo", head + okServer + okRequest + "cache: rest\n", []string{"8:8: cache: must be one of reset, reset_per_config, keep, not \"rest\" (did you mean \"reset\"?)"}, true},
	{"order typo", head + okServer + okRequest + "order: shufled\n", []string{"8:8: order: must be one of sequential, interleaved, shuffled (or a mapping {mode, seed}), not \"shufled\" (did you mean \"shuffled\"?)"}, true},
	{"order as a list", head + okServer + okRequest + "order: [sequential]\n", []string{"8:8: order: must be one of sequential, interleaved, shuffled, or a mapping {mode, seed}, not a list"}, true},
	{"order without mode", head + okServer + okRequest + "order:\n  seed: 3\n", []string{"9:3: order.mode: missing required field \"mode\""}, true},
	{"order mode typo", head + okServer + okRequest + "order: {mode: random, seed: 1}\n", []string{"8:15: order.mode: must be one of sequential, interleaved, shuffled, not \"random\""}, true},
	{"order seed not shuffled", head + okServer + okRequest + "order: {mode: interleaved, seed: 1}\n", []string{"8:34: order.seed: a seed applies only to order mode shuffled, not interleaved"}, false},
	{"order seed as text", head + okServer + okRequest + "order: {mode: shuffled, seed: abc}\n", []string{"8:31: order.seed: must be an integer, not \"abc\""}, true},
	// An integer beyond int64 is out of range, printed as written, not "not an integer, 1e+26".
	{"integer beyond int64", head + okServer + "request:\n  prompt: hi\n  max_tokens: 100000000000000000000000000\n", []string{"7:15: request.max_tokens: must be at most 1000000000, not 100000000000000000000000000"}, true},
	{"integer beyond int64, unbounded", head + okServer + okRequest + "load:\n  seed: -100000000000000000000000000\n", []string{"9:9: load.seed: is out of range: must be between -9223372036854775808 and 9223372036854775807, not -100000000000000000000000000"}, false},
	{"integer beyond int64 in an axis", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8, 0x1000000000000000000]\n", []string{"8:27: matrix.request.max_tokens[1]: must be at most 1000000000, not 0x1000000000000000000"}, true},
	{"order seed beyond int64", head + okServer + okRequest + "order: {mode: shuffled, seed: 99999999999999999999}\n", []string{"8:31: order.seed: is out of range: must be between -9223372036854775808 and 9223372036854775807, not 99999999999999999999"}, false},
	// A number is printed as written, never expanded to 301 digits.
	{"huge rate", head + okServer + okRequest + "load:\n  rate: 1e300\n", []string{"9:9: load.rate: must be at most 1000000, not 1e300"}, true},
	{"huge rate in an axis", head + okServer + okRequest + "matrix:\n  load.rate: [1, 1e300]\n", []string{"9:18: matrix.load.rate[1]: must be at most 1000000, not 1e300"}, true},
	{"negative huge burstiness", head + okServer + okRequest + "load:\n  burstiness: -1.5E+200\n", []string{"9:15: load.burstiness: must be above 0, not -1.5E+200"}, true},
	{"order unknown key", head + okServer + okRequest + "order: {mode: shuffled, sede: 1}\n", []string{"8:25: order.sede: unknown field \"sede\" (did you mean \"seed\"?)"}, true},
	{"timeouts unknown key", head + okServer + okRequest + "timeouts:\n  requests: 5m\n", []string{"9:3: timeouts.requests: unknown field \"requests\" (did you mean \"request\"?)"}, true},
	{"timeout without unit", head + okServer + okRequest + "timeouts:\n  request: 300\n", []string{"9:12: timeouts.request: must be a duration with a unit, such as \"300s\""}, true},
	{"timeout bad text", head + okServer + okRequest + "timeouts:\n  request: 5 minutes\n", []string{"9:12: timeouts.request: must be a duration such as \"30s\" or \"10m\", not \"5 minutes\""}, true},
	{"timeout zero", head + okServer + okRequest + "timeouts:\n  request: 0s\n", []string{"9:12: timeouts.request: must be a positive duration"}, false},
	{"timeout negative", head + okServer + okRequest + "timeouts:\n  request: -5s\n", []string{"9:12: timeouts.request: must be a positive duration"}, true},

	// Server.
	{"server as text", head + "server: vllm\n" + okRequest, []string{"3:9: server: must be a mapping (key: value lines), not \"vllm\""}, true},
	{"server null", head + "server:\n" + okRequest, []string{"3:8: server: must be a mapping (key: value lines), not null"}, true},
	{"server unknown key", head + "server:\n  model: m\n  modle: n\n" + okRequest, []string{"5:3: server.modle: unknown field \"modle\" (did you mean \"model\"?)"}, true},
	{"engine unknown", head + "server:\n  engine: vlm\n  model: m\n" + okRequest, []string{"4:11: server.engine: must be one of vllm, sglang, llamacpp, ollama, command, sim, endpoint, not \"vlm\" (did you mean \"vllm\"?)"}, true},
	{"dtype typo", head + "server:\n  model: m\n  dtype: halff\n" + okRequest, []string{"5:10: server.dtype: must be one of auto, half, float16, bfloat16, float, float32, not \"halff\" (did you mean \"half\"?)"}, true},
	{"model empty", head + "server:\n  model: \"\"\n" + okRequest, []string{"4:10: server.model: must not be empty"}, true},
	{"max_model_len zero", head + "server:\n  model: m\n  max_model_len: 0\n" + okRequest, []string{"5:18: server.max_model_len: must be at least 1, not 0"}, true},
	{"max_model_len fraction", head + "server:\n  model: m\n  max_model_len: 1024.5\n" + okRequest, []string{"5:18: server.max_model_len: must be an integer, not 1024.5"}, true},
	{"port out of range", head + "server:\n  model: m\n  port: 70000\n" + okRequest, []string{"5:9: server.port: must be between 0 and 65535, not 70000"}, true},
	{"ready_timeout bare number", head + "server:\n  model: m\n  ready_timeout: 600\n" + okRequest, []string{"5:18: server.ready_timeout: must be a duration with a unit, such as \"600s\""}, true},
	{"entrypoint typo", head + "server:\n  model: m\n  entrypoint: server\n" + okRequest, []string{"5:15: server.entrypoint: must be one of serve, api_server, not \"server\""}, true},
	{"host with a space", head + "server:\n  model: m\n  host: 'bad host'\n" + okRequest, []string{"5:9: server.host: must be an IP address or a host name, such as 127.0.0.1, 0.0.0.0, ::1 or localhost, not \"bad host\""}, true},
	{"host with a port", head + "server:\n  model: m\n  host: 127.0.0.1:8000\n" + okRequest, []string{"5:9: server.host: must be an IP address or a host name"}, true},
	{"host as a url", head + "server:\n  model: m\n  host: http://localhost\n" + okRequest, []string{"5:9: server.host: must be an IP address or a host name"}, true},
	{"host with an underscore", head + "server:\n  model: m\n  host: my_host\n" + okRequest, []string{"5:9: server.host: must be an IP address or a host name"}, true},
	{"host a mistyped address", head + "server:\n  model: m\n  host: 127.0.0.256\n" + okRequest, []string{"5:9: server.host: must be an IP address or a host name"}, false},
	{"host in brackets", head + "server:\n  model: m\n  host: \"[::1]\"\n" + okRequest, []string{"5:9: server.host: must be an IPv6 address without brackets, such as ::1"}, true},
	{"host axis value", head + okServer + okRequest + "matrix:\n  server.host: [127.0.0.1, 'lo cal']\n", []string{"9:28: matrix.server.host[1]: must be an IP address or a host name"}, true},
	{"url without scheme", head + "server:\n  engine: endpoint\n  model: m\n  url: 127.0.0.1:8000\n" + okRequest, []string{"6:8: server.url: must be an http or https URL"}, true},
	{"url with credentials", head + "server:\n  engine: endpoint\n  model: m\n  url: http://me:secret@host\n" + okRequest, []string{"6:8: server.url: must not carry credentials"}, true},
	{"url with credentials that do not parse", head + "server:\n  engine: endpoint\n  model: m\n  url: \"http://me:se cret@host\"\n" + okRequest, []string{"6:8: server.url: must not carry credentials"}, true},
	{"url with a query", head + "server:\n  engine: endpoint\n  model: m\n  url: http://127.0.0.1:8000/v1?token=abc#frag\n" + okRequest, []string{"6:8: server.url: must not have a query"}, true},
	{"url with an empty query", head + "server:\n  engine: endpoint\n  model: m\n  url: http://127.0.0.1:8000/v1?\n" + okRequest, []string{"6:8: server.url: must not have a query"}, true},
	{"url with a fragment", head + "server:\n  engine: endpoint\n  model: m\n  url: http://127.0.0.1:8000/v1#models\n" + okRequest, []string{"6:8: server.url: must not have a fragment"}, true},
	{"url axis with a query", head + "server:\n  engine: endpoint\n  model: m\n" + okRequest + "matrix:\n  server.url: [http://a:8000, \"http://b:8000?key=k\"]\n", []string{"10:31: matrix.server.url[1]: must not have a query"}, true},
	{"api_key_env is a key", head + "server:\n  engine: endpoint\n  model: m\n  url: http://h\n  api_key_env: sk-abc123\n" + okRequest, []string{"7:16: server.api_key_env: must be the name of an environment variable"}, true},
	{"ready_path relative", head + "server:\n  engine: command\n  model: m\n  command: [srv, \"{port}\"]\n  ready_path: health\n" + okRequest, []string{"7:15: server.ready_path: must be a URL path starting with /"}, true},
	{"args not a list", head + "server:\n  model: m\n  args: --enforce-eager\n" + okRequest, []string{"5:9: server.args: must be a list of arguments, not \"--enforce-eager\""}, true},
	{"args item a mapping", head + "server:\n  model: m\n  args: [--x, {a: b}]\n" + okRequest, []string{"5:15: server.args[1]: an argument must be a string, not a mapping"}, true},
	{"env bad name", head + "server:\n  model: m\n  env:\n    MY-VAR: x\n" + okRequest, []string{"6:5: server.env.MY-VAR: \"MY-VAR\" is not a valid environment variable name"}, true},
	{"env value a list", head + "server:\n  model: m\n  env:\n    A: [x]\n" + okRequest, []string{"6:8: server.env.A: must be a string, not a list"}, true},
	{"command empty", head + "server:\n  engine: command\n  model: m\n  command: []\n" + okRequest, []string{"6:12: server.command: must not be empty"}, true},

	// Request.
	{"request unknown key", head + okServer + "request:\n  prompt: hi\n  max_tokens: 8\n  max_new_tokens: 8\n", []string{"8:3: request.max_new_tokens: unknown field \"max_new_tokens\" (did you mean \"max_tokens\"?)"}, true},
	{"api typo", head + okServer + "request:\n  api: chats\n  prompt: hi\n  max_tokens: 8\n", []string{"6:8: request.api: must be one of completions, chat, not \"chats\" (did you mean \"chat\"?)"}, true},
	{"prompt empty", head + okServer + "request:\n  prompt: \"\"\n  max_tokens: 8\n", []string{"6:11: request.prompt: must not be empty"}, true},
	{"prompt_tokens zero", head + okServer + "request:\n  prompt_tokens: 0\n  max_tokens: 8\n", []string{"6:18: request.prompt_tokens: must be at least 1, not 0"}, true},
	{"max_tokens too large", head + okServer + "request:\n  prompt: hi\n  max_tokens: 2000000000\n", []string{"7:15: request.max_tokens: must be at most 1000000000, not 2000000000"}, true},
	{"max_tokens as text", head + okServer + "request:\n  prompt: hi\n  max_tokens: \"8\"\n", []string{"7:15: request.max_tokens: must be an integer, not \"8\""}, true},
	{"ignore_eos yes", head + okServer + okRequest + "  ignore_eos: yes\n", []string{"8:15: request.ignore_eos: must be true or false, not \"yes\""}, true},
	{"min_tokens negative", head + okServer + okRequest + "  min_tokens: -1\n", []string{"8:15: request.min_tokens: must be at least 0, not -1"}, true},
	{"temperature negative", head + okServer + okRequest + "  temperature: -0.5\n", []string{"8:16: request.temperature: must be at least 0, not -0.5"}, true},
	{"temperature not finite", head + okServer + okRequest + "  temperature: .inf\n", []string{"8:16: request.temperature: must be a number, not .inf"}, true},
	{"seed fraction", head + okServer + okRequest + "  seed: 1.5\n", []string{"8:9: request.seed: must be an integer, not 1.5"}, true},
	{"stop not a list", head + okServer + okRequest + "  stop: \"\\n\"\n", []string{"8:9: request.stop: must be a list of strings, not \"\\n\""}, true},
	{"stop item empty", head + okServer + okRequest + "  stop: [\"\", x]\n", []string{"8:10: request.stop[0]: must not be empty"}, true},
	{"stop item a number", head + okServer + okRequest + "  stop: [x, 7]\n", []string{"8:13: request.stop[1]: must be a string, not 7"}, true},
	{"extra owned by the runner", head + okServer + okRequest + "  extra:\n    stream: false\n", []string{"9:5: request.extra.stream: \"stream\" is set by the runner and cannot be overridden"}, true},
	{"extra duplicating a field", head + okServer + okRequest + "  extra: {top_p: 0.9, max_tokens: 9}\n", []string{"8:23: request.extra.max_tokens: \"max_tokens\" has its own field; use request.max_tokens instead"}, true},
	{"extra not finite", head + okServer + okRequest + "  extra: {logit_bias: {\"5\": .nan}}\n", []string{"8:23: request.extra.logit_bias: .nan is not valid in JSON"}, false},
	{"extra not a mapping", head + okServer + okRequest + "  extra: [top_p]\n", []string{"8:10: request.extra: must be a mapping (key: value lines), not a list"}, true},
	{"prompts not a list", head + okServer + "request:\n  prompts: hi\n  max_tokens: 8\n", []string{"6:12: request.prompts: must be a list of {name, text} entries, not \"hi\""}, true},
	{"prompts empty", head + okServer + "request:\n  prompts: []\n  max_tokens: 8\n", []string{"6:12: request.prompts: must not be empty"}, true},
	{"prompt entry without text", head + okServer + "request:\n  prompts:\n    - name: a\n  max_tokens: 8\n", []string{"7:7: request.prompts[0]: missing required field \"text\""}, true},
	{"prompt entry unknown key", head + okServer + "request:\n  prompts:\n    - {name: a, txt: hello}\n  max_tokens: 8\n", []string{"7:7: request.prompts[0]: missing required field \"text\"", "7:17: request.prompts[0].txt: unknown field \"txt\" (did you mean \"text\"?)"}, true},
	{"prompt names repeated", head + okServer + "request:\n  prompts:\n    - {name: a, text: x}\n    - {name: a, text: y}\n  max_tokens: 8\n", []string{"8:14: request.prompts[1].name: prompt name \"a\" is already used by request.prompts[0]"}, false},
	{"prompt name with a space", head + okServer + "request:\n  prompts:\n    - {name: my prompt, text: x}\n  max_tokens: 8\n", []string{"7:14: request.prompts[0].name: must use only letters, digits"}, true},
	{"prompt_name without prompts", head + okServer + "request:\n  prompt_name: a\n  max_tokens: 8\n", []string{"6:16: request.prompt_name: names prompt \"a\", but request.prompts is empty"}, false},
	{"prompt_name unknown", head + okServer + "request:\n  prompts:\n    - {name: short, text: x}\n  prompt_name: shrt\n  max_tokens: 8\n", []string{"8:16: request.prompt_name: no prompt named \"shrt\" in request.prompts (did you mean \"short\"?)"}, false},

	// Matrix.
	{"matrix not a mapping", head + okServer + okRequest + "matrix: [request.max_tokens]\n", []string{"8:9: matrix: must be a mapping (key: value lines), not a list"}, true},
	{"axis unknown", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_token: [1, 2]\n", []string{"8:3: matrix.request.max_token: unknown axis \"request.max_token\": an axis is named by the dotted path of the field it sweeps, such as request.max_tokens (did you mean \"request.max_tokens\"?)"}, true},
	{"axis without section", head + okServer + "request:\n  prompt: hi\nmatrix:\n  max_tokens: [1, 2]\n", []string{"8:3: matrix.max_tokens: unknown axis \"max_tokens\": an axis is named by the dotted path of the field it sweeps, such as request.max_tokens (did you mean \"request.max_tokens\"?)"}, true},
	{"axis on a list field", head + okServer + okRequest + "matrix:\n  request.stop: [a, b]\n", []string{"9:3: matrix.request.stop: request.stop cannot be a matrix axis; only single-valued fields can be swept"}, true},
	{"axis on an experiment field", head + okServer + okRequest + "matrix:\n  repetitions: [1, 2]\n", []string{"9:3: matrix.repetitions: repetitions cannot be a matrix axis; it applies to the whole experiment"}, true},
	{"axis not a list", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: 8\n", []string{"8:23: matrix.request.max_tokens: an axis must be a list of values, not 8"}, true},
	{"axis empty", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: []\n", []string{"8:23: matrix.request.max_tokens: an axis must have at least one value"}, true},
	{"axis given twice", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [1]\n  request.max_tokens: [2]\n", []string{"9:3: matrix.request.max_tokens: duplicate key \"request.max_tokens\" (first given at line 8)"}, false},
	{"axis value repeated", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [16, 64, 16]\n", []string{"8:32: matrix.request.max_tokens[2]: value 16 is already listed at matrix.request.max_tokens[0]"}, true},
	{"axis value of the wrong type", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [16, lots]\n", []string{"8:28: matrix.request.max_tokens[1]: must be an integer, not \"lots\""}, true},
	{"axis value out of range", head + okServer + okRequest + "matrix:\n  server.dtype: [half, fp8]\n", []string{"9:24: matrix.server.dtype[1]: must be one of auto, half, float16, bfloat16, float, float32, not \"fp8\""}, true},
	{"axis value a list", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [[16]]\n", []string{"8:24: matrix.request.max_tokens[0]: must be an integer, not a list"}, true},
	{"include not a list", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8]\n  include: {request.max_tokens: 9}\n", []string{"9:12: matrix.include: must be a list of mappings, not a mapping"}, true},
	{"include entry empty", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8]\n  include: [{}]\n", []string{"9:13: matrix.include[0]: an entry must name at least one field"}, true},
	{"include entry unknown field", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8]\n  include:\n    - {request.max_tokens: 9, request.temprature: 0}\n", []string{"10:31: matrix.include[0].request.temprature: unknown axis \"request.temprature\""}, true},
	{"include entry bad value", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8]\n  include:\n    - {request.max_tokens: 0}\n", []string{"10:28: matrix.include[0].request.max_tokens: must be at least 1, not 0"}, true},
	{"exclude key not an axis", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8, 16]\n  exclude:\n    - {server.dtype: half}\n", []string{"10:22: matrix.exclude[0].server.dtype: server.dtype is not a matrix axis, so this entry can exclude nothing"}, false},
	{"exclude matches nothing", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8, 16]\n  exclude:\n    - {request.max_tokens: 6}\n", []string{"10:7: matrix.exclude[0]: this entry matches no config of the matrix"}, false},
	{"include repeats a config", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8, 16]\n  include:\n    - {request.max_tokens: 8}\n", []string{"10:7: matrix.include[0]: this entry only repeats configs the matrix already has"}, false},
	{"include adds a config twice", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [8]\n  include:\n    - {request.max_tokens: 9}\n    - {request.max_tokens: 9}\n", []string{"11:7: matrix.include[1]: config max_tokens=9 is the same as config max_tokens=9"}, false},
	{"field set and swept", head + okServer + okRequest + "matrix:\n  request.max_tokens: [8, 16]\n", []string{"7:15: request.max_tokens: is also swept by the matrix axis request.max_tokens; set it in one place"}, false},
	{"too many configs", head + okServer + "request:\n  prompt: hi\nmatrix:\n  request.max_tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  request.seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  request.min_tokens: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n  request.temperature: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]\n  server.port: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n",
		[]string{"7:1: matrix: the matrix expands to more than 10000 configs"}, false},

	// Each config on its own.
	{"no prompt", head + okServer + "request:\n  max_tokens: 8\n", []string{"5:1: request: no prompt: set one of request.prompt, request.prompt_tokens or request.prompts"}, false},
	{"no request at all", head + okServer, []string{"1:1: request: no prompt", "1:1: request.max_tokens: is required"}, false},
	{"two prompts", head + okServer + okRequest + "  prompt_tokens: 16\n", []string{"8:18: request.prompt_tokens: request.prompt and request.prompt_tokens both choose the prompt; keep one"}, false},
	{"prompt and a prompt_tokens axis", head + okServer + "request:\n  prompt: hi\n  max_tokens: 8\nmatrix:\n  request.prompt_tokens: [16, 32]\n", []string{"9:3: matrix.request.prompt_tokens: request.prompt and request.prompt_tokens both choose the prompt; keep one"}, false},
	{"max_tokens missing", head + okServer + "request:\n  prompt: hi\n", []string{"5:1: request.max_tokens: is required (set it in request or sweep it in matrix)"}, false},
	{"min_tokens above max_tokens", head + okServer + okRequest + "  min_tokens: 9\n", []string{"8:15: request.min_tokens: min_tokens 9 is more than max_tokens 8"}, false},
	{"prompt does not fit", head + "server:\n  model: m\n  max_model_len: 1024\nrequest:\n  prompt_tokens: 1000\n  max_tokens: 100\n", []string{"7:18: request.prompt_tokens: prompt_tokens 1000 + max_tokens 100 = 1100 does not fit max_model_len 1024"}, false},
	{"prompt axis does not fit", head + "server:\n  model: m\n  max_model_len: 1024\nrequest:\n  max_tokens: 100\nmatrix:\n  request.prompt_tokens: [16, 900, 1000]\n",
		[]string{"9:36: matrix.request.prompt_tokens[2]: prompt_tokens 1000 + max_tokens 100 = 1100 does not fit max_model_len 1024 (config prompt_tokens=1000)"}, false},
	{"output axis does not fit", head + "server:\n  model: m\n  max_model_len: 600\nrequest:\n  prompt_tokens: 256\nmatrix:\n  request.max_tokens: [128, 512]\n",
		[]string{"9:29: matrix.request.max_tokens[1]: prompt_tokens 256 + max_tokens 512 = 768 does not fit max_model_len 600 (config max_tokens=512)"}, false},
	{"output axis leaves no room", head + "server:\n  model: m\n  max_model_len: 512\nrequest:\n  prompt: hi\nmatrix:\n  request.max_tokens: [128, 512]\n  server.dtype: [half, float]\n",
		[]string{"9:29: matrix.request.max_tokens[1]: max_tokens 512 leaves no room for a prompt within max_model_len 512"}, false},
	{"output leaves no room", head + "server:\n  model: m\n  max_model_len: 64\nrequest:\n  prompt: hi\n  max_tokens: 64\n", []string{"8:15: request.max_tokens: max_tokens 64 leaves no room for a prompt within max_model_len 64"}, false},
	{"model missing", head + "server:\n  dtype: half\n" + okRequest, []string{"3:1: server.model: is required for engine vllm (the model the server loads)"}, false},
	{"url on vllm", head + "server:\n  model: m\n  url: http://h:8000\n" + okRequest, []string{"5:8: server.url: does not apply to engine vllm; it is for endpoint"}, false},
	{"endpoint without url", head + "server:\n  engine: endpoint\n  model: m\n" + okRequest, []string{"3:1: server.url: is required for engine endpoint"}, false},
	{"endpoint with port", head + "server:\n  engine: endpoint\n  model: m\n  url: http://h\n  port: 8000\n" + okRequest, []string{"7:9: server.port: does not apply to engine endpoint; it is for vllm, sglang, llamacpp, ollama, command, sim"}, false},
	{"dtype on a swept engine", head + "server:\n  model: m\n  dtype: half\n" + okRequest + "matrix:\n  server.engine: [vllm, llamacpp]\n",
		[]string{"5:10: server.dtype: does not apply to engine llamacpp; it is for vllm, sglang, sim (config engine=llamacpp)"}, false},
	{"command missing", head + "server:\n  engine: command\n  model: m\n" + okRequest, []string{"3:1: server.command: is required for engine command"}, false},
	{"command without port", head + "server:\n  engine: command\n  model: m\n  command: [srv, --port, \"8000\"]\n" + okRequest, []string{"6:12: server.command: must pass the port with a {port} placeholder, or server.port must be set"}, false},
	{"entrypoint on sglang", head + "server:\n  engine: sglang\n  model: m\n  entrypoint: serve\n" + okRequest, []string{"6:15: server.entrypoint: does not apply to engine sglang; it is for vllm"}, false},

	{"cache reset on command", head + "server:\n  engine: command\n  model: m\n  command: [srv, \"{port}\"]\n" + okRequest + "cache: reset\n",
		[]string{"10:8: cache: engine command cannot empty its prefix cache: set cache: keep (its default), or use an engine that can (vllm, sglang, llamacpp, ollama, sim)"}, false},
	{"cache reset on a swept engine", head + "server:\n  model: m\n  env: {VLLM_SERVER_DEV_MODE: \"0\"}\n" + okRequest + "cache: reset\nmatrix:\n  server.engine: [sglang, vllm]\n",
		[]string{"9:8: cache: engine vllm empties its prefix cache only with VLLM_SERVER_DEV_MODE=1, and server.env sets it to \"0\": set cache: keep, or leave VLLM_SERVER_DEV_MODE out of server.env (config engine=vllm)"}, false},
	{"cache axis on command", head + "server:\n  engine: command\n  model: m\n  command: [srv, \"{port}\"]\n" + okRequest + "matrix:\n  cache: [keep, reset]\n",
		[]string{"11:17: matrix.cache[1]: engine command cannot empty its prefix cache"}, false},
	{"cache reset without dev mode", head + "server:\n  model: m\n  env: {VLLM_SERVER_DEV_MODE: \"0\"}\n" + okRequest + "cache: reset\n",
		[]string{"9:8: cache: engine vllm empties its prefix cache only with VLLM_SERVER_DEV_MODE=1, and server.env sets it to \"0\": set cache: keep"}, false},

	// Load.
	{"rate zero", head + okServer + okRequest + "load:\n  rate: 0\n", []string{"9:9: load.rate: must be above 0, not 0"}, true},
	{"rate negative", head + okServer + okRequest + "load:\n  rate: -2.5\n", []string{"9:9: load.rate: must be above 0, not -2.5"}, true},
	{"concurrency zero", head + okServer + okRequest + "load:\n  concurrency: 0\n", []string{"9:16: load.concurrency: must be between 1 and 10000, not 0"}, true},
	{"concurrency negative axis", head + okServer + okRequest + "matrix:\n  load.concurrency: [4, -1]\n", []string{"9:25: matrix.load.concurrency[1]: must be between 1 and 10000, not -1"}, true},
	{"concurrency above the bound", head + okServer + okRequest + "load:\n  concurrency: 10001\n", []string{"9:16: load.concurrency: must be between 1 and 10000, not 10001"}, true},
	{"unknown load key", head + okServer + okRequest + "load:\n  concurency: 4\n", []string{"9:3: load.concurency: unknown field \"concurency\" (did you mean \"concurrency\"?)"}, true},
	{"arrival typo", head + okServer + okRequest + "load:\n  rate: 2\n  arrival: possion\n", []string{"10:12: load.arrival: must be one of constant, poisson, gamma, not \"possion\""}, true},
	{"concurrency and rate", head + okServer + okRequest + "load:\n  concurrency: 4\n  rate: 2\n", []string{"10:9: load.rate: load.concurrency (a closed loop) and load.rate (an open loop) are both set: choose one per load point"}, false},
	{"arrival on a closed loop", head + okServer + okRequest + "load:\n  concurrency: 4\n  arrival: gamma\n", []string{"10:12: load.arrival: applies to an open loop only"}, false},
	{"burstiness with poisson", head + okServer + okRequest + "load:\n  rate: 4\n  arrival: poisson\n  burstiness: 0.5\n", []string{"11:15: load.burstiness: is the shape of gamma arrivals, and load.arrival is poisson"}, false},
	{"cache reset under load", head + okServer + okRequest + "cache: reset\nload:\n  concurrency: 4\n", []string{"8:8: cache: cache: reset empties the prefix cache before every request, which cannot be done with more than one request in flight (load.concurrency above 1 keeps several requests in flight, line 10): set cache: reset_per_config"}, false},
	{"cache reset under an open loop", head + okServer + okRequest + "cache: reset\nmatrix:\n  load.rate: [1, 2]\n", []string{"8:8: cache: cache: reset empties the prefix cache before every request, which cannot be done with more than one request in flight (load.rate sends requests without waiting for the last to end, line 10)"}, false},
	{"reset per config without load", head + okServer + okRequest + "cache: reset_per_config\n", []string{"8:8: cache: reset_per_config empties the prefix cache once before a load point, and this experiment has no load section"}, false},
	{"interleaved under load", head + okServer + okRequest + "order: interleaved\nload:\n  concurrency: 2\n", []string{"8:8: order.mode: order interleaved mixes the requests of different configs"}, false},
	{"slo on an unknown metric", head + okServer + okRequest + "slo:\n  ttft: 200\n", []string{"9:3: slo.ttft: unknown field \"ttft\" (did you mean \"ttft_ms\"?)"}, true},
	{"slo bound zero", head + okServer + okRequest + "slo:\n  e2e_ms: 0\n", []string{"9:11: slo.e2e_ms: must be above 0, not 0"}, true},
	{"slo empty", head + okServer + okRequest + "slo: {}\n", []string{"8:6: slo: must set at least one bound"}, true},

	// Everything at once: each problem is reported, in file order.
	{"several problems", "version: 1\nname: T\nserver:\n  model: m\n  dtype: halff\nrequest:\n  prompt: hi\n  max_tokens: 0\nrepetitons: 3\n",
		[]string{"2:7: name: must use only", "5:10: server.dtype: must be one of", "8:15: request.max_tokens: must be at least 1, not 0", "9:1: repetitons: unknown field \"repetitons\" (did you mean \"repetitions\"?)"}, true},
}

func TestValidationRules(t *testing.T) {
	for _, tc := range validationCases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded (%d axes); want errors:\n%s", len(e.Matrix.Axes), strings.Join(tc.want, "\n"))
			}
			if e != nil {
				t.Errorf("Parse returned an experiment with its error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, want ErrorList: %v", err, err)
			}
			if len(list) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v\nwant:\n%s", len(list), len(tc.want), err, strings.Join(tc.want, "\n"))
			}
			for i, got := range list {
				if got.File != "t.yaml" || got.Line < 1 || got.Col < 1 {
					t.Errorf("error %d is not located: %+v", i, got)
				}
				line := strings.TrimPrefix(got.Error(), "t.yaml:")
				if !strings.HasPrefix(line, tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, line, tc.want[i])
				}
			}
		})
	}
}

// TestSchemaAgrees checks that the JSON Schema alone rejects the files the cases mark, at the
// same field or one enclosing it, so that an editor flags them too; and that it accepts the
// files the other cases break only by rules it cannot express.
func TestSchemaAgrees(t *testing.T) {
	for _, tc := range validationCases {
		t.Run(tc.name, func(t *testing.T) {
			root, perr := parseYAML("t.yaml", []byte(tc.yaml))
			if perr != nil {
				if tc.schema {
					t.Fatalf("case marked schema does not parse: %v", perr)
				}
				return
			}
			if len(checkShape("t.yaml", root)) > 0 {
				return // duplicate keys and the like never reach JSON
			}
			errs := schemaErrors("t.yaml", root)
			if !tc.schema {
				// Only the rules the schema cannot express are broken: it must not object,
				// or its objection is a rule the case should declare.
				if len(errs) > 0 {
					t.Fatalf("the schema rejects a case not marked schema:\n%v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("the schema accepts it; want an error like %s", tc.want[0])
			}
			for _, w := range tc.want {
				path := wantPath(w)
				found := false
				for _, e := range errs {
					if within(e.Path, path) || within(path, e.Path) {
						found = true
					}
				}
				if !found {
					t.Errorf("no schema error about %s; got:\n%v", path, errs)
				}
			}
		})
	}
}

// wantPath extracts the field path from a "line:col: path: message" expectation.
func wantPath(w string) string {
	parts := strings.SplitN(w, ": ", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "x.yaml", Line: 12, Col: 5, Path: "request.max_tokens", Msg: "must be at least 1"}, "x.yaml:12:5: request.max_tokens: must be at least 1"},
		{Error{File: "x.yaml", Line: 3, Msg: "invalid YAML"}, "x.yaml:3: invalid YAML"},
		{Error{File: "x.yaml", Path: "matrix", Msg: "too big"}, "x.yaml: matrix: too big"},
		{Error{Path: "matrix", Msg: "too big"}, "matrix: too big"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	list := ErrorList{&tests[0].err, &tests[1].err}
	if got, want := list.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("list: got %q, want %q", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := ReadFile("testdata/does-not-exist.yaml")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Fatalf("got %v, want an error naming the file", err)
	}
	var list ErrorList
	if errors.As(err, &list) {
		t.Errorf("a read error is not a list of file problems: %v", err)
	}
}

func TestFileTooLarge(t *testing.T) {
	data := []byte(head + "description: " + strings.Repeat("x", maxFileSize) + "\n")
	_, err := Parse("big.yaml", data)
	if err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("got %v, want a size error", err)
	}
}

// TestEveryRuleHasACase keeps the table honest: every message the decoder and expander can give
// is produced by at least one case. It lists message fragments by hand, one per rule.
func TestEveryRuleHasACase(t *testing.T) {
	var all strings.Builder
	for _, tc := range validationCases {
		for _, w := range tc.want {
			fmt.Fprintln(&all, w)
		}
	}
	rules := []string{
		"invalid YAML", "file is empty", "more than one YAML document", "duplicate key", "a key must be a plain string",
		"document is too large", "missing required field", "unsupported version", "must use only", "unknown field",
		"it belongs under", "must be a mapping", "must be one of", "must be at least", "must be between",
		"must be an integer", "must be a number", "must be true or false", "must be a duration", "must be a positive duration",
		"must not be empty", "must be an http or https URL", "must not carry credentials", "must not have a query",
		"must not have a fragment", "cannot empty its prefix cache", "only with VLLM_SERVER_DEV_MODE=1", "must be an IP address or a host name", "without brackets", "name of an environment variable",
		"URL path starting with /", "an argument must be a string", "not a valid environment variable name",
		"is set by the runner", "has its own field", "is not valid in JSON", "prompt name", "names prompt",
		"no prompt named", "unknown axis", "cannot be a matrix axis", "an axis must be a list", "an axis must have at least one value",
		"is already listed", "an entry must name at least one field", "is not a matrix axis", "matches no config",
		"only repeats configs", "is the same as config", "is also swept", "expands to more than", "no prompt:",
		"both choose the prompt", "is required", "is more than max_tokens", "does not fit max_model_len", "leaves no room",
		"does not apply to engine", "{port} placeholder", "a seed applies only", "must be at most",
	}
	for _, r := range rules {
		if !strings.Contains(all.String(), r) {
			t.Errorf("no case produces %q", r)
		}
	}
}

// TestURLErrorsDoNotQuoteSecrets checks that a server.url refused for carrying a password or a
// token is not quoted back: the message reaches terminals and CI logs.
func TestURLErrorsDoNotQuoteSecrets(t *testing.T) {
	for _, url := range []string{
		"http://me:hunter2@127.0.0.1:8000",
		"http://me:hunter2@127.0.0.1:8000/v1?x=1",
		"http://me:hun ter2@127.0.0.1:8000",
		"me:hunter2@127.0.0.1:8000",
		"http://127.0.0.1:8000/v1?token=hunter2",
		"http://127.0.0.1:8000/v1#hunter2",
	} {
		t.Run(url, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+"server:\n  engine: endpoint\n  model: m\n  url: \""+url+"\"\n"+okRequest))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			if !strings.HasPrefix(err.Error(), "t.yaml:6:8: server.url: ") {
				t.Errorf("error %q is not located at the field", err)
			}
			if strings.Contains(err.Error(), "hunter") || strings.Contains(err.Error(), "ter2") {
				t.Errorf("error quotes the secret: %v", err)
			}
		})
	}
}

// TestHostsAccepted checks that the addresses and names a server can bind to pass both the
// rules and the schema.
func TestHostsAccepted(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1%eth0", "::ffff:127.0.0.1", "localhost", "gpu-node-7", "my-host.example.com", "10.0.0.5"} {
		t.Run(host, func(t *testing.T) {
			if _, err := Parse("t.yaml", []byte(head+"server:\n  model: m\n  host: \""+host+"\"\n"+okRequest)); err != nil {
				t.Errorf("host %q refused: %v", host, err)
			}
		})
	}
}
