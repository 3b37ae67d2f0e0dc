package main

import (
	"context"
	"errors"
	"io"
)

// cmdRun is not built yet.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("exec: not implemented yet")
}
