package engine

import (
	"context"
	"fmt"
	"net"
	"time"
)

// freePort asks the kernel for a free TCP port on host. Another process may take it before the
// server binds it; that shows as a boot failure with the port hint.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", joinHostPort(host, 0))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports, as an error, whether host:port is taken.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", joinHostPort(host, port))
	if err != nil {
		return err
	}
	return l.Close()
}

// waitPortFree polls until host:port can be bound again.
func waitPortFree(ctx context.Context, host string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := portFree(host, port)
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return fmt.Errorf("port %d on %s still in use %s after the server stopped: %w", port, host, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
