package main

import (
	"errors"
	"strings"
	"testing"
)

func TestHelpListsEveryCommand(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if !strings.Contains(out.String(), c.name) {
			t.Errorf("help does not list %q:\n%s", c.name, out.String())
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"frobnicate"}, &out, &out)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `"frobnicate"`) {
		t.Errorf("run(frobnicate) = %v, want an unknown-command error naming it", err)
	}
}

func TestVersion(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"version"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != Version() {
		t.Errorf("version printed %q, want %q", out.String(), Version())
	}
	if err := run(t.Context(), []string{"version", "extra"}, &out, &out); err == nil {
		t.Error("version with an argument: no error")
	}
}
