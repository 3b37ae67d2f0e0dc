// Package schema holds the JSON Schema of experiment files, embedded so that the runner checks
// files against the same document editors use.
package schema

import _ "embed"

// Experiment is the JSON Schema (draft-07) of an experiment file, format version 1. Experiment
// files point editors at it with the comment
// `# yaml-language-server: $schema=../schema/experiment.schema.json`.
//
//go:embed experiment.schema.json
var Experiment []byte
