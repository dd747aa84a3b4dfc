package scaffold

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// UpgradeOptions are what opkit upgrade is given.
type UpgradeOptions struct {
	// DryRun lists what would change and writes nothing. Defaults to false.
	DryRun bool
	// Out receives what changed, file by file, and what to do next.
	// Defaults to none.
	Out io.Writer
}

// NewSuffix names the file beside one of the user's that holds opkit's new
// version of it, when opkit upgrade cannot merge the two.
const NewSuffix = ".opkit-new"

// outcome is what opkit upgrade does with one file.
type outcome string

const (
	updated    outcome = "updated"  // opkit's change; the file was as opkit made it, or opkit owns it
	added      outcome = "added"    // new in this opkit's templates
	merged     outcome = "merged"   // your edits and opkit's change, merged
	conflicted outcome = "CONFLICT" // merged with conflict markers where both changed the same lines
	beside     outcome = "REVIEW"   // untouched; opkit's version is in <file>.opkit-new
)

// fileStep is what opkit upgrade does with one file: its new content
// (for beside, that of <file>.opkit-new), and why.
type fileStep struct {
	path    string
	outcome outcome
	data    []byte
	why     string
}

// Upgrade moves the project in dir to this opkit's templates. It renders
// the project PROJECT records with them (generate), and for each file
// opkit marks:
//
//   - as opkit made it (the record in .opkit/base), or owned by opkit and
//     not recorded: rewritten;
//   - edited by the user, template unchanged: left alone;
//   - edited by the user, template changed: three-way merged (git
//     merge-file) into the file, with conflict markers where both changed
//     the same lines; without git, or without a record of what opkit made
//     (a project older than the record), left alone, with opkit's version
//     beside it as <file>.opkit-new;
//   - removed by the user: left out; new in these templates: added.
//
// Files opkit does not mark (go.mod, controller-gen's, the user's own) are
// never read; a copy of opkit that go.mod points at (opkit init
// --opkit-vendor) is left as it is, and the report says how to drop it. It
// records the new base, writes all or nothing, and returns
// an error wrapping ErrConflict if any file needs the user's hand. It runs
// neither go mod tidy nor make manifests.
func Upgrade(ctx context.Context, dir string, opts UpgradeOptions) error {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	p, err := LoadProject(dir)
	if err != nil {
		return err
	}
	deriveUnrecorded(dir, p)
	replace := opkitReplace(dir)
	theirs, err := generate(templates, p, replace)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	base, from, err := readBase(dir)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	if from == "" {
		from = "unrecorded"
	}
	m := merger{from: from, to: templateVersion()}
	steps, err := m.plan(ctx, dir, base, theirs)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	report(opts.Out, steps, m, opts.DryRun)
	upgradeVendoredNote(opts.Out, replace)
	if opts.DryRun {
		return nil
	}
	if err := apply(dir, steps, theirs); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	return conflictError(steps)
}

// deriveUnrecorded fills in what PROJECT did not record before opkit
// upgrade needed it: a validator's requester check, read from its file.
func deriveUnrecorded(dir string, p *Project) {
	for i, a := range p.APIs {
		if a.Webhooks == nil || !a.Webhooks.Validation || a.Webhooks.RequesterCheck {
			continue
		}
		file := filepath.Join(dir, webhookDir, a.Version, strings.ToLower(a.Kind)+"_webhook.go")
		if b, err := os.ReadFile(file); err == nil && bytes.Contains(b, []byte("Requester: checker")) {
			p.APIs[i].Webhooks.RequesterCheck = true
		}
	}
}

// merger merges the user's files with opkit's, from the templates of opkit
// version from to those of version to.
type merger struct {
	from, to string
}

// plan decides, for every file theirs holds, what to do with it.
func (m merger) plan(ctx context.Context, dir string, base, theirs files) ([]fileStep, error) {
	var steps []fileStep
	for _, path := range slices.Sorted(mapKeys(theirs)) {
		s, err := m.step(ctx, dir, path, base, theirs[path])
		if err != nil {
			return nil, err
		}
		if s.outcome != "" {
			steps = append(steps, s)
		}
	}
	return steps, nil
}

// step decides what to do with one file; a zero outcome leaves it alone.
func (m merger) step(ctx context.Context, dir, path string, base files, theirs []byte) (fileStep, error) {
	s := fileStep{path: path, data: theirs}
	ours, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("read %s: %w", path, err)
	}
	old, recorded := base[path]
	switch {
	case !exists && recorded: // removed by the user
	case !exists:
		s.outcome = added
	case bytes.Equal(ours, theirs):
	case recorded && bytes.Equal(old, theirs): // the user's edit; opkit's unchanged
	case recorded && bytes.Equal(old, ours):
		s.outcome = updated
	case recorded:
		return m.merge(ctx, s, ours, old)
	case owned(path, theirs):
		s.outcome, s.why = updated, "opkit's; no record of what opkit made"
	default:
		s.outcome, s.why = beside, "no record of what opkit made, so your edits cannot be told from opkit's changes"
	}
	return s, nil
}

// merge merges the user's edits of s's file (ours, from old) with
// opkit's (s.data, from old).
func (m merger) merge(ctx context.Context, s fileStep, ours, old []byte) (fileStep, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		s.outcome, s.why = beside, "no git on PATH to merge with"
		return s, nil
	}
	tmp, err := os.MkdirTemp("", "opkit-merge-")
	if err != nil {
		return s, fmt.Errorf("merge %s: %w", s.path, err)
	}
	defer os.RemoveAll(tmp)
	names := []string{"yours", "base", "opkit"}
	for i, b := range [][]byte{ours, old, s.data} {
		if err := os.WriteFile(filepath.Join(tmp, names[i]), b, 0o600); err != nil {
			return s, fmt.Errorf("merge %s: %w", s.path, err)
		}
	}
	cmd := exec.CommandContext(ctx, git, "merge-file", "-p", "--diff3",
		"-L", "yours", "-L", "opkit "+m.from, "-L", "opkit "+m.to, names[0], names[1], names[2])
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		s.outcome, s.data = merged, out
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		s.outcome, s.data = conflicted, out // the exit code counts the conflicts
	default:
		return s, fmt.Errorf("merge %s: git merge-file: %w: %s", s.path, err, stderr.Bytes())
	}
	return s, nil
}

// apply writes the steps' files and the new base, and removes the base's
// files that the new templates no longer make; all or nothing.
func apply(dir string, steps []fileStep, theirs files) error {
	out := files{}
	for _, s := range steps {
		if s.outcome == beside {
			out[s.path+NewSuffix] = s.data
		} else {
			out[s.path] = s.data
		}
	}
	old, _, err := readBase(dir)
	if err != nil {
		return err
	}
	addBase(out, theirs)
	return transact(dir, func() error {
		for path := range old {
			if _, ok := theirs[path]; !ok {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(baseDir+"/"+path))); err != nil {
					return fmt.Errorf("remove %s's record: %w", path, err)
				}
			}
		}
		return out.write(dir)
	})
}

// report lists the steps, then what to do next.
func report(w io.Writer, steps []fileStep, m merger, dryRun bool) {
	would, doing := "", "Upgrading"
	if dryRun {
		would, doing = "would ", "Dry run of upgrading"
	}
	fmt.Fprintf(w, "%s the project from the templates of opkit %s to those of opkit %s:\n", doing, m.from, m.to)
	if len(steps) == 0 {
		fmt.Fprintln(w, "Nothing to change: the project's files are this opkit's.")
		return
	}
	for _, s := range steps {
		line := fmt.Sprintf("  %-9s %s", s.outcome, s.path)
		if s.outcome == beside {
			line += " (opkit's version " + would + "go to " + s.path + NewSuffix + ")"
		}
		if s.why != "" {
			line += ": " + s.why
		}
		fmt.Fprintln(w, line)
	}
	if dryRun {
		fmt.Fprintln(w, "Nothing was written (--dry-run).")
		return
	}
	if conflictError(steps) != nil {
		fmt.Fprintf(w, "To finish: in each CONFLICT file, opkit put both versions where you and opkit changed the same lines: yours between <<<<<<< yours and |||||||, what opkit %s made between ||||||| and =======, opkit %s's between ======= and >>>>>>>. Keep what you want and remove the markers. For each REVIEW file, merge what you want of <file>%s into the file and remove <file>%s. Nothing of yours was lost: the rest of each file is yours or merged.\n", m.from, m.to, NewSuffix, NewSuffix)
	}
	fmt.Fprintln(w, "Then run make manifests and make test, and review the change (git diff) before you commit it.")
}

// conflictError is an error wrapping ErrConflict that names the files that
// need the user's hand, or nil.
func conflictError(steps []fileStep) error {
	var names []string
	for _, s := range steps {
		switch s.outcome {
		case conflicted:
			names = append(names, s.path)
		case beside:
			names = append(names, s.path+" (see "+s.path+NewSuffix+")")
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("upgrade: %w in %d files: %s: resolve them as the list above says, then run make manifests and make test", ErrConflict, len(names), strings.Join(names, ", "))
}
