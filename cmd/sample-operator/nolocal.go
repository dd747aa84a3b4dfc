//go:build nolocal

package main

import (
	"context"
	"errors"
	"io"
)

// startLocal is --local's stand-in in a build for a cluster (-tags nolocal,
// as the Dockerfile builds it): --local links the test control plane, which
// such a build leaves out, with its memory.
func startLocal(context.Context, string, io.Writer) (controlPlane, string, error) {
	return nil, "", errors.New("--local is not in this build (built with -tags nolocal); build without that tag, as 'make run' does")
}
