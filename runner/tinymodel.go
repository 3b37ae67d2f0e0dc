package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/onelayerdown/runner/runner/internal/gguf"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// cmdTinyModel writes the tiny random llama model that the real-engine tests load into ollama.
func cmdTinyModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tinymodel", "runner tinymodel OUT.gguf [--seed N] [--params k=v,...]", `
Write a tiny llama-architecture GGUF model with random F16 weights, for running a real engine
(ollama, llama.cpp) in tests without downloading a model. Its vocabulary is common English words,
single characters and byte fallbacks; it never generates end-of-sequence, so every request runs to
its token limit. The same seed and params always give the same file.

--params overrides the size: embd, layers, heads, kv_heads, ff, ctx (and seed), e.g.
  runner tinymodel tiny.gguf --params embd=128,layers=2,ctx=4096`, stderr)
	def := gguf.DefaultParams()
	seed := fs.Uint64("seed", def.Seed, "random seed of the weights")
	params := fs.String("params", "", "comma-separated size overrides (default "+def.String()+")")
	// Flags may come before or after the output path.
	if helped, err := parseFlags(fs, args); helped || err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 {
		out := rest[0]
		if helped, err := parseFlags(fs, rest[1:]); helped || err != nil {
			return err
		}
		rest = append([]string{out}, fs.Args()...)
	}
	if len(rest) != 1 {
		fs.Usage()
		return usageError("want exactly one output path, got %d arguments", len(rest))
	}
	def.Seed = *seed
	p, err := gguf.ParseParams(*params, def)
	if err != nil {
		return usageError("%w", err)
	}
	if err := checkModelPath(rest[0]); err != nil {
		return err
	}
	if err := gguf.WriteTinyLlamaFile(rest[0], p); err != nil {
		return err
	}
	st, err := os.Stat(rest[0])
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: %d parameters, %d bytes (%s)\n", rest[0], p.ParamCount(), st.Size(), p)
	return err
}

// checkModelPath refuses an output path that holds anything but a regular file. The model is
// written to a temporary file that is then renamed over the path, so a symbolic link, a named
// pipe or a device there would be replaced by the model rather than written through. Lstat,
// not Stat: a link is judged as itself, never by what it points at.
func checkModelPath(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return usageError("%s is %s: write the model to a regular file or a new path", path, tabular.FileKind(st.Mode()))
}
