package docs_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpTarget is a target of the scaffold's opkit.mk that 'make help'
// lists: one with a "## " description.
var helpTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):[^\n]*## `)

// scaffoldTargets returns the targets a scaffolded project's 'make help'
// lists, from the template of its opkit.mk.
func scaffoldTargets(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range helpTarget.FindAllStringSubmatch(read(t, "internal/scaffold/templates/init/opkit.mk.tmpl"), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatal("opkit.mk.tmpl has no target with a '## ' description: the pattern or the template changed")
	}
	return out
}

// The tutorial's table of what 'make help' lists names every target of the
// scaffold's opkit.mk, and only those; the kubebuilder comparison's target
// table names each of them in its opkit column.
func TestDocsListTheScaffoldsTargets(t *testing.T) {
	targets := scaffoldTargets(t)
	const tutorial = "docs/tutorial.md"
	text := section(t, tutorial, "## 1. Install opkit and scaffold the project")
	_, table, ok := strings.Cut(text, "| group | targets |")
	if !ok {
		t.Fatalf("%s's section 1 has no table \"| group | targets |\"", tutorial)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var listed []string
	for _, m := range codeSpan.FindAllStringSubmatch(table, -1) {
		listed = append(listed, m[1])
	}
	for _, target := range targets {
		if !slices.Contains(listed, target) {
			t.Errorf("the scaffold's make help lists %s, which %s's table of targets does not: add it there, in its help group, and to docs/kubebuilder-comparison.md's \"Makefile targets\" (a \"not yet\" row there may become its row)", target, tutorial)
		}
	}
	for _, target := range listed {
		if !slices.Contains(targets, target) {
			t.Errorf("%s's table of targets lists %s, which the scaffold's opkit.mk does not have: remove it, or fix the name", tutorial, target)
		}
	}

	const comparison = "docs/kubebuilder-comparison.md"
	var opkitColumn []string
	for _, row := range strings.Split(section(t, comparison, "## Makefile targets"), "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
			opkitColumn = append(opkitColumn, strings.Fields(m[1])[0])
		}
	}
	for _, target := range targets {
		if !slices.Contains(opkitColumn, target) {
			t.Errorf("the scaffold's make help lists %s, which %s's \"Makefile targets\" table does not name in its opkit column", target, comparison)
		}
	}
}

// toolsIntoBin is a claim that hack/tools' tools are built into bin/:
// "hack/tools ... built ... into `bin/`", within a sentence (a full stop
// inside a name, as in go.mod, does not end it).
var toolsIntoBin = regexp.MustCompile("hack/tools(?:[^.]|\\.\\w)*?\\bbuil(?:d|ds|t)\\b(?:[^.]|\\.\\w)*?into `bin/`")

// The pages about a generated project say where its pinned tools go as
// the scaffold's 'make tools' does: the tutorial said hack/tools built
// them into bin/ after they had moved to 'go tool' and Go's build cache.
func TestDocsSayWhereTheScaffoldsToolsGo(t *testing.T) {
	var help string
	for _, l := range strings.Split(read(t, "internal/scaffold/templates/init/opkit.mk.tmpl"), "\n") {
		if strings.HasPrefix(l, "tools:") {
			_, help, _ = strings.Cut(l, "## ")
		}
	}
	if help == "" {
		t.Fatal("opkit.mk.tmpl has no tools target with a '## ' help: the check below reads nothing")
	}
	if strings.Contains(help, "bin/") {
		return
	}
	for _, page := range scaffoldPages {
		text := strings.Join(strings.Fields(fence.ReplaceAllString(read(t, page), "")), " ")
		for _, s := range toolsIntoBin.FindAllString(text, -1) {
			t.Errorf("%s says the pinned tools are built into bin/ (%q), but the scaffold's make tools says: %s", page, s, help)
		}
	}
}
