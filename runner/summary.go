package main

import (
	"context"
	"errors"
	"io"
)

// cmdSummary is not built yet.
func cmdSummary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("summary: not implemented yet")
}
