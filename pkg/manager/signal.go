package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// ErrSignal is the cause of SignalContext's context.
var ErrSignal = errors.New("stop signal received")

// SignalContext returns a context that ends at the first SIGTERM or SIGINT,
// for Start's graceful stop; a second one exits the process at once with
// code 1, for a stop that hangs. Call it once, from main.
func SignalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	go func() {
		s := <-ch
		cancel(fmt.Errorf("%w: %v", ErrSignal, s))
		<-ch
		fmt.Fprintln(os.Stderr, "Second stop signal: exiting at once.")
		os.Exit(1)
	}()
	return ctx
}
