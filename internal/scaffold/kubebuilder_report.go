package scaffold

import (
	"bytes"
	"fmt"
	"sort"
)

// portItem is one thing of a kubebuilder project that opkit init
// --from-kubebuilder mapped, or could not map and reports.
type portItem struct {
	File string // relative to the project, slash-separated
	Line int    // 0: the whole file
	What string // the item: a PROJECT field, a flag, a builder call
	How  string // what it became, or what to do about it
}

// portReport is every item the converter met, mapped or not: nothing of
// the project is dropped without a line here.
type portReport struct {
	Mapped, Needs []portItem
	// Next are the steps the port offers once it runs: per controller,
	// reads without copies.
	Next []portItem
}

func (r *portReport) mapped(file string, line int, what, how string) {
	r.Mapped = append(r.Mapped, portItem{file, line, what, how})
}

func (r *portReport) needs(file string, line int, what, how string) {
	r.Needs = append(r.Needs, portItem{file, line, what, how})
}

// reportFile is where the converted project's report goes.
const reportFile = "OPKIT_PORT.md"

func (it portItem) where() string {
	if it.Line == 0 {
		return it.File
	}
	return fmt.Sprintf("%s:%d", it.File, it.Line)
}

func sortItems(items []portItem) []portItem {
	out := append([]portItem(nil), items...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// markdown is the report as OPKIT_PORT.md holds it: what needs a hand
// first, then what was mapped, each with its file and line.
func (r *portReport) markdown(source string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Ported from kubebuilder by opkit init --from-kubebuilder\n\n")
	fmt.Fprintf(&b, "Source: `%s`. Every item of its PROJECT, of `cmd/main.go`, of each\n", source)
	b.WriteString("controller's and webhook's setup, and of the Makefile's envtest steps is\n")
	b.WriteString("listed below, mapped or not. The controllers' and webhooks' code is kept\n")
	b.WriteString("as it was and runs on opkit's manager and cached client (see\n")
	b.WriteString("docs/porting-from-controller-runtime.md in opkit).\n\n")
	fmt.Fprintf(&b, "## Needs you (%d)\n\n", len(r.Needs))
	if len(r.Needs) == 0 {
		b.WriteString("Nothing.\n")
	}
	for _, it := range sortItems(r.Needs) {
		fmt.Fprintf(&b, "- `%s`: %s: %s\n", it.where(), it.What, it.How)
	}
	if len(r.Next) > 0 {
		b.WriteString("\n## Next, when you choose: the zero-copy step\n\n")
		b.WriteString("Each controller reads through `mgr.CachedClient()`, which copies every object\n")
		b.WriteString("it returns, as controller-runtime's client does. Per controller, you may move\n")
		b.WriteString("its reads to typed Listers (`manager.For(&r.things)`, `Lister.Get`), which\n")
		b.WriteString("hand out the cached object without a copy; run its tests with\n")
		b.WriteString("`OPKIT_CACHE_MUTATION_DETECTOR=true`, which fails any that modifies one (the\n")
		b.WriteString("porting guide's \"Reads: Listers, or the cached client\").\n\n")
	}
	for _, it := range sortItems(r.Next) {
		fmt.Fprintf(&b, "- `%s`: %s: %s\n", it.where(), it.What, it.How)
	}
	fmt.Fprintf(&b, "\n## Mapped (%d)\n\n", len(r.Mapped))
	for _, it := range sortItems(r.Mapped) {
		fmt.Fprintf(&b, "- `%s`: %s: %s\n", it.where(), it.What, it.How)
	}
	return b.Bytes()
}
