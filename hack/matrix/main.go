// Command matrix prints the table of make test-matrix (hack/test-matrix.sh)
// from the go test -json output of each cell: one file per cell, named
// <kubernetes version>-<go version>.json, with the cell's time in seconds
// beside it (<name>.seconds).
//
//	go run ./hack/matrix bin/matrix/1.34.4-go1.26.8.json ...
//
// It prints Markdown: a row per cell (result, packages and tests passed,
// skipped and failed, the paths the cache took as TestPathsTaken logged
// them, the time), the tests skipped and why with the cells they were
// skipped in, and each failure's last lines of output. It exits 1 if a
// cell failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// event is a line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	// ImportPath is a build-output event's package: "p", or "p_test
	// [p.test]" for its tests.
	ImportPath string
}

// cell is what one run of go test said.
type cell struct {
	kube, goVersion string
	seconds         string
	pkgPass         int
	pkgFail         []string
	pass, skip      int
	fail            []failure
	skips           map[string]string // "pkg Test" -> reason
	paths           map[string]string // from the matrix-paths line
	fallback        map[string]string // from the matrix-fallback line
}

type failure struct {
	name string
	tail []string
}

// serverVersion is a version in a skip's reason, which the table leaves out
// so that the same skip on several versions is one row.
var serverVersion = regexp.MustCompile(`kube-apiserver v\d+\.\d+\.\d+\S*`)

// reasonLine is a line logged by t.Skip/t.Log: "    file_test.go:12: text".
var reasonLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: matrix <kubernetes>-<go>.json ...")
		os.Exit(2)
	}
	var cells []*cell
	for _, path := range os.Args[1:] {
		c, err := read(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
			os.Exit(1)
		}
		cells = append(cells, c)
	}
	failed := write(os.Stdout, cells)
	if failed {
		os.Exit(1)
	}
}

func read(path string) (*cell, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	kube, goVersion, ok := strings.Cut(name, "-go")
	if !ok {
		return nil, fmt.Errorf("%s: want a file named <kubernetes version>-<go version>.json", path)
	}
	c := &cell{kube: kube, goVersion: "go" + goVersion, skips: map[string]string{}, paths: map[string]string{}, fallback: map[string]string{}}
	if b, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".seconds"); err == nil {
		c.seconds = strings.TrimSpace(string(b))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	output := map[string][]string{} // "pkg Test" -> its lines
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line go test printed outside test2json (a build error)
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			// A compile error: the package's output, where its failure
			// shows it.
			pkg := e.ImportPath
			if _, test, ok := strings.Cut(pkg, " ["); ok {
				pkg = strings.TrimSuffix(strings.TrimSuffix(test, "]"), ".test")
			}
			output[pkg+" "] = append(output[pkg+" "], strings.TrimRight(e.Output, "\n"))
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			output[key] = append(output[key], line)
			for prefix, into := range map[string]map[string]string{"matrix-paths: ": c.paths, "matrix-fallback: ": c.fallback} {
				if _, rest, ok := strings.Cut(line, prefix); ok {
					for _, kv := range strings.Fields(rest) {
						if k, v, ok := strings.Cut(kv, "="); ok {
							into[k] = v
						}
					}
				}
			}
		case "pass":
			if e.Test == "" {
				c.pkgPass++
			} else {
				c.pass++
			}
		case "skip":
			if e.Test == "" {
				continue // a package without tests
			}
			c.skip++
			c.skips[key] = skipReason(output[key])
		case "fail":
			if e.Test == "" {
				c.pkgFail = append(c.pkgFail, e.Package)
				if len(c.fail) == 0 || !strings.HasPrefix(c.fail[len(c.fail)-1].name, e.Package+" ") {
					// No test failed: the package did not build or start.
					c.fail = append(c.fail, failure{name: key, tail: last(output[key], 15)})
				}
				continue
			}
			c.fail = append(c.fail, failure{name: key, tail: last(output[key], 15)})
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			if e.Test != "" {
				delete(output, key)
			}
		}
	}
	return c, sc.Err()
}

func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if m := reasonLine.FindStringSubmatch(lines[i]); m != nil {
			return m[1]
		}
	}
	return "(no reason given)"
}

func last(lines []string, n int) []string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func write(w io.Writer, cells []*cell) (failed bool) {
	fmt.Fprintln(w, "| Kubernetes | Go | Result | Packages passed | Tests passed | Skipped | Failed | Shard filtering | Initial lists | Encoding | Heap per replica (1 of 3) / unsharded | WatchList and shard gates off | Time |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range cells {
		result := "pass"
		if len(c.pkgFail) > 0 {
			result, failed = "**fail**", true
		}
		heap := "n/a"
		if c.paths["heap-per-replica"] != "" {
			heap = c.paths["heap-per-replica"] + " / " + c.paths["heap-unsharded"]
		}
		fallback := "not run"
		if c.fallback["lists"] != "" {
			fallback = "filtered " + map[string]string{"cache": "in the cache", "server": "by the API server"}[c.fallback["sharding"]] + ", synced by " + map[string]string{"list": "LIST", "watchlist": "streaming lists"}[c.fallback["lists"]]
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d of %d | %d | %d | %d | %s | %s | %s | %s | %s | %s |\n",
			c.kube, c.goVersion, result, c.pkgPass, c.pkgPass+len(c.pkgFail), c.pass, c.skip, len(c.fail),
			path(c, "sharding", map[string]string{"server": "API server (ShardedListAndWatch)", "cache": "in the cache (fallback)"}),
			path(c, "lists", map[string]string{"watchlist": "streaming (WatchList)", "list": "LIST"}),
			path(c, "encoding", nil), heap, fallback, minutes(c.seconds))
	}
	// Skips: one row per test and reason, with the cells.
	type skipRow struct{ test, reason string }
	where := map[skipRow][]string{}
	for _, c := range cells {
		for test, reason := range c.skips {
			r := skipRow{test, serverVersion.ReplaceAllString(reason, "kube-apiserver of the cell")}
			where[r] = append(where[r], c.kube+"/"+c.goVersion)
		}
	}
	if len(where) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Skipped tests:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| Test | Reason | Cells |")
		fmt.Fprintln(w, "|---|---|---|")
		rows := slices.SortedFunc(maps.Keys(where), func(a, b skipRow) int {
			return strings.Compare(a.test+"\x00"+a.reason, b.test+"\x00"+b.reason)
		})
		for _, r := range rows {
			cs := where[r]
			if len(cs) == len(cells) {
				cs = []string{"all"}
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", strings.TrimPrefix(r.test, "github.com/opkit-dev/opkit/"), strings.ReplaceAll(r.reason, "|", `\|`), strings.Join(cs, ", "))
		}
	}
	for _, c := range cells {
		for _, f := range c.fail {
			fmt.Fprintf(w, "\nFailed on %s/%s: %s\n\n```\n%s\n```\n", c.kube, c.goVersion, strings.TrimPrefix(f.name, "github.com/opkit-dev/opkit/"), strings.Join(f.tail, "\n"))
		}
	}
	return failed
}

func path(c *cell, key string, names map[string]string) string {
	v, ok := c.paths[key]
	if !ok {
		return "not run"
	}
	if n, ok := names[v]; ok {
		return n
	}
	return v
}

func minutes(seconds string) string {
	var s int
	if _, err := fmt.Sscan(seconds, &s); err != nil {
		return "?"
	}
	return fmt.Sprintf("%d min", (s+30)/60)
}
