package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/internal/scaffold"
)

func TestInitFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no module", args: []string{"init"}, want: "--module is required"},
		{name: "argument", args: []string{"init", "--module", "example.com/a", "extra"}, want: `unexpected arguments ["extra"]`},
		{name: "bad module", args: []string{"init", "--module", "example.com/a b"}, want: `--module "example.com/a b" is not allowed`},
		{name: "bad domain", args: []string{"init", "--module", "example.com/a", "--domain", "EXAMPLE"}, want: `--domain "EXAMPLE" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var out strings.Builder
			err := run(t.Context(), tt.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error saying %q", tt.args, err, tt.want)
			}
			if entries, _ := os.ReadDir("."); len(entries) > 0 {
				t.Errorf("a refused init wrote %d files", len(entries))
			}
		})
	}
}

func TestInitHelp(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"init", "-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-module", "-domain", "-name", "-opkit-vendor", "-opkit-replace", "-fleet", "-from-kubebuilder"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("init -h does not list %s:\n%s", flag, out.String())
		}
	}
}

func TestCreateAPIOutsideAProject(t *testing.T) {
	t.Chdir(t.TempDir())
	var out strings.Builder
	err := run(t.Context(), []string{"create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate"}, &out, &out)
	if !errors.Is(err, scaffold.ErrNotProject) {
		t.Errorf("create api outside a project = %v, want an error wrapping ErrNotProject", err)
	}
}

func TestCreateAPIHelp(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"create", "api", "-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-group", "-version", "-kind", "-namespaced", "-resource", "-controller", "-tenant-scoped"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("create api -h does not list %s:\n%s", flag, out.String())
		}
	}
}

func TestCreateWebhookOutsideAProject(t *testing.T) {
	t.Chdir(t.TempDir())
	var out strings.Builder
	err := run(t.Context(), []string{"create", "webhook", "--group", "ship", "--version", "v1", "--kind", "Frigate", "--defaulting"}, &out, &out)
	if !errors.Is(err, scaffold.ErrNotProject) {
		t.Errorf("create webhook outside a project = %v, want an error wrapping ErrNotProject", err)
	}
}

func TestCreateWebhookHelp(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"create", "webhook", "-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-group", "-version", "-kind", "-defaulting", "-validation", "-requester-check", "-conversion"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("create webhook -h does not list %s:\n%s", flag, out.String())
		}
	}
}

func TestUpgradeOutsideAProject(t *testing.T) {
	t.Chdir(t.TempDir())
	var out strings.Builder
	err := run(t.Context(), []string{"upgrade", "--dry-run"}, &out, &out)
	if !errors.Is(err, scaffold.ErrNotProject) {
		t.Errorf("upgrade outside a project = %v, want an error wrapping ErrNotProject", err)
	}
}

func TestUpgradeHelp(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"upgrade", "-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-dry-run", ".opkit-new", ".opkit/base"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("upgrade -h does not mention %s:\n%s", want, out.String())
		}
	}
}
