package main

import (
	"strings"
	"testing"
)

// A cell's packages, tests, skips with their reasons, the paths logged,
// and failures: of a test, and of a package that never ran one.
func TestTable(t *testing.T) {
	c, err := read("testdata/1.34.4-go1.26.8.json")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if failed := write(&out, []*cell{c}); !failed {
		t.Error("write: not failed, want failed (two packages failed)")
	}
	for _, want := range []string{
		"| 1.34.4 | go1.26.8 | **fail** | 1 of 4 | 1 | 1 | 3 | in the cache (fallback) | LIST | protobuf | 1.4MiB / 2.5MiB | filtered in the cache, synced by LIST | 10 min |",
		"| pkg/cache TestStreamingListInEffect | needs feature gate WatchList, which kube-apiserver of the cell has off | all |",
		"Failed on 1.34.4/go1.26.8: pkg/manager TestX",
		"x_test.go:9: boom",
		"Failed on 1.34.4/go1.26.8: pkg/sharding \n",
		"testenv: start control plane: no",
		"prose_test.go:18:2: could not import x",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
