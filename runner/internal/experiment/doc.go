// Package experiment reads experiment files, the YAML files that say what a run measures (the
// format is described in docs/experiments.md), and turns them into typed configs.
//
// ReadFile and Parse read a file in three passes. The YAML is parsed within limits on size,
// depth and node count, so that a broken or hostile file cannot exhaust memory. The tree is
// checked against the JSON Schema of the format, embedded from schema/experiment.schema.json,
// and decoded into an Experiment by the rules a schema cannot express (a prompt name used
// twice, a key that request.extra may not set, a seed for an order that takes none). Last, the
// matrix is expanded once, so that a file with a config that cannot run (a field its engine
// does not take, a prompt that does not fit max_model_len) is refused when it is read rather
// than halfway through a run.
//
// Expand turns an Experiment into its Configs: the cartesian product of the matrix axes, the
// first axis varying slowest, less the exclude entries, plus the include entries, each with the
// defaults applied (the Default constants, and for the server fields the engine's own, from
// package enginefacts) and exactly one prompt resolved. Each config has an id, and its server
// part a server id: the first 12 hex digits of the SHA-256 of the content's canonical JSON, so
// that the same content gives the same id on any machine, whatever the file is called or where
// the config sits in the matrix. Configs that share a server id share one server boot.
//
// Every problem found is reported, not only the first: the error of Parse and Expand (and of
// ReadFile, once the file is read) is an ErrorList, sorted by position, of *Error values, each
// located at the YAML node that caused it and printed as file:line:column: path: message, e.g.
//
//	experiments/sweep.yaml:7:15: request.max_tokens: must be an integer, not "8"
//
// A YAML syntax error stops the reading and is reported alone, since nothing after it can be
// trusted.
package experiment
