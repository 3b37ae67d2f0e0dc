package main

import (
	"context"
	"fmt"
	"io"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/plan"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

const validateDescription = `
Check experiment files against the JSON Schema (schema/experiment.schema.json) and the rules a
schema cannot express: unknown or misplaced fields, matrix axes that name no field, empty or
repeated axes and values, and, for every config the matrix expands to, that prompt_tokens +
max_tokens fits max_model_len and that every field applies to the config's engine. A config
whose prompt_tokens is below what its engine bills for the shortest prompt, where that floor is
known in advance (the simulator's), is warned of on stderr as FILE: warning: MESSAGE; the file
stays valid, and the run fails only that config's requests, as prompt_too_short.

Every problem of every file is printed, one per line, as FILE:LINE:COLUMN: FIELD: MESSAGE. The
exit status is 0 when all files are valid and 2 when any is not.`

// cmdValidate checks experiment files and reports every problem at once.
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", "runner validate FILE...", validateDescription, stderr)
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError("no experiment file given (usage: runner validate FILE...)")
	}
	var problems errorLines
	for _, f := range files {
		e, cfgs, err := readExperiment(f)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		t := plan.New(e, cfgs).Totals
		if _, err := fmt.Fprintf(stdout, "%s: ok (%s, %s)\n", f, tabular.Plural(t.Configs, "config"), tabular.Plural(t.Servers, "server")); err != nil {
			return err
		}
		for _, w := range experiment.PromptFloorWarnings(cfgs) {
			fmt.Fprintf(stderr, "%s: warning: %s\n", f, w)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if len(files) > 1 {
		problems = append(problems, fmt.Errorf("%d of %d files are invalid", len(problems), len(files)))
	}
	return &exitError{code: 2, err: problems}
}
