package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1}, 2},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 100}, 3.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestTable(t *testing.T) {
	runs := []runResult{
		{Impl: opkit, Round: 1, CreateSeconds: 10, UpdateSeconds: 5, CPUSeconds: 6, PeakRSSBytes: 60 << 20, Requests: map[string]int64{"POST": 100, "GET": 10}},
		{Impl: cr, Round: 1, CreateSeconds: 12, UpdateSeconds: 4, CPUSeconds: 10, PeakRSSBytes: 80 << 20, Requests: map[string]int64{"POST": 100, "GET": 5}},
		{Impl: bare, Round: 1, CreateSeconds: 9, UpdateSeconds: 3, CPUSeconds: 1, PeakRSSBytes: 20 << 20, Requests: map[string]int64{"POST": 100}},
		{Impl: opkit, Round: 2, CreateSeconds: 14, UpdateSeconds: 5, CPUSeconds: 6, PeakRSSBytes: 60 << 20, Requests: map[string]int64{"POST": 100, "GET": 10},
			Codes: map[string]int64{"201": 100, "200": 10}},
		{Impl: noRYW, Round: 1, CreateSeconds: 8, UpdateSeconds: 5, CPUSeconds: 5, PeakRSSBytes: 60 << 20, Requests: map[string]int64{"POST": 100, "GET": 10}},
		{Impl: self, Round: 1, CreateSeconds: 10, UpdateSeconds: 4, CPUSeconds: 5, PeakRSSBytes: 55 << 20, Requests: map[string]int64{"POST": 100, "GET": 10}},
	}
	rows, met, total := table(runs)
	want := [][]string{
		header,
		{"wall, create phase (s)", "12 (10–14)", "12", "1.00x (≤1.0x pass)", "9", "1.33x (≤1.1x MISS)", "8", "1.50x", "10", "1.20x"},
		{"wall, update phase (s)", "5", "4", "1.25x (≤1.0x MISS)", "3", "1.67x (≤1.1x MISS)", "5", "1.00x", "4", "1.25x"},
		{"wall, both phases (s)", "17 (15–19)", "16", "1.06x (≤1.0x MISS)", "12", "1.42x (≤1.1x MISS)", "13", "1.31x", "14", "1.21x"},
		{"CPU (s)", "6", "10", "0.60x (≤0.7x pass)", "1", "6.00x", "5", "1.20x", "5", "1.20x"},
		{"peak RSS (MiB)", "60", "80", "0.75x (≤0.7x MISS)", "20", "3.00x", "60", "1.00x", "55", "1.09x"},
		{"API requests", "110", "105", "1.05x (≤1.0x MISS)", "100", "1.10x", "110", "1.00x", "110", "1.00x"},
		{"  GET", "10", "5", "2.00x", "0", "-", "10", "1.00x", "10", "1.00x"},
		{"  POST", "100", "100", "1.00x", "100", "1.00x", "100", "1.00x", "100", "1.00x"},
		{"  failed (4xx, 5xx)", "0", "0", "-", "0", "-", "0", "-", "0", "-"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if met != 2 || total != 9 {
		t.Errorf("targets met %d of %d, want 2 of 9", met, total)
	}
}

func TestPrintTableAligns(t *testing.T) {
	var b strings.Builder
	runs := []runResult{{Impl: opkit, CreateSeconds: 1}, {Impl: cr, CreateSeconds: 2}}
	if err := printTable(&b, "title", runs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if lines[0] != "title" {
		t.Errorf("first line %q, want the title", lines[0])
	}
	// Every row of the table is as wide as the header: the columns line up.
	width := len([]rune(lines[1]))
	for _, l := range lines[2:8] {
		if n := len([]rune(l)); n != width {
			t.Errorf("row %q is %d wide, the header %d", l, n, width)
		}
	}
	if !strings.Contains(b.String(), "Targets met: 2 of 2.") {
		t.Errorf("no count of targets met in:\n%s", b.String())
	}
}

func TestParseRequests(t *testing.T) {
	metrics := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 2000
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 1.5e+03
rest_client_request_duration_seconds_bucket{host="127.0.0.1:6443",verb="GET",le="0.005"} 7
`
	byMethod, byCode, err := parseRequests(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"GET": 12, "POST": 2003, "PATCH": 1500}, byMethod); diff != "" {
		t.Errorf("requests by method (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"200": 1512, "201": 2000, "409": 3}, byCode); diff != "" {
		t.Errorf("requests by code (-want +got):\n%s", diff)
	}
	if _, _, err := parseRequests(strings.NewReader(`rest_client_requests_total{code="200"} 1` + "\n")); err == nil {
		t.Error("a line without a method parsed")
	}
}

func TestFormatRequests(t *testing.T) {
	got := formatRequests(map[string]int64{"POST": 100, "GET": 7, "PATCH": 20})
	if want := "127 (GET 7, PATCH 20, POST 100)"; got != want {
		t.Errorf("formatRequests = %q, want %q", got, want)
	}
}

// A figure opkit's runs did not measure (0: a ratio to a measured run
// that has none, or runs written before the figure existed) neither
// passes nor misses its target.
func TestSelfCheckUnmeasured(t *testing.T) {
	if suffix, met, total := selfCheck(stats{n: 1}, 2); suffix != "" || met != 0 || total != 0 {
		t.Errorf("selfCheck of 0 = %q, %d of %d; want no verdict", suffix, met, total)
	}
	if suffix, met, total := selfCheck(stats{n: 1, median: 3, min: 3, max: 3}, 2); suffix != " (≤2.0 MISS)" || met != 0 || total != 1 {
		t.Errorf("selfCheck of 3 against 2 = %q, %d of %d; want a miss", suffix, met, total)
	}
}
