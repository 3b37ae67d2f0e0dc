// Package sched writes what runs an experiment's shards on a cluster scheduler: a Kubernetes
// Indexed Job and a Slurm job array, each followed by the merge of the shard folders into one
// result folder. It prints; it never submits anything, and the runner never schedules work
// itself.
//
// Both layouts put one run under one root, ROOT = RESULTS/NAME:
//
//	ROOT/shard-I/EXPERIMENT/<folder>   the folder shard I writes
//	ROOT/merged                        the folder runner merge writes from them
//
// Giving each shard index a root of its own lets a retried or requeued attempt find the folder
// its earlier attempt left and finish it with --resume, instead of starting a second folder of
// the same shard that merge would refuse.
package sched

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Experiment is the experiment file a scheduler runs.
type Experiment struct {
	Path    string // the file as named on the command line
	Name    string // the experiment's name: result folders land under RESULTS/.../Name
	Source  []byte // the file's bytes
	SHA256  string // the file's sha256, hex
	Servers int    // distinct server configs: a shard runs whole server configs
}

// DefaultName returns the default name of the jobs for an experiment: "runner-" and the
// experiment's name with every character a Kubernetes name cannot hold replaced by a hyphen,
// cut to the longest a shard Job's name may be.
func DefaultName(experiment string) string {
	n := "runner-" + strings.Trim(unsafeNameChars.ReplaceAllString(strings.ToLower(experiment), "-"), "-")
	n = strings.TrimRight(n, "-")
	if len(n) > maxNameLen {
		n = strings.TrimRight(n[:maxNameLen], "-")
	}
	return n
}

// unsafeNameChars matches runs of characters a DNS-1123 label cannot hold.
var unsafeNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// EmptyShards returns a note when more shards are asked for than the experiment has server
// configs, since the shards past that number run nothing, and "" otherwise.
func EmptyShards(e Experiment, shards int) string {
	if shards <= e.Servers || e.Servers == 0 {
		return ""
	}
	idle := shards - e.Servers
	return fmt.Sprintf("%s has %s and a server config is never split, so %d of the %d shards will run nothing and write empty folders",
		e.Path, plural(e.Servers, "server config"), idle, shards)
}

// shardScript is the POSIX shell script one shard runs: it finishes the folder an earlier
// attempt of the same index left under ROOT/shard-$indexVar, or starts one there. Every value is
// quoted here with shellQuote, and only the index variable, which the scheduler sets to a
// number, is expanded by the shell.
func shardScript(runner, file, root, indexVar, experiment string) string {
	r, f := shellQuote(runner), shellQuote(file)
	return `set -eu
root=` + shellQuote(root) + `/shard-"$` + indexVar + `"
# A retried or requeued attempt finishes the folder an earlier attempt left: one folder a shard.
prev=
for d in "$root"/` + shellQuote(experiment) + `/*/; do
  if [ -d "$d" ]; then prev=$d; fi
done
if [ -n "$prev" ]; then
  # An attempt that finished its folder and was run again anyway has nothing left to do.
  if grep -q '"status": "complete"' "$prev/manifest.json" 2>/dev/null; then
    echo "shard folder $prev is complete"
    exit 0
  fi
  exec ` + r + ` ` + f + ` --shard auto --resume "$prev"
fi
exec ` + r + ` ` + f + ` --shard auto --results "$root"
`
}

// mergeScript is the POSIX shell script of the merge step: the shell expands the glob of the
// shard folders.
func mergeScript(runner, root, experiment string) string {
	return "exec " + shellQuote(runner) + " merge -o " + shellQuote(path.Join(root, "merged")) + " " +
		shellQuote(root) + "/shard-*/" + shellQuote(experiment) + "/*/\n"
}

// shellQuote returns s as one shell word: unchanged when it holds only characters no shell
// treats specially, in single quotes otherwise. It is the one quoting of both exports: every
// value written into a script goes through it. A line break inside the quotes is kept, so a
// value that must stay on one line (a comment, a directive) is refused by checkPath first.
func shellQuote(s string) string {
	if s != "" && !shellSpecial.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellSpecial matches a character that needs quoting in a shell word.
var shellSpecial = regexp.MustCompile(`[^A-Za-z0-9_./:=@%+,-]`)

// commandLine returns args as one line a shell reads back as the same words.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// checkShards checks a shard count.
func checkShards(n int) error {
	if n < 1 {
		return fmt.Errorf("--shards must be at least 1, got %d", n)
	}
	return nil
}

// checkWord checks that a flag's value is one word on one line: it is written into a
// directive line or a shell command.
func checkWord(flag, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", flag)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%s %q holds a space or a control character", flag, v)
	}
	return nil
}

// checkCommon checks what both exports write into comments and scripts besides their flags:
// the experiment file's path and name, and the command line of the header comment, none of
// which a line break or a NUL may hold.
func checkCommon(e Experiment, command []string) []error {
	list := []error{checkPath("experiment file", e.Path), checkPath("experiment name", e.Name)}
	for _, a := range command {
		if strings.ContainsAny(a, "\n\r\x00") {
			list = append(list, fmt.Errorf("the command line's argument %q holds a line break or a NUL", a))
		}
	}
	return list
}

// checkPath checks a path that is written into a script or manifest.
func checkPath(flag, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", flag)
	}
	if strings.ContainsAny(v, "\n\r\x00") {
		return fmt.Errorf("%s %q holds a line break or a NUL", flag, v)
	}
	return nil
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// errs joins the non-nil errors.
func errs(list ...error) error { return errors.Join(list...) }
