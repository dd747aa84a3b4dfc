package actlog

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File is an open record file.
type File struct {
	f   *os.File
	pid int
}

// Open opens the record file at path, creating it if need be, for
// appending.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the --record-reconciles file: %w", err)
	}
	return &File{f: f, pid: os.Getpid()}, nil
}

// Close closes the file; nothing may be recorded after.
func (f *File) Close() error { return f.f.Close() }

// Start records that a reconcile of key (namespace/name) begins at at:
// when the controller let it start, which may be a little before this
// call.
func (f *File) Start(key string, at time.Time) { f.appendAt("start", key, at) }

// End records that the reconcile of key returned.
func (f *File) End(key string) { f.append("end", key) }

// Own records that this process engaged the member cluster named member
// of a sharded fleet: from now on it may act on it.
func (f *File) Own(member string) { f.append("own", member) }

// Disown records that this process disengaged the member cluster named
// member.
func (f *File) Disown(member string) { f.append("disown", member) }

func (f *File) append(kind, what string) { f.appendAt(kind, what, time.Now()) }

func (f *File) appendAt(kind, what string, at time.Time) {
	line := fmt.Sprintf("%s %d %s %d\n", kind, at.UnixNano(), what, f.pid)
	if _, err := f.f.WriteString(line); err != nil {
		fmt.Fprintf(os.Stderr, "%s: --record-reconciles: %v\n", filepath.Base(os.Args[0]), err)
	}
}

// Transport returns rt, recording each write request it is handed (see
// the package doc for which). Its signature suits rest.Config.Wrap.
func (f *File) Transport(rt http.RoundTripper) http.RoundTripper {
	return &transport{f: f, rt: rt}
}

type transport struct {
	f  *File
	rt http.RoundTripper
}

var _ http.RoundTripper = (*transport)(nil)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method, req.URL.Path) {
		t.f.append("write", req.Method+" "+req.URL.EscapedPath())
	}
	return t.rt.RoundTrip(req)
}

// WrappedRoundTripper lets client-go find the transport underneath
// (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// isWrite reports whether a request with method to path is a write the
// file records.
func isWrite(method, path string) bool {
	if method == http.MethodGet || method == http.MethodHead {
		return false
	}
	group, resource := resourceOf(path)
	switch {
	case group == "coordination.k8s.io" && resource == "leases":
		return false
	case (group == "" || group == "events.k8s.io") && resource == "events":
		return false
	}
	return true
}

// resourceOf returns the API group and resource of a request path,
// /api/v1/... (the core group, "") or /apis/<group>/<version>/...,
// namespaced or not; empty for another path.
func resourceOf(path string) (group, resource string) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		rest = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		group, rest = seg[1], seg[3:]
	default:
		return "", ""
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		return group, rest[2]
	}
	return group, rest[0]
}
