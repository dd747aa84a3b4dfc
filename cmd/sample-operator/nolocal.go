//go:build nolocal

package main

import (
	"context"
	"errors"
	"io"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// seedMirror is never called: startLocal fails.
func seedMirror(context.Context, *rest.Config, logr.Logger) {}

// startLocal is --local's stand-in in a build for a cluster (-tags nolocal,
// as the Dockerfile builds it): --local links the test control plane, which
// such a build leaves out, with its memory.
func startLocal(context.Context, string, int, io.Writer) (localPlane, string, error) {
	return localPlane{}, "", errors.New("--local is not in this build (built with -tags nolocal); build without that tag, as 'make run' does")
}
