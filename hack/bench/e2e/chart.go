package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"strings"
)

// The chart draws every run's figures as bars, one panel per figure, in
// the order the runs ran, coloured by implementation. It is drawn with the
// standard library alone; its text uses the 3×5 pixel font below, as
// golang.org/x/image's fonts are not among the module's dependencies.

var (
	implColor = map[string]color.RGBA{
		opkit: {0x1f, 0x77, 0xb4, 0xff}, // blue
		cr:    {0xff, 0x7f, 0x0e, 0xff}, // orange
		bare:  {0x99, 0x99, 0x99, 0xff}, // grey
		noRYW: {0x98, 0xc6, 0xea, 0xff}, // light blue
		self:  {0x2c, 0xa0, 0x2c, 0xff}, // green
		crCM:  {0xd6, 0x27, 0x28, 0xff}, // red
	}
	ink   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	paper = color.RGBA{0xff, 0xff, 0xff, 0xff}
	rule  = color.RGBA{0xcc, 0xcc, 0xcc, 0xff}
)

const (
	panelW, panelH = 360, 280
	columns        = 3
)

// panel is a figure of the runs of one scenario.
type panel struct {
	scenario string
	title    string
	value    func(runResult) float64
}

var panels = []panel{
	{scenarioOriginal, "WALL CREATE (S)", func(r runResult) float64 { return r.CreateSeconds }},
	{scenarioOriginal, "WALL UPDATE (S)", func(r runResult) float64 { return r.UpdateSeconds }},
	{scenarioOriginal, "CPU (S)", func(r runResult) float64 { return r.CPUSeconds }},
	{scenarioOriginal, "PEAK RSS (MIB)", func(r runResult) float64 { return mib(r.PeakRSSBytes) }},
	{scenarioOriginal, "API REQUESTS", runResult.totalRequests},
	{scenarioFill, "FILL: TIME TO READY (S)", func(r runResult) float64 { return r.ReadySeconds }},
	{scenarioFill, "FILL: HEAP AFTER SYNC (MIB)", func(r runResult) float64 { return mib(r.HeapAfterSyncBytes) }},
	{scenarioFill, "FILL: PEAK RSS (MIB)", func(r runResult) float64 { return mib(r.PeakRSSBytes) }},
	{scenarioFill, "FILL: CPU (S)", func(r runResult) float64 { return r.CPUSeconds }},
	{scenarioFill, "FILL: WALL BOTH PHASES (S)", func(r runResult) float64 { return r.CreateSeconds + r.UpdateSeconds }},
	{scenarioNoisy, "NOISY: QUIET P99, FLOOD (S)", noisyValue(func(n *noisyResult) float64 { return percentile(n.QuietFlood, 99) })},
	{scenarioNoisy, "NOISY: QUIET P99, NO FLOOD (S)", noisyValue(func(n *noisyResult) float64 { return percentile(n.QuietFloor, 99) })},
	{scenarioNoisy, "NOISY: FLOOD TOTAL (S)", noisyValue(func(n *noisyResult) float64 { return n.FloodCreateSeconds + n.FloodBurstSeconds })},
	{scenarioMemory, "MEMORY: PEAK (MIB)", memoryMiB((*memoryResult).peakBytes)},
	{scenarioMemory, "MEMORY: SMALLEST LIMIT (MIB)", memoryMiB(func(m *memoryResult) int64 { return m.SmallestLimitBytes })},
}

// writeChart draws the panels of the scenarios runs ran, each over the
// runs of its scenario, and a legend.
func writeChart(path string, runs []runResult) error {
	var shown []panel
	for _, p := range panels {
		if len(ofScenario(runs, p.scenario)) > 0 {
			shown = append(shown, p)
		}
	}
	rows := (len(shown) + 1 + columns - 1) / columns
	img := image.NewRGBA(image.Rect(0, 0, columns*panelW, rows*panelH))
	draw.Draw(img, img.Bounds(), image.NewUniform(paper), image.Point{}, draw.Src)
	for i, p := range shown {
		drawPanel(img, image.Pt(i%columns*panelW, i/columns*panelH), p, ofScenario(runs, p.scenario))
	}
	i := len(shown)
	drawLegend(img, image.Pt(i%columns*panelW, i/columns*panelH), runs)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func drawPanel(img *image.RGBA, at image.Point, p panel, runs []runResult) {
	const margin, top, bottom = 20, 40, 30
	text(img, at.Add(image.Pt(margin, 12)), p.title, 2, ink)
	base := at.Y + panelH - bottom
	fill(img, image.Rect(at.X+margin, base, at.X+panelW-margin, base+1), ink)
	peak := 0.0
	for _, r := range runs {
		peak = max(peak, p.value(r))
	}
	if peak == 0 || len(runs) == 0 {
		return
	}
	slot := (panelW - 2*margin) / len(runs)
	for i, r := range runs {
		v := p.value(r)
		h := int(v / peak * float64(panelH-top-bottom-12))
		x := at.X + margin + i*slot
		fill(img, image.Rect(x+slot/8, base-h, x+slot-slot/8, base), implColor[r.Impl])
		label := num(v)
		text(img, image.Pt(x+(slot-textWidth(label, 1))/2, base-h-8), label, 1, ink)
		round := fmt.Sprint(r.Round)
		text(img, image.Pt(x+(slot-textWidth(round, 1))/2, base+6), round, 1, ink)
	}
}

func drawLegend(img *image.RGBA, at image.Point, runs []runResult) {
	y := at.Y + 40
	for _, impl := range impls {
		fill(img, image.Rect(at.X+20, y, at.X+40, y+14), implColor[impl])
		text(img, image.Pt(at.X+50, y+2), strings.ToUpper(impl), 2, ink)
		y += 30
	}
	fill(img, image.Rect(at.X+20, y, at.X+panelW-20, y+1), rule)
	text(img, image.Pt(at.X+20, y+12), "BARS: EVERY RUN IN ORDER;", 1, ink)
	text(img, image.Pt(at.X+20, y+22), "NUMBER BELOW: ROUND.", 1, ink)
	text(img, image.Pt(at.X+20, y+32), fmt.Sprintf("%d RUNS.", len(runs)), 1, ink)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// glyphs is a 3×5 pixel font: five rows of three bits, high bit left.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'C': {3, 4, 4, 4, 3}, 'D': {6, 5, 5, 5, 6},
	'E': {7, 4, 6, 4, 7}, 'F': {7, 4, 6, 4, 4}, 'G': {3, 4, 5, 5, 3}, 'H': {5, 5, 7, 5, 5},
	'I': {7, 2, 2, 2, 7}, 'J': {1, 1, 1, 5, 2}, 'K': {5, 5, 6, 5, 5}, 'L': {4, 4, 4, 4, 7},
	'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {2, 5, 5, 5, 2}, 'P': {6, 5, 6, 4, 4},
	'Q': {2, 5, 5, 6, 3}, 'R': {6, 5, 6, 5, 5}, 'S': {3, 4, 2, 1, 6}, 'T': {7, 2, 2, 2, 2},
	'U': {5, 5, 5, 5, 7}, 'V': {5, 5, 5, 5, 2}, 'W': {5, 5, 7, 7, 5}, 'X': {5, 5, 2, 5, 5},
	'Y': {5, 5, 2, 2, 2}, 'Z': {7, 1, 2, 4, 7},
	'.': {0, 0, 0, 0, 2}, ',': {0, 0, 0, 2, 4}, ';': {0, 2, 0, 2, 4}, ':': {0, 2, 0, 2, 0},
	'-': {0, 0, 7, 0, 0}, '/': {1, 1, 2, 4, 4}, '(': {2, 4, 4, 4, 2}, ')': {2, 1, 1, 1, 2},
	'%': {5, 1, 2, 4, 5}, '×': {0, 5, 2, 5, 0},
}

func textWidth(s string, scale int) int { return len([]rune(s)) * 4 * scale }

// text draws s with its top left corner at p, each font pixel scale×scale.
func text(img *image.RGBA, p image.Point, s string, scale int, c color.RGBA) {
	for i, r := range []rune(strings.ToUpper(s)) {
		g := glyphs[r]
		for row := range 5 {
			for col := range 3 {
				if g[row]&(4>>col) != 0 {
					x, y := p.X+(i*4+col)*scale, p.Y+row*scale
					fill(img, image.Rect(x, y, x+scale, y+scale), c)
				}
			}
		}
	}
}
