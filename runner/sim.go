package main

import (
	"context"
	"errors"
	"io"
)

// cmdSim is not built yet.
func cmdSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("sim: not implemented yet")
}
