package scaffold

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// portedSuite is a test file rewritten onto opkit's manager, kept only if
// its package's tests compile.
type portedSuite struct {
	rel      string
	original []byte
	mapped   []portItem
}

// portSuites rewrites each test file of the project that makes
// controller-runtime's manager (an envtest suite's BeforeSuite) to make
// opkit's and set up the ported controllers and webhooks on it, so that
// the project's own tests run its code on opkit. A file it cannot map is
// left as it is, on controller-runtime's manager, and reported.
func portSuites(src, module string, gofiles []*kbFile, setups portedSetups, out files, rep *portReport) ([]portedSuite, error) {
	tests, err := loadTestFiles(src)
	if err != nil {
		return nil, err
	}
	var ported []portedSuite
	for _, f := range tests {
		rewritten, mapped, why, line, ok := portSuite(f, module, gofiles, setups)
		switch {
		case !ok:
		case why != "":
			rep.needs(f.Rel, line, "test suite", "it stays on controller-runtime's manager, so it tests the project's code there and not on opkit: "+why)
		default:
			out[f.Rel] = rewritten
			ported = append(ported, portedSuite{rel: f.Rel, original: f.Src, mapped: mapped})
		}
	}
	return ported, nil
}

// checkSuites compiles each ported suite's package's tests in dir; a suite whose package does not compile is put back as it was, on
// controller-runtime's manager, and reported with the compiler's words.
func checkSuites(ctx context.Context, dir string, suites []portedSuite, rep *portReport) error {
	for _, s := range suites {
		pkg := "./" + path.Dir(s.rel)
		if err := runIn(ctx, dir, "go", "test", "-c", "-o", os.DevNull, pkg); err != nil {
			if werr := os.WriteFile(filepath.Join(dir, filepath.FromSlash(s.rel)), s.original, 0o644); werr != nil {
				return werr
			}
			rep.needs(s.rel, 0, "test suite", "ported onto opkit's manager, but its package's tests did not compile so, and it is left on controller-runtime's manager: "+firstLines(err.Error(), 6))
			continue
		}
		rep.Mapped = append(rep.Mapped, s.mapped...)
	}
	return nil
}

// firstLines is s up to its n-th line, joined by "; ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "; ")
}
