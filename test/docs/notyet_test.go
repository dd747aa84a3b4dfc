package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notYet finds a claim that something is missing for now: "not yet",
// "not scaffolded", "planned", "until a release is tagged". Such claims
// go stale silently when the thing lands: write-your-own-operator.md said
// other modules' kinds were "not scaffolded yet" while the tutorial
// scaffolded cert-manager's.
var notYet = regexp.MustCompile(`(?i)\bnot (?:\w+ )?yet\b|\bno [\w.]+(?: [\w.]+)? (?:is )?(?:\w+ )?yet\b|\bdoes not exist yet\b|\bplanned\b|\buntil (?:a|the first) release\b|\bnot released\b|\bnot scaffolded\b|\bnot supported\b`)

// notYetClaim is a "not yet" of the README or docs/: a phrase of the file
// (its white space as one space) that holds the match, why it is still
// true, and a check that says what makes it false once it is (nil where
// the phrase is no claim about opkit, as the reason says).
type notYetClaim struct {
	file, phrase, reason string
	check                func(t *testing.T) string
}

// noRelease holds while the repository has no release tag.
func noRelease(t *testing.T) string {
	out, err := exec.Command("git", "-C", root, "tag", "--list", "v*").Output()
	if err != nil {
		t.Fatalf("git tag --list: %v", err)
	}
	if tags := strings.Fields(string(out)); len(tags) > 0 {
		return fmt.Sprintf("the repository has release tags %q", tags)
	}
	return ""
}

// missingPath holds while rel does not exist.
func missingPath(rel string) func(*testing.T) string {
	return func(*testing.T) string {
		if exists(rel) {
			return rel + " exists"
		}
		return ""
	}
}

// noFlag holds while opkit's subcommand has no such flag.
func noFlag(sub, name string) func(*testing.T) string {
	return func(t *testing.T) string {
		if slices.Contains(opkitFlags(t)[sub], name) {
			return fmt.Sprintf("opkit %s has the flag --%s", sub, name)
		}
		return ""
	}
}

// noControlPlane holds while hack/tools/envtest pins no version of the
// Kubernetes minor.
func noControlPlane(minor string) func(*testing.T) string {
	return func(t *testing.T) string {
		entries, err := os.ReadDir(filepath.Join(root, "hack/tools/envtest"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), minor+".") {
				return "hack/tools/envtest pins " + e.Name()
			}
		}
		return ""
	}
}

// onlyHTTPTraces holds while pkg/tracing refuses any OTLP protocol but
// http/protobuf.
func onlyHTTPTraces(t *testing.T) string {
	if !strings.Contains(read(t, "pkg/tracing/env.go"), `p != "http/protobuf"`) {
		return `pkg/tracing/env.go no longer refuses every OTLP protocol but "http/protobuf"`
	}
	return ""
}

const tagged = "no release tag exists (git tag --list 'v*')"

// notYetClaims are every "not yet" of the README and docs/, each with the
// reason it is still true.
var notYetClaims = []notYetClaim{
	{"README.md", "opkit is not released", tagged, noRelease},
	{"README.md", "Until a release is tagged", tagged, noRelease},
	{"README.md", "a released opkit, which does not exist yet", tagged, noRelease},
	{"docs/tutorial.md", "Until a release is tagged", tagged, noRelease},
	{"docs/versioning.md", "No release is tagged yet", tagged, noRelease},
	{"docs/versioning.md", "pin tools or hold benchmarks and are not released", "a policy, not a gap: hack/'s modules are never tagged", nil},
	{"docs/write-your-own-operator.md", "an opkit that is not released", tagged, noRelease},
	{"docs/write-your-own-operator.md", "A controller of another module's kind is not scaffolded", "opkit create api has no --external-api-path", noFlag("create api", "external-api-path")},
	{"docs/write-your-own-operator.md", "an API that does not exist yet", "describes an input check of create api, not a gap", nil},
	{"docs/compatibility.md", "No 1.38 control plane yet", "hack/tools/envtest pins no 1.38", noControlPlane("1.38")},
	{"docs/kubebuilder-comparison.md", "(a controller of another module's type) | not scaffolded", "opkit create api has no --external-api-path", noFlag("create api", "external-api-path")},
	{"docs/kubebuilder-comparison.md", "| none | not yet written", "the scaffold has no config/network-policy", missingPath("internal/scaffold/templates/init/config/network-policy")},
	{"docs/kubebuilder-comparison.md", "Kubebuilder's side was not scaffolded with a v4.16 binary", "describes how the comparison was made, not opkit", nil},
	{"docs/porting-from-controller-runtime.md", "## Not in opkit yet", "TestNotInOpkitYetNamesWhatIsMissing checks each item of the list", nil},
	{"docs/porting-from-controller-runtime.md", "What is still missing is planned in the open issues", "points to the issue tracker and names nothing", nil},
	{"docs/tracing.md", "gRPC is not supported", "pkg/tracing refuses any OTLP protocol but http/protobuf", onlyHTTPTraces},
	{"docs/metrics.md", "seconds of work in progress not yet done", "describes what a metric measures", nil},
	{"docs/performance.md", "the cache has not seen yet", "describes read-your-writes", nil},
	{"docs/webhooks.md", "the API server does not trust yet", "describes a certificate's first sync", nil},
}

// Every "not yet" of the README and docs/ is in notYetClaims, and each
// claim's check still holds, so a "not yet" that became false fails here.
func TestNotYetClaimsStillHold(t *testing.T) {
	files := []string{"README.md"}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mds {
		files = append(files, strings.TrimPrefix(m, root+"/"))
	}
	for _, c := range notYetClaims {
		if !slices.Contains(files, c.file) {
			t.Errorf("notYetClaims names %s, which is not a file the test reads: remove the entry", c.file)
		}
	}
	for _, file := range files {
		text := strings.Join(strings.Fields(read(t, file)), " ")
		var spans [][]int // where the file's listed claims are
		for _, c := range notYetClaims {
			if c.file != file {
				continue
			}
			at := strings.Index(text, c.phrase)
			if at < 0 {
				t.Errorf("notYetClaims lists %q for %s, which no longer says it: remove the entry", c.phrase, file)
				continue
			}
			for ; at >= 0; at = indexFrom(text, c.phrase, at+1) {
				spans = append(spans, []int{at, at + len(c.phrase)})
			}
			if c.check == nil {
				continue
			}
			if why := c.check(t); why != "" {
				t.Errorf("%s says %q (because %s), but %s: the claim is false now; update it, then its entry in notYetClaims", file, c.phrase, c.reason, why)
			}
		}
		for _, m := range notYet.FindAllStringIndex(text, -1) {
			covered := false
			for _, s := range spans {
				covered = covered || s[0] <= m[0] && m[1] <= s[1]
			}
			if !covered {
				from, to := max(0, m[0]-50), min(len(text), m[1]+30)
				t.Errorf("%s says %q in \"…%s…\", which notYetClaims does not list: add an entry with the reason it is still true and a check that fails once it is not, or drop the claim", file, text[m[0]:m[1]], text[from:to])
			}
		}
	}
}

// indexFrom is the index of substr in s at or after from, or -1.
func indexFrom(s, substr string, from int) int {
	if from > len(s) {
		return -1
	}
	if i := strings.Index(s[from:], substr); i >= 0 {
		return from + i
	}
	return -1
}
