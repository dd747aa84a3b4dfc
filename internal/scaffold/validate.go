package scaffold

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"golang.org/x/mod/module"
	"k8s.io/apimachinery/pkg/util/validation"
)

// InputError is a command-line input that opkit refuses, before anything
// is written: Input names the flag, Value is what was given, Allowed says
// what would be accepted.
type InputError struct {
	Input   string
	Value   string
	Allowed string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s %q is not allowed: %s", e.Input, e.Value, e.Allowed)
}

var (
	// ErrNotProject is wrapped by the error of create api in a directory
	// that holds no PROJECT file: one that opkit init did not make.
	ErrNotProject = errors.New("not an opkit project")
	// ErrAPIExists is wrapped by the error of create api for a
	// group/version/kind the PROJECT file already lists.
	ErrAPIExists = errors.New("the API exists")
	// ErrWebhookExists is wrapped by the error of create webhook for a hook
	// (defaulting, validation, conversion) the PROJECT file already lists
	// for the kind.
	ErrWebhookExists = errors.New("the webhook exists")
	// ErrDirNotEmpty is wrapped by the error of init in a directory that
	// holds anything but .git.
	ErrDirNotEmpty = errors.New("the directory is not empty")
	// ErrUpgradeFirst is wrapped by the error of create api or create
	// webhook in a project another opkit's templates made: opkit upgrade
	// moves it to this one's first.
	ErrUpgradeFirst = errors.New("the project needs opkit upgrade")
	// ErrConflict is wrapped by the error of an opkit upgrade that could
	// not merge the user's edits of a file with opkit's changes to it.
	ErrConflict = errors.New("opkit upgrade left conflicts")
)

var (
	kindRE    = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
)

// validateKind: a Go type name that is also a Kubernetes kind.
func validateKind(kind string) error {
	if !kindRE.MatchString(kind) || len(kind) > 63 {
		return &InputError{Input: "--kind", Value: kind, Allowed: "a kind is UpperCamelCase: a capital letter, then letters and digits (at most 63), such as CronJob"}
	}
	return nil
}

func validateVersion(v string) error {
	if !versionRE.MatchString(v) {
		return &InputError{Input: "--version", Value: v, Allowed: "a Kubernetes API version is v<N>, v<N>alpha<M> or v<N>beta<M> with N, M ≥ 1, such as v1, v1alpha1, v2beta3"}
	}
	return nil
}

// validateSubdomain checks a DNS-1123 subdomain (lower case letters,
// digits, '-' and '.').
func validateSubdomain(input, value, example string) error {
	if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
		return &InputError{Input: input, Value: value, Allowed: fmt.Sprintf("it must be a DNS subdomain such as %s (%s)", example, strings.Join(msgs, "; "))}
	}
	return nil
}

// validateName: the project's name prefixes Kubernetes object names and
// names a namespace, so it is a DNS-1123 label.
func validateName(name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return &InputError{Input: "--name", Value: name, Allowed: "the project name prefixes object names, so it must be a DNS label such as acme-operator (" + strings.Join(msgs, "; ") + ")"}
	}
	return nil
}

func validateModule(path string) error {
	if err := module.CheckPath(path); err != nil {
		return &InputError{Input: "--module", Value: path, Allowed: "a Go module path such as example.com/acme-operator or github.com/you/acme-operator (" + err.Error() + ")"}
	}
	return nil
}

// checkEmpty refuses a directory holding anything but .git, so that init
// never mixes its files with someone's work. A directory that does not
// exist is fine: init makes it.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read directory %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != ".git" {
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("init in %s: %w: it holds %s; run opkit init in an empty directory (or one with only .git)", dir, ErrDirNotEmpty, strings.Join(names, ", "))
	}
	return nil
}
