package docs_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The README's headline figures are docs/performance.md's: each is quoted
// from the table its bullet links to, with that table's run date, and the
// peer the README names is the one the tables ran against. Figures in two
// places drifted apart: the README kept a heap ratio and a queue range
// after the tables were measured again.

const perfFile = "docs/performance.md"

// perfTable is a Markdown table of docs/performance.md.
type perfTable struct {
	heading string     // the heading of the section it is in
	title   string     // the paragraph just above it
	header  []string   // its first row's cells
	rows    [][]string // the cells of the rows below the separator
}

// name is how messages name the table: its title's start.
func (tb perfTable) name() string {
	title := strings.Join(strings.Fields(strings.Trim(tb.title, "*")), " ")
	if len(title) > 70 {
		title = title[:70] + "…"
	}
	return fmt.Sprintf("%s, the table %q", tb.heading, title)
}

// tablesIn returns the tables of docs/performance.md's section under
// heading (a whole heading line).
func tablesIn(t *testing.T, heading string) []perfTable {
	t.Helper()
	var out []perfTable
	var para []string // the last paragraph seen
	fresh := true     // the next text line starts a paragraph
	var cur *perfTable
	for _, l := range strings.Split(section(t, perfFile, heading), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "|"):
			cells := strings.Split(strings.Trim(l, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			switch {
			case cur == nil:
				cur = &perfTable{heading: heading, title: strings.Join(para, "\n"), header: cells}
			case strings.Trim(strings.Join(cells, ""), "-: ") == "": // the separator
			default:
				cur.rows = append(cur.rows, cells)
			}
		case l == "":
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			fresh = true
		default:
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			if fresh {
				para, fresh = nil, false
			}
			para = append(para, l)
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// perfSource is where docs/performance.md states a figure.
type perfSource struct {
	heading string // the section
	table   string // text of the table's title or header row that picks it among the section's tables
	kind    string // "cell", "min" or "max" of a column, "count" of its rows, "date" or "rounds" of the run, "title" (a number in the title)
	row     string // the row's first cell, for a cell
	column  string // the column's header, for a cell, min, max and count
	except  []string
	pattern *regexp.Regexp // for a title: the number, captured
}

func cell(heading, table, row, column string) perfSource {
	return perfSource{heading: heading, table: table, kind: "cell", row: row, column: column}
}

// minOf, maxOf and countOf take the column's rows but the excepted ones.
func minOf(heading, table, column string, except ...string) perfSource {
	return perfSource{heading: heading, table: table, kind: "min", column: column, except: except}
}

func maxOf(heading, table, column string, except ...string) perfSource {
	return perfSource{heading: heading, table: table, kind: "max", column: column, except: except}
}

func countOf(heading, table, column string, except ...string) perfSource {
	return perfSource{heading: heading, table: table, kind: "count", column: column, except: except}
}

func dateOf(heading, table string) perfSource {
	return perfSource{heading: heading, table: table, kind: "date"}
}

func inTitle(heading, table, pattern string) perfSource {
	return perfSource{heading: heading, table: table, kind: "title", pattern: regexp.MustCompile(pattern)}
}

var (
	runDate   = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	roundsOf  = regexp.MustCompile(`(?i)\b(\w+) round\(s\)|medians of (\w+) (?:rounds|runs)`)
	numberish = regexp.MustCompile(`^-?[\d,]*\.?\d+`)
	numbers   = map[string]string{"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
)

// pick returns the one table of the source's section that it names.
func (s perfSource) pick(t *testing.T) perfTable {
	t.Helper()
	var found []perfTable
	for _, tb := range tablesIn(t, s.heading) {
		if strings.Contains(tb.title, s.table) || strings.Contains(strings.Join(tb.header, "|"), s.table) {
			found = append(found, tb)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s's section %q has %d tables whose title or header says %q, want 1: fix headlineFigures", perfFile, s.heading, len(found), s.table)
	}
	return found[0]
}

// value returns what docs/performance.md says the figure is, and where.
func (s perfSource) value(t *testing.T) (value, where string) {
	t.Helper()
	tb := s.pick(t)
	col := -1
	for i, h := range tb.header {
		if h == s.column {
			col = i
		}
	}
	if col < 0 && s.column != "" {
		t.Fatalf("%s has no column %q: fix headlineFigures", tb.name(), s.column)
	}
	first := func(c string) string { // "0.12x (≤0.4x pass)" is 0.12x
		if f := strings.Fields(c); len(f) > 0 {
			return f[0]
		}
		return ""
	}
	switch s.kind {
	case "cell":
		for _, r := range tb.rows {
			if r[0] == s.row && col < len(r) {
				return first(r[col]), fmt.Sprintf("%s, row %q, column %q", tb.name(), s.row, s.column)
			}
		}
		t.Fatalf("%s has no row %q: fix headlineFigures", tb.name(), s.row)
	case "min", "max", "count":
		var best string
		var bestRow string
		n := 0
		for _, r := range tb.rows {
			if col >= len(r) || slices.Contains(s.except, r[0]) {
				continue
			}
			n++
			v, ok := parseFigure(first(r[col]))
			if !ok {
				continue
			}
			b, _ := parseFigure(best)
			if best == "" || s.kind == "min" && v < b || s.kind == "max" && v > b {
				best, bestRow = first(r[col]), r[0]
			}
		}
		if s.kind == "count" {
			return strconv.Itoa(n), fmt.Sprintf("%s: %d rows but %q", tb.name(), n, s.except)
		}
		where := fmt.Sprintf("%s, the %s of column %q (row %q)", tb.name(), map[string]string{"min": "least", "max": "most"}[s.kind], s.column, bestRow)
		if len(s.except) > 0 {
			where += fmt.Sprintf(" but rows %q", s.except)
		}
		return best, where
	case "date":
		dates := runDate.FindAllString(tb.title, -1)
		if len(dates) == 0 {
			t.Fatalf("%s says no run date in the paragraph above it: say when it ran", tb.name())
		}
		return dates[len(dates)-1], tb.name() + "'s run date"
	case "rounds":
		m := roundsOf.FindStringSubmatch(tb.title)
		if m == nil {
			t.Fatalf("%s says in the paragraph above it neither \"N round(s)\" nor \"medians of N runs\": say how many", tb.name())
		}
		n := strings.ToLower(m[1] + m[2])
		if d, ok := numbers[n]; ok {
			n = d
		}
		return n, tb.name() + "'s number of rounds"
	case "title":
		m := s.pattern.FindStringSubmatch(tb.title)
		if m == nil {
			t.Fatalf("%s's title does not match %s: fix headlineFigures", tb.name(), s.pattern)
		}
		return m[1], fmt.Sprintf("%s, its title (%s)", tb.name(), s.pattern)
	}
	t.Fatalf("unknown kind %q", s.kind)
	return "", ""
}

// parseFigure reads "0.12x", "15.12×", "4,169" or "45.5" as a number.
func parseFigure(s string) (float64, bool) {
	m := numberish.FindString(strings.ReplaceAll(s, ",", ""))
	if m == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(m, 64)
	return v, err == nil
}

// sameFigure reports whether the README's figure says what performance.md
// says, rounded to the README's precision: 54 for 54.2, 2.2 for 2.18.
func sameFigure(readme, perf string) bool {
	if d, ok := numbers[strings.ToLower(readme)]; ok {
		readme = d
	}
	if runDate.MatchString(readme) || strings.HasPrefix(readme, "v") {
		return readme == perf || strings.HasPrefix(perf, readme+".")
	}
	r, ok1 := parseFigure(readme)
	p, ok2 := parseFigure(perf)
	if !ok1 || !ok2 {
		return readme == perf
	}
	decimals := 0
	if _, frac, ok := strings.Cut(numberish.FindString(strings.ReplaceAll(readme, ",", "")), "."); ok {
		decimals = len(frac)
	}
	scale := math.Pow(10, float64(decimals))
	return math.Round(p*scale) == math.Round(r*scale)
}

// ws makes every space of a pattern match any run of white space, so that
// a phrase may span the README's lines.
func ws(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// headlineFigure is a figure of the README's headline: a pattern in the
// bullet that links to bullet (a docs/performance.md anchor), each of
// whose groups is the figure one source says.
type headlineFigure struct {
	bullet string
	readme *regexp.Regexp
	from   []perfSource
}

const (
	filled     = "### A filled cluster"
	realistic  = "half kubectl client-side apply" // the default shape's table
	noisy      = "### A noisy neighbour"
	noisyTable = "Noisy neighbour:"
	workQueue  = "## The work queue"
	queueTable = "workload (ns/item)"
	vsCR       = "vs controller-runtime"
	parked     = "add to get, one parked worker"
	readd      = "re-adding 1,000 queued keys, 8 producers"
)

// headlineFigures are the README's headline figures and where
// docs/performance.md states each. Every number in a bullet must be
// one of them.
var headlineFigures = []headlineFigure{
	{"a-filled-cluster", ws(`\*\*([\d.]+)× the heap\*\*`), []perfSource{cell(filled, realistic, "heap after sync (MiB)", "opkit/ctrlruntime")}},
	{"a-filled-cluster", ws(`\(([\d.]+) against ([\d.]+) MiB`), []perfSource{cell(filled, realistic, "heap after sync (MiB)", "opkit"), cell(filled, realistic, "heap after sync (MiB)", "ctrlruntime")}},
	{"a-filled-cluster", ws(`peak RSS ([\d.]+)×`), []perfSource{cell(filled, realistic, "peak RSS (MiB)", "opkit/ctrlruntime")}},
	{"a-filled-cluster", ws(`([\d,]+) ConfigMaps and ([\d,]+) Secrets`), []perfSource{inTitle(filled, realistic, `(\d+) ConfigMaps`), inTitle(filled, realistic, `(\d+) Secrets`)}},
	{"a-filled-cluster", ws(`on (\d{4}-\d\d-\d\d)`), []perfSource{dateOf(filled, realistic)}},

	{"a-noisy-neighbour", ws(`\*\*([\d.]+)× the p99 latency\*\*`), []perfSource{cell(noisy, noisyTable, "quiet change, flood, p99 (s)", "opkit/ctrlruntime")}},
	{"a-noisy-neighbour", ws(`\(([\d.]+) s against ([\d.]+) s\)`), []perfSource{cell(noisy, noisyTable, "quiet change, flood, p99 (s)", "opkit"), cell(noisy, noisyTable, "quiet change, flood, p99 (s)", "ctrlruntime")}},
	{"a-noisy-neighbour", ws(`on (\d{4}-\d\d-\d\d)`), []perfSource{dateOf(noisy, noisyTable)}},

	{"the-work-queue", ws(`\*\*([\d.]+)–([\d.]+)× the throughput\*\*`), []perfSource{minOf(workQueue, queueTable, vsCR), maxOf(workQueue, queueTable, vsCR)}},
	{"the-work-queue", ws(`([\d.]+)× handing a key to one parked worker`), []perfSource{cell(workQueue, queueTable, parked, vsCR)}},
	{"the-work-queue", ws(`([\d.]+)× re-adding queued keys`), []perfSource{cell(workQueue, queueTable, readd, vsCR)}},
	{"the-work-queue", ws(`([\d.]+)–([\d.]+)× in the other (\w+) workloads`), []perfSource{minOf(workQueue, queueTable, vsCR, parked, readd), maxOf(workQueue, queueTable, vsCR, parked, readd), countOf(workQueue, queueTable, vsCR, parked, readd)}},
	{"the-work-queue", ws(`on (\d{4}-\d\d-\d\d)`), []perfSource{dateOf(workQueue, queueTable)}},
}

// headline returns the README's text above its first "## " heading, the
// intro above its first bullet, and each bullet with its offset in the
// README and the performance.md anchor it links to.
type readmeBullet struct {
	text, anchor string
	offset       int
}

var (
	bulletItem = regexp.MustCompile(`(?m)^- .*\n(?:  .*\n)*`)
	perfLink   = regexp.MustCompile(`\(docs/performance\.md#([\w-]+)\)`)
	figureNum  = regexp.MustCompile(`\d{4}-\d\d-\d\d|\d(?:[\d,.]*\d)?`)
)

func readmeHeadline(t *testing.T) (readme, intro string, bullets []readmeBullet) {
	t.Helper()
	readme = read(t, "README.md")
	head, _, _ := strings.Cut(readme, "\n## ")
	locs := bulletItem.FindAllStringIndex(head, -1)
	if len(locs) == 0 {
		t.Fatal("README.md's headline has no bullets: the check below reads nothing")
	}
	intro = head[:locs[0][0]]
	for _, l := range locs {
		b := readmeBullet{text: head[l[0]:l[1]], offset: l[0]}
		if m := perfLink.FindStringSubmatch(b.text); m != nil {
			b.anchor = m[1]
		}
		bullets = append(bullets, b)
	}
	return readme, intro, bullets
}

// lineOf is the 1-based line of offset in text.
func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

// Every figure of the README's headline is the one docs/performance.md
// states in the table its bullet links to, rounded to the README's
// precision, with that table's run date; every number in a bullet is one
// of headlineFigures.
func TestREADMEFiguresArePerformanceMds(t *testing.T) {
	readme, _, bullets := readmeHeadline(t)
	for _, b := range bullets {
		if b.anchor == "" {
			t.Errorf("README.md:%d: a headline bullet links to no section of %s: link the table its figures come from", lineOf(readme, b.offset), perfFile)
			continue
		}
		var covered [][]int
		for _, f := range headlineFigures {
			if f.bullet != b.anchor {
				continue
			}
			m := f.readme.FindStringSubmatchIndex(b.text)
			if m == nil {
				t.Errorf("README.md:%d: the bullet linking #%s does not say \"%s\" any more: say it, or remove the entry from headlineFigures", lineOf(readme, b.offset), b.anchor, strings.ReplaceAll(f.readme.String(), `\s+`, " "))
				continue
			}
			covered = append(covered, m[:2])
			for i, src := range f.from {
				if !anchors(src.heading)[b.anchor] {
					t.Errorf("headlineFigures takes %s from %q, but its bullet links to #%s: link the section the figure comes from", f.readme, src.heading, b.anchor)
				}
				said := b.text[m[2+2*i]:m[3+2*i]]
				want, where := src.value(t)
				if !sameFigure(said, want) {
					t.Errorf("README.md:%d says %s in %q, but %s says %s (%s): quote the table the bullet links to", lineOf(readme, b.offset+m[2+2*i]), said, strings.Join(strings.Fields(b.text[m[0]:m[1]]), " "), perfFile, want, where)
				}
			}
		}
		for _, n := range figureNum.FindAllStringIndex(b.text, -1) {
			inside := false
			for _, c := range covered {
				inside = inside || c[0] <= n[0] && n[1] <= c[1]
			}
			if !inside {
				t.Errorf("README.md:%d says %s in the bullet linking #%s, and no entry of headlineFigures says where %s states it: add one", lineOf(readme, b.offset+n[0]), b.text[n[0]:n[1]], b.anchor, perfFile)
			}
		}
	}
}

var (
	peerVersion = regexp.MustCompile(`\b(controller-runtime|client-go) (v\d+\.\d+(?:\.\d+)?)\b`)
	mediansOf   = ws(`medians of (\w+) rounds`)
)

// The README's headline names the peer and the number of rounds the
// tables it quotes ran with, and docs/performance.md's peers are the
// ones hack/bench/go.mod builds.
func TestREADMEPeerAndRoundsArePerformanceMds(t *testing.T) {
	readme, intro, bullets := readmeHeadline(t)
	perfIntro, _, _ := strings.Cut(read(t, perfFile), "\n## ")
	stated := map[string]string{}
	for _, m := range peerVersion.FindAllStringSubmatch(perfIntro, -1) {
		stated[m[1]] = m[2]
	}
	mod, err := modfile.Parse("hack/bench/go.mod", []byte(read(t, "hack/bench/go.mod")), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range []struct{ name, path string }{{"controller-runtime", "sigs.k8s.io/controller-runtime"}, {"client-go", "k8s.io/client-go"}} {
		var built string
		for _, r := range mod.Require {
			if r.Mod.Path == peer.path {
				built = r.Mod.Version
			}
		}
		if stated[peer.name] != built {
			t.Errorf("%s's introduction says its tables ran against %s %q, but hack/bench/go.mod requires %s: measure again (make bench) and say the version the tables ran against", perfFile, peer.name, stated[peer.name], built)
		}
	}
	peers := peerVersion.FindAllStringSubmatchIndex(intro, -1)
	if len(peers) == 0 {
		t.Error("README.md's headline names no peer version (\"controller-runtime vX.Y\") above its bullets")
	}
	for _, m := range peers {
		name, said := intro[m[2]:m[3]], intro[m[4]:m[5]]
		if !sameFigure(said, stated[name]) {
			t.Errorf("README.md:%d says %s %s, but %s says its tables ran against %s %s", lineOf(readme, m[4]), name, said, perfFile, name, stated[name])
		}
	}
	for _, n := range figureNum.FindAllStringIndex(intro, -1) {
		inPeer := false
		for _, m := range peers {
			inPeer = inPeer || m[0] <= n[0] && n[1] <= m[1]
		}
		if !inPeer {
			t.Errorf("README.md:%d says %s above the headline's bullets, which no test reads: state figures in a bullet, with an entry in headlineFigures", lineOf(readme, n[0]), intro[n[0]:n[1]])
		}
	}
	rounds := mediansOf.FindStringSubmatchIndex(intro)
	if rounds == nil {
		t.Fatal("README.md's headline does not say \"medians of N rounds\" above its bullets")
	}
	said := intro[rounds[2]:rounds[3]]
	for _, b := range bullets {
		for _, f := range headlineFigures {
			if f.bullet != b.anchor {
				continue
			}
			src := f.from[0]
			src.kind = "rounds"
			if want, where := src.value(t); !sameFigure(said, want) {
				t.Errorf("README.md:%d says medians of %s rounds, but %s says %s: say each table's number of rounds", lineOf(readme, rounds[2]), said, where, want)
			}
			break // one table per bullet
		}
	}
}
