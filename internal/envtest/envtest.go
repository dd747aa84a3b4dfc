// Package envtest builds the local control plane's binaries (kube-apiserver,
// etcd, kubectl) of the pinned Kubernetes version from the Go module proxy:
// what "opkit envtest" does. The pins are embedded (pins/go.mod.txt and
// go.sum.txt, copies of hack/tools/envtest's, which is where they are
// edited), so an installed opkit binary builds the same control plane as
// a checkout.
package envtest

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// Version is the Kubernetes version the pins build.
const Version = testenv.DefaultVersion

var (
	//go:embed pins/go.mod.txt
	goMod []byte
	//go:embed pins/go.sum.txt
	goSum []byte
)

// Binaries are the programs built, in the order they are built.
var Binaries = []string{"kube-apiserver", "etcd", "kubectl"}

// stampFile records the pins the binaries in a directory were built from,
// so a change of pins rebuilds all of them and nothing else does.
const stampFile = ".built-from"

// Stamp identifies the pins: the SHA-256 of go.mod then go.sum, as
// hack/setup-envtest.sh computed it, so binaries it built are reused.
func Stamp() string {
	h := sha256.New()
	h.Write(goMod)
	h.Write(goSum)
	return hex.EncodeToString(h.Sum(nil))
}

// Options configure Build.
type Options struct {
	// Dir is where the binaries go. Defaults to KUBEBUILDER_ASSETS when
	// set (which is then only checked: nothing is built into it), else
	// testenv.SharedBinaryDir(Version).
	Dir string
	// Log receives progress. Defaults to discarding it.
	Log io.Writer
}

// Build makes sure Dir holds the binaries of the pins, building those
// missing (all of them when the pins changed), and returns Dir. It is
// idempotent and takes a lock on Dir, so two builds at once do the work
// once.
func Build(ctx context.Context, opts Options) (string, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.Dir == "" {
		if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
			return assets, checkAssets(assets, log)
		}
		dir, err := testenv.SharedBinaryDir(Version)
		if err != nil {
			return "", err
		}
		opts.Dir = dir
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("envtest: create %s: %w", dir, err)
	}
	unlock, err := lock(ctx, dir, log)
	if err != nil {
		return "", err
	}
	defer unlock()
	todo := missing(dir)
	if len(todo) == 0 {
		fmt.Fprintf(log, "envtest: %s v%s already built in %s; nothing to do\n", strings.Join(Binaries, ", "), Version, dir)
		return dir, nil
	}
	if err := build(ctx, dir, todo, log); err != nil {
		return "", err
	}
	return dir, nil
}

func checkAssets(dir string, log io.Writer) error {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("envtest: KUBEBUILDER_ASSETS=%s has no executable %s; unset KUBEBUILDER_ASSETS to build the control plane into the shared directory", dir, b)
		}
	}
	fmt.Fprintf(log, "envtest: using KUBEBUILDER_ASSETS=%s; nothing to build\n", dir)
	return nil
}

// missing returns the binaries dir lacks, or all of them if they were
// built from other pins.
func missing(dir string) []string {
	stamp, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil || strings.TrimSpace(string(stamp)) != Stamp() {
		return Binaries
	}
	var todo []string
	for _, b := range Binaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			todo = append(todo, b)
		}
	}
	return todo
}

// lock takes an exclusive lock on dir/.lock, waiting for another build to
// finish, and returns its release.
func lock(ctx context.Context, dir string, log io.Writer) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("envtest: lock %s: %w", dir, err)
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("envtest: lock %s: %w", dir, err)
		}
		if !said {
			fmt.Fprintf(log, "envtest: another build into %s is running; waiting for it\n", dir)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
