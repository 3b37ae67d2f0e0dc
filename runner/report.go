package main

import (
	"context"
	"errors"
	"io"
)

// cmdReport is not built yet.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("report: not implemented yet")
}
