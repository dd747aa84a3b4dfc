// Package envtest builds the local control plane's binaries (kube-apiserver,
// etcd, kubectl) of a pinned Kubernetes version from the Go module proxy:
// what "opkit envtest" does. Each version's pins are embedded
// (pins/<version>/go.mod.txt and go.sum.txt, copies of
// hack/tools/envtest/<version>/'s, which hack/envtest-pin.sh writes), so an
// installed opkit binary builds the same control planes as a checkout.
package envtest

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/opkit-dev/opkit/internal/planebin"
)

// Version is the Kubernetes version built when none is asked for.
const Version = planebin.DefaultVersion

//go:embed pins
var pins embed.FS

// Versions returns the Kubernetes versions pinned, oldest first: those
// Build can build.
func Versions() []string {
	entries, err := pins.ReadDir("pins")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	var vs []string
	for _, e := range entries {
		vs = append(vs, e.Name())
	}
	slices.SortFunc(vs, compareVersions)
	return vs
}

// compareVersions orders "1.34.4" before "1.35.0" before "1.35.10".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
}

// Resolve returns the pinned version that v names: an exact version
// ("1.34.4") or a minor ("1.34"), which means the newest patch pinned.
// The error lists the versions pinned.
func Resolve(v string) (string, error) {
	if v == "" {
		return Version, nil
	}
	v = strings.TrimPrefix(v, "v")
	vs := Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i] == v || strings.HasPrefix(vs[i], v+".") {
			return vs[i], nil
		}
	}
	return "", fmt.Errorf("envtest: Kubernetes %s is not pinned; pinned are %s (a minor such as 1.34 picks its patch). To pin another, run hack/envtest-pin.sh <version> and make envtest-pins in opkit's repository", v, strings.Join(vs, ", "))
}

// pinsOf returns a pinned version's go.mod and go.sum.
func pinsOf(version string) (goMod, goSum []byte) {
	goMod, err := pins.ReadFile("pins/" + version + "/go.mod.txt")
	if err != nil {
		panic(fmt.Sprintf("envtest: no pins for %s: %v", version, err))
	}
	goSum, err = pins.ReadFile("pins/" + version + "/go.sum.txt")
	if err != nil {
		panic(fmt.Sprintf("envtest: no pins for %s: %v", version, err))
	}
	return goMod, goSum
}

// Binaries are the programs built, in the order they are built.
var Binaries = []string{"kube-apiserver", "etcd", "kubectl"}

// stampFile records the pins the binaries in a directory were built from,
// so a change of pins rebuilds all of them and nothing else does.
const stampFile = ".built-from"

// Stamp identifies a version's pins: the SHA-256 of go.mod then go.sum,
// as hack/setup-envtest.sh computed it, so binaries it built are reused.
func Stamp(version string) string {
	goMod, goSum := pinsOf(version)
	h := sha256.New()
	h.Write(goMod)
	h.Write(goSum)
	return hex.EncodeToString(h.Sum(nil))
}

// Options configure Build.
type Options struct {
	// Version is the Kubernetes version to build: one Versions lists, or
	// its minor ("1.34"). Defaults to Version.
	Version string
	// Dir is where the binaries go. Defaults to KUBEBUILDER_ASSETS when
	// set and Version is not (which is then only checked: nothing is
	// built into it), else planebin.SharedDir(Version).
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
	version, err := Resolve(opts.Version)
	if err != nil {
		return "", err
	}
	if opts.Dir == "" {
		if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" && opts.Version == "" {
			return assets, checkAssets(assets, log)
		}
		dir, err := planebin.SharedDir(version)
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
	todo := missing(dir, version)
	if len(todo) == 0 {
		fmt.Fprintf(log, "envtest: %s v%s already built in %s; nothing to do\n", strings.Join(Binaries, ", "), version, dir)
		return dir, nil
	}
	if err := build(ctx, dir, version, todo, log); err != nil {
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
// built from other pins than version's.
func missing(dir, version string) []string {
	stamp, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil || strings.TrimSpace(string(stamp)) != Stamp(version) {
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

// Built reports whether the shared directory holds every binary of
// version, built from its pins.
func Built(version string) bool {
	dir, err := planebin.SharedDir(version)
	return err == nil && len(missing(dir, version)) == 0
}
