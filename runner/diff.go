package main

import (
	"context"
	"errors"
	"io"
)

// cmdDiff is not built yet.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("diff: not implemented yet")
}
