package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e2e.png")
	runs := []runResult{
		{Impl: opkit, Round: 1, CreateSeconds: 10, UpdateSeconds: 5, CPUSeconds: 6, PeakRSSBytes: 60 << 20, Requests: map[string]int64{"POST": 100}},
		{Impl: cr, Round: 1, CreateSeconds: 12, UpdateSeconds: 4, CPUSeconds: 10, PeakRSSBytes: 80 << 20, Requests: map[string]int64{"POST": 100}},
		{Impl: bare, Round: 1},
	}
	if err := writeChart(path, runs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != columns*panelW || b.Dy() != 2*panelH {
		t.Errorf("chart is %v, want %dx%d", b, columns*panelW, 2*panelH)
	}
	if env := os.Getenv("E2E_CHART_OUT"); env != "" { // to look at it
		_ = os.WriteFile(env, mustRead(t, path), 0o644)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteChartPanelsPerScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e2e.png")
	runs := []runResult{
		{Impl: opkit, Round: 1, CreateSeconds: 1},
		{Impl: opkit, Scenario: scenarioNoisy, Round: 1, Noisy: &noisyResult{QuietFlood: []float64{0.1}, FloodCreateSeconds: 3}},
		{Impl: cr, Scenario: scenarioNoisy, Round: 1, Noisy: &noisyResult{QuietFlood: []float64{2}, FloodCreateSeconds: 4}},
	}
	if err := writeChart(path, runs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// 5 original panels, 3 noisy ones and the legend; no fill panels.
	if b := img.Bounds(); b.Dy() != 3*panelH {
		t.Errorf("chart is %v, want %d high", b, 3*panelH)
	}
}
